"""Name the weights of a student's seq2seq modules by their role, so fixed test weights can be loaded into them.

Roles follow the pinned API of the seq2seq assignment (self_attention, cross_attention, norm1..norm3, encoder.<i>,
decoder.<i>, ...), not parameter registration order. The norms are the student's own LayerNorm class (Task 1), so
they are recognised by their `weight` and `bias` Parameters, not by type. A submodule used for two roles (one
LayerNorm for all three norms, one attention for self and cross) cannot hold two sets of weights: MissingPart says so.
"""
import torch
import torch.nn as nn

from .._core import Diagnosis
from .._weights import MissingPart, _child, _linear, attention_slots, feedforward_linears

__all__ = ["MissingPart", "layer_norm_slots", "attention_slots", "encoder_block_slots", "decoder_block_slots",
           "seq2seq_slots", "load_roles"]

NOT_PARAMETER = Diagnosis(
    "weight-and-bias-plain-tensors",
    "`{path}{name}` should be an nn.Parameter (so it is learned and saved), found {found}")
SAME_MODULE = Diagnosis(
    "one-module-in-two-roles",
    "`{again}` is the same module as `{first}`: each needs its own layer, with its own weights")


def layer_norm_slots(norm, path=""):
    """Role name -> parameter for a LayerNorm: its `weight` and `bias`, each an nn.Parameter."""
    if not isinstance(norm, nn.Module):
        found = "nothing" if norm is None else type(norm).__name__
        where = f"`{path.rstrip('.')}`" if path else "the layer norm"
        raise MissingPart(f"{where} should be a LayerNorm module, found {found}")
    if all(getattr(norm, name, None) is None for name in ("weight", "bias")):
        raise MissingPart(f"`{path}weight` and `{path}bias` should be nn.Parameters, the learned per-feature scale "
                          "and shift (torch.ones(embed_dim) and torch.zeros(embed_dim) at the start), found neither")
    slots = {}
    for name in ("weight", "bias"):
        value = getattr(norm, name, None)
        if not isinstance(value, nn.Parameter):
            found = "nothing" if value is None else type(value).__name__
            raise MissingPart(NOT_PARAMETER.format(path=path, name=name, found=found))
        slots[f"{path}{name}"] = value
    return slots


def _norms(block, names, path):
    slots = {}
    for name in names:
        slots.update(layer_norm_slots(getattr(block, name, None), f"{path}{name}."))
    return slots


def _feedforward(block, path):
    first, last = feedforward_linears(_child(block, "feedforward", nn.Module, path), path)
    return {**_linear(first, f"{path}feedforward.in"), **_linear(last, f"{path}feedforward.out")}


def _distinct(slots):
    """Fail when two roles share one tensor: a module reused where the API wants separate ones."""
    seen = {}
    for role, value in slots.items():
        if id(value) in seen:
            again, first = role.split("."), seen[id(value)].split(".")
            while len(again) > 1 and len(first) > 1 and again[-1] == first[-1]:  # the module, not the tensor
                again, first = again[:-1], first[:-1]
            raise MissingPart(SAME_MODULE.format(again=".".join(again), first=".".join(first)))
        seen[id(value)] = role
    return slots


def encoder_block_slots(block, path=""):
    """Role name -> parameter for the provided EncoderBlock (attention, feedforward, norm1, norm2)."""
    slots = attention_slots(_child(block, "attention", nn.Module, path), f"{path}attention.")
    slots.update(_feedforward(block, path))
    slots.update(_norms(block, ("norm1", "norm2"), path))
    return _distinct(slots)


def decoder_block_slots(block, path=""):
    """Role name -> parameter for a DecoderBlock (self_attention, cross_attention, feedforward, norm1..norm3)."""
    slots = {}
    for name in ("self_attention", "cross_attention"):
        slots.update(attention_slots(_child(block, name, nn.Module, path), f"{path}{name}."))
    slots.update(_feedforward(block, path))
    slots.update(_norms(block, ("norm1", "norm2", "norm3"), path))
    return _distinct(slots)


def _blocks(model, name):
    stack = _child(model, name, nn.Module, "")
    # iterate rather than .children(), which would hide a block listed twice (caught by _distinct)
    return list(stack) if isinstance(stack, (nn.Sequential, nn.ModuleList)) else list(stack.children())


def seq2seq_slots(model):
    """Role name -> parameter for a Seq2SeqTransformer (embedding, encoder.<i>, decoder.<i>, output)."""
    slots = {"embedding.weight": _child(model, "embedding", nn.Embedding, "").weight}
    for index, block in enumerate(_blocks(model, "encoder")):
        slots.update(encoder_block_slots(block, f"encoder.{index}."))
    for index, block in enumerate(_blocks(model, "decoder")):
        slots.update(decoder_block_slots(block, f"decoder.{index}."))
    slots.update(_linear(_child(model, "output", nn.Linear, ""), "output"))
    return _distinct(slots)


def load_roles(module, slots_of, weights):
    """Copy {role: tensor} into module's parameters by role; MissingPart names a missing role or a wrong shape.

    Inside a check use checkers._modules.load(task, ...), which turns MissingPart into the task's failure.
    """
    slots = slots_of(module)
    for role, value in weights.items():
        if role not in slots:
            raise MissingPart(f"expected a parameter for `{role}` but found none")
        if tuple(slots[role].squeeze().shape) != tuple(value.squeeze().shape):
            raise MissingPart(f"`{role}` has shape {tuple(slots[role].shape)}, expected {tuple(value.shape)}")
    with torch.no_grad():
        for role, value in weights.items():
            slots[role].copy_(value.reshape(slots[role].shape))
    return module
