"""Task 2: causal self-attention with RoPE on each head's queries and keys (no cache)."""
import math

import torch
import torch.nn as nn

from .._compare import diagnose, expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import Diagnosis, check_function, expect_module_class, load_fixture
from .._dependencies import explain_parts, part_class
from .._modules import build, expect_gradients_everywhere, expect_native_output, expect_unchanged, load
from .._probes import _expect_heads_split, normalised_axis, temperature
from .._weights import attention_slots
from ._probes_generic import unused_parameters

ATOL, RTOL = 1e-6, 1e-6
NAME = "CausalSelfAttention"
# Sentences the known mistakes' diagnoses quote (course/gpt/mistakes.py).
VALUES_ROTATED = Diagnosis(
    "values-rotated",
    "RoPE is applied to the values too: rotate only the queries and the keys, whose dot products "
    "should depend on the distance; the values carry what is read and stay as v_proj made them.")
ONLY_QUERIES = Diagnosis(
    "only-queries",
    "RoPE is applied to the queries only: rotate the keys too, by their own positions, so that each "
    "score depends on the distance m - n.")
ONLY_KEYS = Diagnosis(
    "only-keys",
    "RoPE is applied to the keys only: rotate the queries too, by their own positions, so that each score "
    "depends on the distance m - n.")
BEFORE_SPLIT = Diagnosis(
    "before-split",
    "RoPE is applied over the whole embedding before the heads are split (a RotaryEmbedding of embed_dim "
    "features): build RotaryEmbedding(head_dim, max_len) and rotate each head's queries and keys, "
    "(B, H, L, head_dim), after the split.")
NOT_SCALED = Diagnosis(
    "not-scaled",
    "the scores are not scaled: divide query @ key.transpose(-2, -1) by √head_dim.")
HALF_HEAD_DIM = Diagnosis(
    "half-head-dim",
    "the scores are divided by {name} = {size} instead of √head_dim: "
    "`head_dim**1/2` is (head_dim**1) / 2, since ** binds before / (and `scores / head_dim**1/2` "
    "divides by head_dim, then by 2): divide by math.sqrt(head_dim) or head_dim ** 0.5.")
NOT_OVER_KEYS = Diagnosis(
    "softmax-over-the-queries",
    "the attention weights do not sum to 1 over the keys (the last axis): take the softmax "
    "over dim=-1, after the mask.")
ROPE_FALSE_IGNORED = Diagnosis(
    "rope-false-ignored",
    "{what}.rotary is {found}: with rope=False it should be None.")
NOT_CAUSAL = Diagnosis(
    "not-causal",
    "the attention is not causal: a query attends keys after it; fill the scores where key j > query i "
    "with -inf before the softmax (allowed = torch.ones(L, L, dtype=torch.bool).tril()).")
MASK_AFTER_SOFTMAX = Diagnosis(
    "mask-after-softmax",
    "the weights of every query but the last (which sees every key) sum to less than 1 over the "
    "keys: the future is removed after the softmax; fill the scores where key j > query i with -inf "
    "before it, so that each row's softmax runs over the allowed keys only.")
DIAGONAL_HIDDEN = Diagnosis(
    "diagonal-hidden",
    "the mask hides the diagonal too: query i must see key i, itself (query 0 sees nothing else); keep "
    "the diagonal, allowed = torch.ones(L, L, dtype=torch.bool).tril() (diagonal=0).")
SPLIT_LAYOUT = Diagnosis(
    "split-layout",
    "the heads are split without the transpose: view(B, H, L, head_dim) of (B, L, D) mixes positions "
    "with heads, so a head's row i is no longer position i; split with view(B, L, H, head_dim)"
    ".transpose(1, 2).")
MERGE_LAYOUT = Diagnosis(
    "merge-layout",
    "the heads are merged without the transpose: reshaping the heads' outputs (B, H, L, head_dim) "
    "straight to (B, L, D) mixes heads with positions; transpose(1, 2) first, then reshape(B, L, D).")
ROPE_NO_EFFECT = Diagnosis(
    "rope-no-effect",
    "the rotation changes no score: the attention equals that of rope=False, as when RoPE gets "
    "(B, L, H, head_dim) before the transpose and reads the positions off the head axis (a query and a "
    "key of one head then turn by the same angle); rotate (B, H, L, head_dim), after transpose(1, 2).")
