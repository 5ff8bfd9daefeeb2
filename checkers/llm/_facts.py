"""What the grader's cases (course/llm/cases/) read of a student's module besides its outputs: the roles of LoRALinear's
A and B, the base layer it adapts (built in the probe), and facts as plain data, compared with the reference's."""
import torch
import torch.nn as nn

from .._core import load_fixture
from .._weights import MissingPart, _child, attention_slots, encoder_blocks
from ._roles import rms_norm_slots, swiglu_slots
from .training import cpu_seconds, speed_rule


def bpe_speed(train_bpe):
    """Whether train_bpe passes Task 1's speed rule (training.py: speed_rule, the check's own) on the check's timed
    text: a ratio of two CPU times in this process, so the machine's speed and load cancel; its merges are compared by
    the case that calls it on that text."""
    speed = load_fixture(__package__, 1)["speed"]
    fast, _, _ = speed_rule(lambda probe: cpu_seconds(train_bpe, probe["text"], probe["vocab_size"])[1], speed)
    return {"fast_enough": bool(fast)}


def merge_pairs(train_bpe):
    """Whether train_bpe returns each merge as a tuple (the tokenizer keys a dict by them), on the check's text of ten
    merges: the values of the merges are compared by the cases that call it (which record a tuple as a list)."""
    probe = load_fixture(__package__, 1)["probes"]["ten merges"]
    merges = train_bpe(probe["text"], probe["vocab_size"])
    return {"tuples": all(type(pair) is tuple for pair in merges)}  # none: the values case says what is wrong


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
    """How a new LoRALinear starts: its base kept as `base` and frozen, which of A and B are zero, what trains (the
    numbers only)."""
    base, (a, b) = getattr(layer, "base", None), lora_slots(layer).values()
    trainable = [p for p in layer.parameters() if p.requires_grad]
    return {"base_kept": isinstance(base, nn.Linear),
            "base_frozen": isinstance(base, nn.Module) and not any(p.requires_grad for p in base.parameters()),
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
    merged = layer.merge()  # as the notebook calls it, outside torch.no_grad()
    with torch.no_grad():
        same = isinstance(merged, nn.Linear) and torch.allclose(merged(x), adapted, rtol=1e-9, atol=1e-9)
    return {"linear": isinstance(merged, nn.Linear) and merged is not base,
            "base_kept": torch.equal(base.weight.detach(), before), "same_outputs": bool(same)}


def parameter_count(module):
    """How many parameter tensors the module has and how many numbers they hold (RMSNorm: one, of embed_dim)."""
    parameters = list(module.parameters())
    return {"tensors": len(parameters), "numel": sum(p.numel() for p in parameters)}



def scores_seen(recorder):
    """What checkers.llm.tiled's recorder saw during a tiled_attention call, as plain data: a call of a fused
    attention function, and a tensor (of any dtype) as large as the whole L × L score matrix."""
    return {"sdpa": bool(recorder.sdpa), "full": recorder.full is not None}


def scores_problem(seen):
    """The grader's judge of scores_seen's report: None, or what the task's text rules out that the call did."""
    if not isinstance(seen, dict) or set(seen) != {"sdpa", "full"}:
        return "what tiled_attention computed was not recorded"
    if seen["sdpa"] is not False:
        return "tiled_attention calls scaled_dot_product_attention: write the blockwise algorithm yourself"
    if seen["full"] is not False:
        return ("tiled_attention computed a tensor as large as the full L × L score matrix, which tiling exists to "
                "avoid: compute the scores, and any mask, one key block at a time")
    return None


def llama_slots(model):
    """Role name -> parameter of the given Llama: token_embedding.weight, per block blocks.<i>.attention_norm.weight,
    blocks.<i>.attention.{q,k,v,o}_proj.weight, blocks.<i>.feedforward_norm.weight, blocks.<i>.feedforward.{gate,up,
    down}_proj.weight, and final_norm.weight; the head has no role of its own: it must be tied (MissingPart else)."""
    embedding = _child(model, "token_embedding", nn.Embedding, "")
    head = getattr(model, "lm_head", None)
    if not isinstance(head, nn.Linear) or head.bias is not None or head.weight is not embedding.weight:
        raise MissingPart("`lm_head` should be the given bias-free nn.Linear tied to `token_embedding.weight`")
    slots = {"token_embedding.weight": embedding.weight}
    for index, block in enumerate(encoder_blocks(model, "blocks")):
        prefix = f"blocks.{index}."
        for name, roles in (("attention_norm", rms_norm_slots), ("attention", attention_slots),
                            ("feedforward_norm", rms_norm_slots), ("feedforward", swiglu_slots)):
            slots.update({f"{prefix}{name}.{role}": value
                          for role, value in roles(_child(block, name, nn.Module, prefix)).items()})
    slots["final_norm.weight"] = rms_norm_slots(_child(model, "final_norm", nn.Module, ""))["weight"]
    return slots


def rotary_pairs(attention):
    """The width of the rotary table `cos` (max_len, head_dim // 2) of the given RoPE in an attention module, under
    whatever name the module keeps it, or None."""
    for part in attention.modules():
        cos = getattr(part, "cos", None)
        if isinstance(cos, torch.Tensor) and cos.dim() == 2:
            return int(cos.shape[-1])
    return None


MERGES_LIMIT = 100_000  # far more merges than any vocabulary the grader evaluates (4 x the notebook's 768)


def notebook_merges(namespace):
    """The notebook's `merges` (what its tokenizer was built from) as plain data: a list of [int, int], a pair that is
    not two ints as None; anything else than a list or tuple as None (the grader validates them)."""
    merges = namespace.get("merges")
    if type(merges) not in (list, tuple):
        return None
    pair = lambda item: [item[0], item[1]] if type(item) in (list, tuple) and len(item) == 2 and \
        all(type(i) is int for i in item) else None
    return [pair(item) for item in merges[:MERGES_LIMIT + 1]]
