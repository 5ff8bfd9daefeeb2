"""Name the weights of a student's module by their role, so fixed test weights can be loaded into it.

Roles follow the pinned API (q_proj, feedforward, norm1, ...), not parameter registration
order, so any valid layout loads: a Dropout inside `feedforward`, an nn.Sequential or
nn.ModuleList encoder, submodules created in any order.
"""
import torch.nn as nn

ATTENTION_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


class MissingPart(Exception):
    """A submodule the API pins is missing or has the wrong type; the message says which.

    Its `diagnosis` is the slug of the named mistake the message states (a Diagnosis, or `diagnosis=`), or None: the
    check that turns it into a failure passes it on to task.fail.
    """

    def __init__(self, message, diagnosis=None):
        super().__init__(message)
        self.diagnosis = diagnosis or getattr(message, "slug", None)


def _child(module, name, kind, path):
    part = getattr(module, name, None)
    if not isinstance(part, kind):
        found = "nothing" if part is None else type(part).__name__
        raise MissingPart(f"`{path}{name}` should be an nn.{kind.__name__}, found {found}")
    return part


def _linear(layer, prefix):
    slots = {f"{prefix}.weight": layer.weight}
    if layer.bias is not None:
        slots[f"{prefix}.bias"] = layer.bias
    return slots


def attention_slots(attention, path="", projections=ATTENTION_PROJECTIONS):
    """Role name -> parameter for an attention module with the pinned projection names."""
    slots = {}
    for name in projections:
        slots.update(_linear(_child(attention, name, nn.Linear, path), f"{path}{name}"))
    return slots


def feedforward_linears(feedforward, path):
    """The first and last nn.Linear inside the feed-forward network, whatever else it holds."""
    linears = [m for m in feedforward.modules() if isinstance(m, nn.Linear)]
    if len(linears) != 2:
        raise MissingPart(f"`{path}feedforward` should hold exactly two nn.Linear layers, found {len(linears)}")
    return linears


def block_slots(block, path="", projections=ATTENTION_PROJECTIONS):
    """Role name -> parameter for an encoder block (attention, feedforward, norm1, norm2)."""
    slots = attention_slots(_child(block, "attention", nn.Module, path), f"{path}attention.", projections)
    first, last = feedforward_linears(_child(block, "feedforward", nn.Module, path), path)
    slots.update(_linear(first, f"{path}feedforward.in"))
    slots.update(_linear(last, f"{path}feedforward.out"))
    for name in ("norm1", "norm2"):
        norm = _child(block, name, nn.LayerNorm, path)
        slots.update({f"{path}{name}.{key}": value for key, value in (("weight", norm.weight), ("bias", norm.bias))
                      if value is not None})  # elementwise_affine=False leaves none: load() names the gap
    return slots


def encoder_blocks(model, name="encoder"):
    """The blocks of a model's stack `name` (its `encoder` by default), an nn.Sequential or nn.ModuleList."""
    encoder = _child(model, name, nn.Module, "")
    # iterate rather than .children(), which would hide a block listed twice
    return list(encoder) if isinstance(encoder, (nn.Sequential, nn.ModuleList)) else list(encoder.children())