ROPE_IGNORED = Diagnosis(
    "rope-ignored",
    "rope=False still rotates: with rope=False set self.rotary = None and skip the rotation, so the layer "
    "knows nothing of positions.")
NEW_ONLY = Diagnosis(
    "new-only",
    "the new cache holds only the new positions: return the cached keys and values concatenated with the "
    "new ones along the position axis (dim=2), all L_past + L positions.")
CACHE_BEFORE_ROPE = Diagnosis(
    "cache-before-rope",
    "the keys returned for the cache are not rotated (a cache built before RoPE): return the keys "
    "after RoPE, so that a cached key is never rotated again and new queries meet it at its position.")


def _split(projection, x, num_heads):
    """The projection of x split into heads as the pinned layout does: (B, H, L, head_dim)."""
    return projection(x).unflatten(-1, (num_heads, -1)).transpose(1, 2)  # (B, L, D) -> (B, H, L, head_dim)


def attend(task, layer, x, num_heads, return_attention=True, **kwargs):
    """layer(x, **kwargs, return_attention=...) -> (out, (keys, values)[, attention]), each checked for its shape.

    kwargs: `cache=` for Task 3; the keys and values must hold every position, the cached ones included.
    """
    before = x.clone()
    past = kwargs["cache"][0].size(2) if kwargs.get("cache") is not None else 0
    where = f"{NAME}.forward" if past == 0 and kwargs.get("cache") is None else \
        f"{NAME}.forward with a cache (its cache branch, in the Task 2 cell)"
    result = task.call(where, layer, x, return_attention=return_attention, **kwargs)
    expect_unchanged(task, before, x)
    parts = "(out, (keys, values), attention)" if return_attention else "(out, (keys, values))"
    if not isinstance(result, (tuple, list)) or len(result) != 2 + return_attention:
        found = f"a {type(result).__name__} of length {len(result)}" if isinstance(result, (tuple, list)) else \
            "None" if result is None else f"a {type(result).__name__}"
        task.fail(f"{NAME}.forward with return_attention={return_attention} should return {parts}, got {found}.")
    expect_tensor(task, f"{NAME}.forward's out", result[0], x.shape, x.dtype)
    _expect_cache_shapes(task, result[1], x, num_heads, past)
    if return_attention:
        expect_tensor(task, f"{NAME}.forward's attention", result[2],
                      (x.size(0), num_heads, x.size(1), past + x.size(1)), x.dtype)
    return result


def _expect_cache_shapes(task, cache, x, num_heads, past):
    """The new cache: (keys, values), each (B, H, L_past + L, head_dim)."""
    if not isinstance(cache, (tuple, list)) or len(cache) != 2:
        task.fail(f"{NAME}.forward should return the new cache (keys, values) as its second item, got "
                  f"{type(cache).__name__}.")
    (batch_size, seq_len, _), head_dim = x.shape, x.size(-1) // num_heads
    for name, value in zip(("key", "value"), cache):
        what = f"the {name} tensor of the new cache"
        if past and isinstance(value, torch.Tensor) and value.dim() == 4 and value.size(2) == seq_len:
            task.fail(f"{what} holds {seq_len} positions, not {past} + {seq_len}: {NEW_ONLY}", NEW_ONLY.slug)
        expect_tensor(task, what, value, (batch_size, num_heads, past + seq_len, head_dim), x.dtype)


def loaded(task, cls, fixture, weights, num_heads, dtype=torch.float64, rope=True):
    """The student's layer with the fixture's weights, built under dtype."""
    layer = build(task, cls, NAME, fixture["embed_dim"], num_heads, fixture["max_len"], rope=rope, dtype=dtype,
                  native=dtype != torch.float64)
    return load(task, layer, attention_slots, weights, NAME)


