"""Task 5: GroupedQueryAttention with fixed weights in three groupings (2 query heads per key/value head, 4, and 1),
without and with a cache: outputs, the returned cache (num_kv_heads heads, keys rotated) and its layout."""
import torch
import torch.nn as nn

from .._compare import expect_close, expect_tensor, matches
from .._shapes import shape_sentence
from .._core import Diagnosis, check_function, expect_module_class, load_fixture
from .._modules import build, load
from .._weights import attention_slots
from ._probes_gqa import repeated_heads, rotary_positions, unused_projection

NAME = "GroupedQueryAttention"
ATOL, RTOL = 1e-6, 1e-6
GQA_BIAS = Diagnosis(
    "gqa-bias", "the attention projections are bias-free here (as in Llama): nn.Linear(..., bias=False).")
KV_FULL = Diagnosis(
    "gqa-kv-full",
    "k_proj and v_proj make num_heads heads: with grouped-query attention they make num_kv_heads heads, "
    "nn.Linear(embed_dim, num_kv_heads * head_dim).")
EXPANDED_CACHE = Diagnosis(
    "gqa-expanded-cache",
    "the returned keys and values are those repeated to num_heads heads: return (and cache) the num_kv_heads "
    "heads, and repeat them only for the scores; the smaller cache is what GQA is for.")
CACHE_LAYOUT = Diagnosis(
    "gqa-cache-layout",
    "the returned keys are (B, L, num_kv_heads, head_dim): keep the pinned layout (B, num_kv_heads, L, head_dim), "
    "the heads before the positions.")
KEYS_UNROTATED = Diagnosis(
    "gqa-keys-unrotated",
    "the returned keys are not rotated: rotate the new keys (at their positions) before caching them, so that a "
    "cached key never needs rotating again.")
VALUES_ROTATED = Diagnosis(
    "gqa-values-rotated", "RoPE is applied to the values too: rotate only the queries and the keys.")
REPEAT_GROUPING = Diagnosis(
    "gqa-repeat-grouping",
    "query head h reads key/value head h % num_kv_heads (as .repeat tiles them): consecutive query heads share one, "
    "head h reads h // (num_heads // num_kv_heads): repeat_interleave(group, dim=1).")
NO_ROPE = Diagnosis(
    "gqa-no-rope", "neither the queries nor the keys are rotated: apply self.rotary to both, at offset L_past.")
SCALE_EMBED = Diagnosis("gqa-scale-embed", "the scores are divided by √embed_dim instead of √head_dim.")
NOT_CAUSAL = Diagnosis(
    "gqa-not-causal", "a query attends keys after it: mask key j > query i with -inf before the softmax.")
MASK_IGNORES_PREFIX = Diagnosis(
    "gqa-mask-ignores-prefix",
    "with a cache, the mask is aligned to the top left: the new query i sits at position L_past + i and sees every "
    "cached key and the new ones up to itself, torch.ones(L, L_past + L).tril(L_past).")
OFFSET_IGNORED = Diagnosis(
    "gqa-offset-ignored",
    "with a cache, the new queries and keys are rotated as if they stood at positions 0, 1, ...: rotate them at "
    "offset=L_past, the number of cached positions.")


def _expect_structure(task, layer, fixture, config):
    """q_proj, o_proj: D -> D; k_proj, v_proj: D -> num_kv_heads * head_dim; no biases."""
    embed_dim, num_heads, num_kv_heads = config["embed_dim"], config["num_heads"], config["num_kv_heads"]
    kv_dim = num_kv_heads * embed_dim // num_heads
    for name, out_features in (("q_proj", embed_dim), ("k_proj", kv_dim), ("v_proj", kv_dim), ("o_proj", embed_dim)):
        projection = getattr(layer, name, None)
        if not isinstance(projection, nn.Linear):
            task.fail(f"{NAME} should have an nn.Linear named `{name}`, found "
                      f"{'nothing' if projection is None else type(projection).__name__}.")
        if projection.bias is not None:
            task.fail(f"{NAME}.{name} has a bias: {GQA_BIAS}", GQA_BIAS.slug)
        if name in ("k_proj", "v_proj") and projection.out_features == embed_dim != kv_dim:
            task.fail(f"{NAME}.{name} is nn.Linear({embed_dim}, {embed_dim}) with num_kv_heads={num_kv_heads}: "
                      f"{KV_FULL}", KV_FULL.slug)
        if (projection.in_features, projection.out_features) != (embed_dim, out_features):
            task.fail(f"{NAME}.{name} is nn.Linear({projection.in_features}, {projection.out_features}), expected "
                      f"nn.Linear({embed_dim}, {out_features}).")


def _call(layer, x, cache):
    return layer(x, cache=cache) if cache is not None else layer(x)


def _run(task, layer, x, what, config, cache=None):
    """(out, keys, values) of one call, each checked for being a tensor; a call that raises is probed for how it
    repeats the key/value heads."""
    try:
        result = _call(layer, x, cache)
    except Exception as error:  # noqa: BLE001 -- probed, then raised again by task.call, which shows it
        head_dim = config["embed_dim"] // config["num_heads"]
        found = repeated_heads(lambda: _call(layer, x, cache), config["num_heads"], config["num_kv_heads"], head_dim)
        if found:
            shapes = shape_sentence(error)  # the shapes on the student's line, when it is a shape error
            task.fail(f"{what} raised {type(error).__name__}: " + (f"{shapes.rstrip('.')}; " if shapes else "") + found)
        result = task.call(what, _call, layer, x, cache)
    if not (isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[1], (tuple, list))
            and len(result[1]) == 2):
        task.fail(f"{what} should return (out, (keys, values)), got {type(result).__name__}.")
    return result[0], result[1][0], result[1][1]


