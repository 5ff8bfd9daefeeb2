"""What the grader's cases (course/llm/cases/) read of a student's module besides its outputs: the roles of LoRALinear's
A and B, the base layer it adapts (built in the probe), and facts as plain data, compared with the reference's."""
import torch
import torch.nn as nn

from .._weights import MissingPart


def linear(weight, bias=None):
    """An nn.Linear holding weight (out, in) and bias (out,) or none: the layer a LoRALinear case adapts."""
    layer = nn.Linear(weight.size(1), weight.size(0), bias=bias is not None, dtype=weight.dtype)
    with torch.no_grad():
        layer.weight.copy_(weight)
        if bias is not None:
            layer.bias.copy_(bias)
    return layer


def _matrix(layer, name):
    """layer.A or layer.B: a tensor, or an nn.Linear's weight (PEFT's layout), as the check accepts."""
    value = getattr(layer, name, None)
    value = value.weight if isinstance(value, nn.Linear) else value
    if not isinstance(value, torch.Tensor):
        raise MissingPart(f"LoRALinear should have a parameter `{name}`")
    return value


def lora_slots(layer):
    """{"A": (rank, in), "B": (out, rank)} of a LoRALinear (its base is loaded where the case builds it)."""
    return {"A": _matrix(layer, "A"), "B": _matrix(layer, "B")}


def lora_start(layer):
    """How a new LoRALinear starts: its base frozen, which of A and B are zero, what trains (the numbers only)."""
    base, (a, b) = getattr(layer, "base", None), lora_slots(layer).values()
    trainable = [p for p in layer.parameters() if p.requires_grad]
    return {"base_frozen": isinstance(base, nn.Module) and not any(p.requires_grad for p in base.parameters()),
            "a_zero": not bool(a.detach().any()), "b_zero": not bool(b.detach().any()),
            "a_shape": str(tuple(a.shape)), "b_shape": str(tuple(b.shape)),
            "trainable": sorted(p.numel() for p in trainable)}


def _probe_input(features, dtype):
    """A fixed input of 3 rows, never all zeros: (3, features)."""
    return torch.linspace(-1.5, 2.0, 3 * features, dtype=dtype).reshape(3, features).sin()


def lora_merge(layer):
    """What merge() gives: a new nn.Linear, the base's weight untouched, the same outputs as the adapted layer."""
    base = layer.base
    before = base.weight.detach().clone()
    x = _probe_input(base.in_features, base.weight.dtype)
    with torch.no_grad():
        adapted = layer(x)
        merged = layer.merge()
        same = isinstance(merged, nn.Linear) and torch.allclose(merged(x), adapted, rtol=1e-9, atol=1e-9)
    return {"linear": isinstance(merged, nn.Linear) and merged is not base,
            "base_kept": torch.equal(base.weight.detach(), before), "same_outputs": bool(same)}


def parameter_count(module):
    """How many parameter tensors the module has and how many numbers they hold (RMSNorm: one, of embed_dim)."""
    parameters = list(module.parameters())
    return {"tensors": len(parameters), "numel": sum(p.numel() for p in parameters)}



def scores_seen(recorder):
    """What checkers.llm.tiled's recorder saw during a tiled_attention call, as plain data: a call of a fused
    attention function, and a float tensor as large as the whole L × L score matrix."""
    return {"sdpa": bool(recorder.sdpa), "full": recorder.full is not None}


def scores_problem(seen):
    """The grader's judge of scores_seen's report: None, or what the task's text rules out that the call did."""
    if not isinstance(seen, dict) or set(seen) != {"sdpa", "full"}:
        return "what tiled_attention computed was not recorded"
    if seen["sdpa"] is not False:
        return "tiled_attention calls scaled_dot_product_attention: write the blockwise algorithm yourself"
    if seen["full"] is not False:
        return ("tiled_attention computed a tensor as large as the full L × L score matrix, which tiling exists to "
                "avoid: compute the scores of one key block at a time")
    return None