def _expect_rotary(task, layer, fixture, num_heads):
    """rotary: a RotaryEmbedding(head_dim, max_len), whose tables are (max_len, head_dim // 2)."""
    rotary, max_len, embed_dim = getattr(layer, "rotary", None), fixture["max_len"], fixture["embed_dim"]
    head_dim = embed_dim // num_heads
    if not isinstance(rotary, nn.Module):
        found = "nothing" if rotary is None else type(rotary).__name__
        task.fail(f"{NAME}(embed_dim={embed_dim}, num_heads={num_heads}).rotary should be your "
                  f"RotaryEmbedding(head_dim, max_len), found {found}.")
    shape = tuple(getattr(getattr(rotary, "cos", None), "shape", ()))
    if shape != (max_len, head_dim // 2):
        explain_parts(task, NAME, [("its rotary module", 1, part_class(layer, "rotary"))], __package__)
        if shape[-1:] == (embed_dim // 2,):
            task.fail(f"{NAME}(embed_dim={embed_dim}, num_heads={num_heads}): {BEFORE_SPLIT}", BEFORE_SPLIT.slug)
        task.fail(f"{NAME}(embed_dim={embed_dim}, num_heads={num_heads}).rotary.cos has shape {shape}: build "
                  f"RotaryEmbedding(head_dim, max_len), whose tables are (max_len, head_dim // 2) = "
                  f"{(max_len, head_dim // 2)}.")


def _expect_causal(task, layer, x, num_heads, attention, what):
    """No weight on a later key, and no output that moves when later tokens change."""
    seq_len = x.size(1)
    future = torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1)  # (L, L): key j > query i
    if attention.detach()[..., future].abs().max() > 0:
        if not _sees_later_tokens(task, layer, x, num_heads):
            task.fail(f"{what}: the returned attention weights put weight on later keys, yet the output does not "
                      "change when later tokens change: return the masked weights, the ones multiplied with the "
                      "values, not the softmax of the unmasked scores.")
        task.fail(f"{what}: {NOT_CAUSAL}", NOT_CAUSAL.slug)
    axis = normalised_axis(attention)
    sums = attention.detach().sum(dim=-1)  # (B, H, L)
    if axis is None and (sums[..., -1] - 1).abs().max() < 1e-6 and (sums[..., :-1] < 1 - 1e-6).all():
        task.fail(f"{what}: {MASK_AFTER_SOFTMAX}", MASK_AFTER_SOFTMAX.slug)
    if axis != attention.dim() - 1:
        task.fail(f"{what}: {NOT_OVER_KEYS}", NOT_OVER_KEYS.slug)
    if _sees_later_tokens(task, layer, x, num_heads):
        _explain_layout(task, layer, x, num_heads, what)
        task.fail(f"{what}: changing the tokens from position {seq_len // 2} on changes the outputs at earlier "
                  f"positions: {NOT_CAUSAL}", NOT_CAUSAL.slug)


def _sees_later_tokens(task, layer, x, num_heads):
    """Whether changing the tokens from position L // 2 on changes the outputs at earlier positions."""
    half = x.size(1) // 2
    changed = x.clone()
    changed[:, half:] += 1.0
    out = attend(task, layer, changed, num_heads, return_attention=False)[0].detach()  # (B, L, D)
    mine = attend(task, layer, x, num_heads, return_attention=False)[0].detach()
    return not torch.allclose(out[:, :half], mine[:, :half], atol=1e-9)


def _explain_layout(task, layer, x, num_heads, what):
    """Causal weights but outputs that see later tokens: a head split or merge that mixes positions with heads."""
    (batch_size, seq_len, _), embed_dim = x.shape, x.size(-1)
    straight = lambda t: t.view(batch_size, num_heads, seq_len, -1)  # (B, L, D) -> (B, H, L, hd)
    try:
        with torch.no_grad():
            out, (keys, values), attention = layer(x, return_attention=True)
            rotated = straight(layer.k_proj(x)) if layer.rotary is None else layer.rotary(straight(layer.k_proj(x)))
            merged = layer.o_proj((attention @ values).reshape(batch_size, seq_len, embed_dim))  # (B, L, D)
    except Exception:  # noqa: BLE001 -- only a probe
        return
    if matches(values, straight(layer.v_proj(x)), ATOL, RTOL) or matches(keys, rotated, ATOL, RTOL):
        task.fail(f"{what}: {SPLIT_LAYOUT}", SPLIT_LAYOUT.slug)
    if matches(out, merged, ATOL, RTOL):
        task.fail(f"{what}: {MERGE_LAYOUT}", MERGE_LAYOUT.slug)


def _expect_diagonal(task, attention, what):
    """Query i sees key i: a mask from tril(diagonal=-1) gives query 0 no key (NaN) and the others a zero weight."""
    later = attention.detach()[..., 1:, :]  # (B, H, L - 1, L): queries 1 .. L - 1, which have a key before them
    diagonal = later.diagonal(offset=1, dim1=-2, dim2=-1)  # (B, H, L - 1): query i >= 1 and key i
    if diagonal.numel() and later.isfinite().all() and diagonal.abs().max() == 0:
        task.fail(f"{what}: {DIAGONAL_HIDDEN}", DIAGONAL_HIDDEN.slug)


def _explain_scale(task, attention, expected, head_dim, what):
    """Name the divisor when the weights are the expected ones at another temperature (last rows: no mask)."""
    ratio = temperature(attention[..., -1, :], expected[..., -1, :])
    if ratio is None or abs(ratio - 1) <= 1e-3:
        return
    divisor = math.sqrt(head_dim) / ratio
    if abs(divisor - 1) < 1e-3:
        task.fail(f"{what} is wrong: {NOT_SCALED}", NOT_SCALED.slug)
    for size, name in ((head_dim / 2, "head_dim / 2"), (2 * head_dim, "2·head_dim")):
        if abs(divisor - size) < 1e-3 * head_dim:
            task.fail(f"{what}: {HALF_HEAD_DIM.format(name=name, size=f'{size:g}')}", HALF_HEAD_DIM.slug)
    if abs(divisor * math.sqrt(head_dim) - 1) < 1e-3:
        task.fail(f"{what}: the scores are multiplied by √head_dim = √{head_dim} instead of divided by it: "
                  "scores = query @ key.transpose(-2, -1) / math.sqrt(head_dim).")
    named = " = √embed_dim" if abs(divisor - math.sqrt(head_dim * attention.size(1))) < 1e-3 * divisor else ""
    task.fail(f"{what}: the scores are divided by {divisor:.4g}{named} instead of √head_dim = √{head_dim}.")


class _TwoOutputs:
    """The layer called as the shared probes call an attention layer: (outputs, attention)."""

    def __init__(self, layer):
        self.layer = layer

    def __call__(self, x, return_attention=True):
        out, _, attention = self.layer(x, return_attention=True)
        return out, attention


PROJECTIONS = {"q_proj": "the queries come from self.q_proj(x)", "k_proj": "the keys come from self.k_proj(x)",
               "v_proj": "the values come from self.v_proj(x)",
               "o_proj": "the output is self.o_proj of the merged heads"}


def _explain_unused(task, layer, x, num_heads, what):
    """Fail naming a projection whose weights change nothing in the output: it is never applied."""
    unused = [name for name in unused_parameters(layer, lambda: layer(x)[0]) if name in PROJECTIONS]
    if unused:
        name = unused[0]
        task.fail(f"{what}: changing the weights of {name} changes nothing in the output: {name} is never applied "
                  f"(is its output replaced by another projection's?); {PROJECTIONS[name]}.")


def _expect_values(task, layer, x, case, num_heads):
    what = f"{NAME} with {num_heads} heads"
    out, (keys, values), attention = attend(task, layer, x, num_heads)
    _expect_diagonal(task, attention, what)
    expect_finite(task, f"{what}: attention", attention)
    expect_finite(task, f"{what}: out", out)
    _expect_causal(task, layer, x, num_heads, attention, what)
    if not (matches(out, case["outputs"], ATOL, RTOL) and matches(attention, case["attention"], ATOL, RTOL)):
        explain_parts(task, what, [("its rotary module", 1, part_class(layer, "rotary"))], __package__)
        _explain_unused(task, layer, x, num_heads, what)
        _explain_scale(task, attention, case["attention"], x.size(-1) // num_heads, what)
        if matches(attention, case["rope_false"]["attention"], ATOL, RTOL):
            task.fail(f"{what}: {ROPE_NO_EFFECT}", ROPE_NO_EFFECT.slug)
        diagnose(task, f"{what}: attention", attention, signatures(case, "attention"), ATOL, RTOL)
        diagnose(task, f"{what}: out", out, signatures(case, "outputs"), ATOL, RTOL)  # where RoPE is applied
        _expect_heads_split(task, what, _TwoOutputs(layer), x, attention.detach(), attention_slots(layer),
                            x.size(-1) // num_heads, torch.Generator().manual_seed(0))
    expect_close(task, f"{what}: attention", attention, case["attention"], ATOL, RTOL)
    expect_close(task, f"{what}: out", out, case["outputs"], ATOL, RTOL)
    plain = attend(task, layer, x, num_heads, return_attention=False)[0]
    expect_close(task, f"{what}: out with return_attention=False", plain, case["outputs"], ATOL, RTOL)
    if not matches(keys, case["new_keys"], ATOL, RTOL):
        if matches(keys, _split(layer.k_proj, x, num_heads), ATOL, RTOL):
            task.fail(f"{what}: {CACHE_BEFORE_ROPE}", CACHE_BEFORE_ROPE.slug)
        start = _rotated_from(layer, _split(layer.k_proj, x, num_heads), keys)
        if start:
            task.fail(f"{what}: the keys are rotated as if at positions {start} to {start + x.size(1) - 1}, not from "
                      "L_past = 0 (no cache): the token at index j sits at position L_past + j; rotate with "
                      "offset=L_past.")
        explain_parts(task, what, [("its rotary module", 1, part_class(layer, "rotary"))], __package__)
        diagnose(task, f"{what}: the key tensor of the new cache", keys, signatures(case, "new_keys"), ATOL, RTOL)
    expect_close(task, f"{what}: the key tensor of the new cache (after RoPE)", keys, case["new_keys"], ATOL, RTOL)
    expect_close(task, f"{what}: the value tensor of the new cache (v_proj's, split into heads)", values,
                 case["new_values"], ATOL, RTOL)


def _rotated_from(layer, unrotated, keys, starts=range(1, 4)):
    """The offset in starts from which the layer's own rotary turns unrotated into keys, or None."""
    for start in starts:
        try:
            with torch.no_grad():
                if matches(keys, layer.rotary(unrotated, offset=start), ATOL, RTOL):
                    return start
        except Exception:  # noqa: BLE001 -- only a probe
            return None
    return None


def _expect_rope_false(task, cls, fixture, x, num_heads):
    """rope=False: rotary None, and the outputs of the same weights without any rotation."""
    case = fixture["cases"][num_heads]
    layer = loaded(task, cls, fixture, case["weights"], num_heads, rope=False)
    what = f"{NAME}(..., rope=False)"
    if getattr(layer, "rotary", None) is not None:
        task.fail(ROPE_FALSE_IGNORED.format(what=what, found=type(layer.rotary).__name__))
    out = attend(task, layer, x, num_heads)[0]
    if not matches(out, case["rope_false"]["outputs"], ATOL, RTOL):
        expect_finite(task, what, out)
        if matches(out, case["outputs"], ATOL, RTOL):
            task.fail(f"{what} is wrong: {ROPE_IGNORED}", ROPE_IGNORED.slug)
        shuffled = torch.cat([x[:, :-1].flip(1), x[:, -1:]], dim=1)  # the earlier tokens reversed, the last kept
        last = attend(task, layer, shuffled, num_heads)[0][:, -1]
        if not matches(last, out[:, -1], ATOL, RTOL):
            task.fail(f"{what}: reversing the order of the earlier tokens changes the last position's output: "
                      "without RoPE nothing in the layer may depend on positions except the causal mask.")
    expect_close(task, what, out, case["rope_false"]["outputs"], ATOL, RTOL)


@check_function(2)
def check_task_2(task, CausalSelfAttention):
    """Check CausalSelfAttention(embed_dim, num_heads, max_len, rope) without a cache, with 2 and 4 heads."""
    expect_module_class(task, CausalSelfAttention, NAME)
    fixture = load_fixture(__package__, 2)
    x = fixture["x"]
    for num_heads, case in fixture["cases"].items():
        layer = loaded(task, CausalSelfAttention, fixture, case["weights"], num_heads)
        _expect_rotary(task, layer, fixture, num_heads)
        _expect_values(task, layer, x, case, num_heads)
    _expect_rope_false(task, CausalSelfAttention, fixture, x, 2)
    inputs = x.clone().requires_grad_(True)
    out = attend(task, layer, inputs, num_heads, return_attention=False)[0]
    expect_gradients_everywhere(task, layer, out.pow(2).sum(), inputs, NAME)
    single = loaded(task, CausalSelfAttention, fixture, case["weights"], num_heads, dtype=torch.float32)
    expect_native_output(task, single, NAME, f"{NAME} on float32 input",
                         lambda: attend(task, single, x.float(), num_heads, return_attention=False)[0],
                         case["outputs"])
    task.passed("queries and keys of every head rotated by RoPE after the split (values not), scores scaled by "
                "√head_dim, the causal mask, the returned (keys, values), rope=False, gradients and dtypes are "
                "right.")