def _expect_cache(task, what, keys, values, case, key_name, value_name, config):
    expected = case[key_name]
    batch_size, num_kv_heads, seq_len, head_dim = expected.shape
    if isinstance(keys, torch.Tensor) and keys.dim() == 4 and num_kv_heads != config["num_heads"]:
        if tuple(keys.shape) == (batch_size, config["num_heads"], seq_len, head_dim):
            task.fail(f"{what}: the keys have shape {tuple(keys.shape)}: {EXPANDED_CACHE}", EXPANDED_CACHE.slug)
    if isinstance(keys, torch.Tensor) and tuple(keys.shape) == (batch_size, seq_len, num_kv_heads, head_dim) \
            and seq_len != num_kv_heads:
        task.fail(f"{what}: the keys have shape {tuple(keys.shape)}: {CACHE_LAYOUT}", CACHE_LAYOUT.slug)
    mistakes = case.get("mistakes", {})
    seen = set(mistakes.get("outputs", {})) | set(mistakes.get("continued", {}))  # failed on the outputs already
    mistakes = {key: {d: value for d, value in found.items() if d not in seen} for key, found in mistakes.items()}
    expect_tensor(task, f"the key cache of {what}", keys, tuple(expected.shape))
    expect_close(task, f"the key cache of {what}", keys, expected, ATOL, RTOL, mistakes.get(key_name))
    expect_tensor(task, f"the value cache of {what}", values, tuple(case[value_name].shape))
    expect_close(task, f"the value cache of {what}", values, case[value_name], ATOL, RTOL, mistakes.get(value_name))


def _probes(layer, x, cache, config):
    """The probes of a layer whose output is wrong, in order, each a callable giving a sentence or None."""
    run, past = (lambda: _call(layer, x, cache)), 0 if cache is None else cache[0].size(2)
    slots = attention_slots(layer)
    heads = (config["num_heads"], config["num_kv_heads"])
    return (lambda: unused_projection(run, slots) if cache is None else None,
            lambda: rotary_positions(run, layer, x.size(1), past, *heads),
            lambda: repeated_heads(run, *heads, config["embed_dim"] // config["num_heads"]))


def _explain(task, what, got, case, key, probes):
    """Fail with the first probe's sentence when got has the expected shape but differs from the expected values and
    from every known mistake's (those are named by expect_close)."""
    expected, known = case[key], case.get("mistakes", {}).get(key, {})
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape or matches(got, expected, ATOL, RTOL) \
            or any(matches(got, value, ATOL, RTOL) for value in known.values()):
        return
    for probe in probes:
        found = probe()
        if found:
            task.fail(f"{what} differs from the expected values: {found}")


@check_function(5)
def check_task_5(task, GroupedQueryAttention):
    """Check GroupedQueryAttention(embed_dim, num_heads, num_kv_heads, max_len) with fixed weights."""
    expect_module_class(task, GroupedQueryAttention, NAME)
    fixture = load_fixture(__package__, 5)
    x, past = fixture["x"], fixture["past"]
    for case in fixture["cases"].values():
        config = case["config"]
        layer = build(task, GroupedQueryAttention, NAME, *config.values())
        _expect_structure(task, layer, fixture, config)
        layer = load(task, layer, attention_slots, case["weights"], NAME)
        what = f"{NAME}({', '.join(f'{k}={v}' for k, v in config.items())})"
        out, keys, values = _run(task, layer, x, what, config)
        expect_tensor(task, f"the output of {what}", out, tuple(x.shape))
        _explain(task, f"the output of {what}", out, case, "outputs", _probes(layer, x, None, config))
        expect_close(task, f"the output of {what}", out, case["outputs"], ATOL, RTOL,
                     case.get("mistakes", {}).get("outputs"))
        _expect_cache(task, what, keys, values, case, "new_keys", "new_values", config)
        _, prefix_keys, prefix_values = _run(task, layer, x[:, :past], what, config)
        cached = f"{what} on the last {x.size(1) - past} positions with a cache of {past}"
        cache = (prefix_keys, prefix_values)
        out, keys, values = _run(task, layer, x[:, past:], cached, config, cache=cache)
        expect_tensor(task, f"the output of {cached}", out, tuple(case["continued"].shape))
        _explain(task, f"the output of {cached}", out, case, "continued",
                 _probes(layer, x[:, past:], cache, config))
        expect_close(task, f"the output of {cached}", out, case["continued"], ATOL, RTOL,
                     case.get("mistakes", {}).get("continued"))
        _expect_cache(task, cached, keys, values, case, "continued_keys", "continued_values", config)
    task.passed("query heads share key/value heads in consecutive groups, RoPE at the right positions, a causal "
                "mask that sees the cache, and a cache of num_kv_heads rotated keys.")
