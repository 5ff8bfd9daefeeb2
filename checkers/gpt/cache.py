"""Task 3: the KV cache of CausalSelfAttention (the `cache` branch of the Task 2 class)."""
import torch

from .._compare import diagnose, expect_close, expect_finite, matches, signatures
from .._core import Diagnosis, check_function, expect_module_class, load_fixture
from .._dependencies import explain_parts
from ._probes_generic import joined_along, unused_inputs
from .attention import CACHE_BEFORE_ROPE, NAME, NEW_ONLY, _split, attend, loaded  # noqa: F401 -- NEW_ONLY quoted

ATOL, RTOL = 1e-6, 1e-6
# Sentences the known mistakes' diagnoses quote (course/gpt/mistakes.py); CACHE_BEFORE_ROPE and NEW_ONLY are Task 2's.
KEYS_AT_ZERO = Diagnosis(
    "keys-at-zero",
    "the new keys are rotated as if they sat at positions 0, 1, ... instead of their own: with a cache "
    "of L_past positions, rotate the new queries and keys with offset=L_past.")
MASK_IGNORES_PREFIX = Diagnosis(
    "mask-ignores-prefix",
    "the causal mask ignores the cached prefix: new query i sits at position L_past + i and may "
    "attend keys 0 .. L_past + i, the whole cache and the new keys up to itself; build the mask "
    "of shape (L, L_past + L) with tril(diagonal=L_past) (F.scaled_dot_product_attention's "
    "is_causal=True aligns its mask to the top-left corner, wrong whenever there is a cache).")
FUTURE_WITH_CACHE = Diagnosis(
    "future-with-cache",
    "with a cache, a new query attends new keys after it: new query i may attend keys "
    "0 .. L_past + i only, a mask of shape (L, L_past + L) from tril(diagonal=L_past).")
ROTATED_TWICE = Diagnosis(
    "rotated-twice",
    "the cached keys are rotated again: the returned keys at the cached positions 0 .. L_past - 1 are "
    "turned twice by their angle; the cache holds keys already rotated, so rotate only the new keys "
    "(offset=L_past) and concatenate them after the cached ones.")
KEY_TENSOR, VALUE_TENSOR = "the key tensor of the new cache", "the value tensor of the new cache"
PLAIN = "with return_attention=False"
CACHE_ORDER = Diagnosis(
    "cache-order",
    "the new keys and values come before the cached ones: concatenate [cached, new] along the position "
    "axis (dim=2), so that key j sits at position j.")


def _continue(task, layer, x, run, num_heads, return_attention=True):
    """The run's cached forward: the prefix without a cache, then the rest at once or one token at a time."""
    past, step = run["past"], run["step"]
    cache = attend(task, layer, x[:, :past], num_heads, return_attention=False)[1]
    outs, attention = [], None
    for start in range(past, x.size(1), step):
        result = attend(task, layer, x[:, start:start + step], num_heads, return_attention, cache=cache)
        outs.append(result[0])
        cache, attention = result[1], result[2] if return_attention else None
    return torch.cat(outs, dim=1), cache, attention, start  # out (B, L - past, D); start: the last call's L_past


def _explain_keys(task, layer, x, run, keys, last_past, what, num_heads):
    """Name a cache of unrotated keys, new keys rotated from position 0, or new keys put before the cached ones."""
    unrotated = _split(layer.k_proj, x, num_heads).detach()  # (B, H, L, head_dim): the student's own k_proj
    if matches(keys[:, :, last_past:], unrotated[:, :, last_past:], ATOL, RTOL):  # positions >= 1: rotated ones
        task.fail(f"{what}: {CACHE_BEFORE_ROPE}", CACHE_BEFORE_ROPE.slug)
    try:
        with torch.no_grad():
            at_zero = layer.rotary(unrotated[:, :, last_past:])  # (B, H, L_new, head_dim) at positions 0, 1, ...
    except Exception:  # noqa: BLE001 -- only a probe
        at_zero = None
    expected = run["new_keys"]
    start = _rotated_from(layer, unrotated[:, :, last_past:], keys[:, :, last_past:])
    if start not in (None, 0, last_past):
        heads = f": {start} is cache[0].size(1), the number of heads" if start == num_heads else ""
        task.fail(f"{what}: the new keys are rotated from position {start} instead of L_past = {last_past}, the "
                  f"number of cached positions{heads}; L_past is the length of the cached keys (B, H, L_past, "
                  "head_dim) along dim 2, cache[0].size(2).")
    if last_past > 1 and _turned_twice(layer, unrotated[:, :, :last_past], keys[:, :, :last_past]):
        task.fail(f"{what}: {ROTATED_TWICE}", ROTATED_TWICE.slug)
    if at_zero is not None and matches(keys[:, :, last_past:], at_zero, ATOL, RTOL) and \
            not matches(at_zero, expected[:, :, last_past:], ATOL, RTOL):
        task.fail(f"{what}: {KEYS_AT_ZERO}", KEYS_AT_ZERO.slug)
    swapped = torch.cat([expected[:, :, last_past:], expected[:, :, :last_past]], dim=2)
    if matches(keys, swapped, ATOL, RTOL):
        task.fail(f"{what}: {CACHE_ORDER}", CACHE_ORDER.slug)


def _rotated_from(layer, unrotated, keys):
    """The offset at which the student's RoPE turns the new keys' projections into the returned new keys, if any."""
    max_len = getattr(layer.rotary, "max_len", None)
    if not isinstance(max_len, int):
        return None
    for offset in range(max_len - unrotated.size(2) + 1):
        try:
            with torch.no_grad():
                if matches(keys, layer.rotary(unrotated, offset=offset), ATOL, RTOL):
                    return offset
        except Exception:  # noqa: BLE001 -- only a probe
            return None
    return None


def _explain_values(task, keys, values, run, last_past, what):
    """Name a cache whose values at the cached positions are the cached keys (cache[0] where cache[1] belongs)."""
    cached = slice(0, last_past)
    if matches(values[:, :, cached], keys[:, :, cached].detach(), ATOL, RTOL) and \
            not matches(run["new_values"][:, :, cached], run["new_keys"][:, :, cached], ATOL, RTOL):
        task.fail(f"{what}: the returned values at the cached positions 0 .. L_past - 1 are the cached keys: "
                  "concatenate the cached values, cache[1], before the new values (cache[0] holds the keys).")


def _turned_twice(layer, unrotated, keys):
    """Whether the keys of positions 0 .. L_past - 1 are the student's RoPE applied twice to their projections (and
    not once: position 0 alone would not tell)."""
    try:
        with torch.no_grad():
            once = layer.rotary(unrotated)  # (B, H, L_past, head_dim)
            twice = layer.rotary(once)
    except Exception:  # noqa: BLE001 -- only a probe
        return False
    return matches(keys, twice, ATOL, RTOL) and not matches(keys, once, ATOL, RTOL)


def _explain_mask(task, attention, last_past, what):
    """Name a mask that ignores the cached prefix (top-left aligned) or lets new queries see later new keys."""
    new_len, total = attention.shape[-2:]
    query, key = torch.arange(new_len)[:, None], torch.arange(total)[None, :]
    if attention.detach()[..., key > last_past + query].abs().max() > 0:
        task.fail(f"{what}: {FUTURE_WITH_CACHE}", FUTURE_WITH_CACHE.slug)
    prefix = (key > query) & (key <= last_past + query)  # (L, L_past + L): allowed, but a top-left mask hides them
    if prefix.any() and attention.detach()[..., prefix].abs().max() <= 1e-12:
        task.fail(f"{what}: {MASK_IGNORES_PREFIX}", MASK_IGNORES_PREFIX.slug)


def _explain_plain_mask(task, layer, x, num_heads, what):
    """The mask of return_attention=False's route (where code may take another one, e.g. SDPA), seen by probes of 3
    new tokens after 3 cached: a top-left mask (SDPA's is_causal=True) leaves one new token after 3 cached key 0
    alone, so its output is o_proj of value 0; a missing mask lets the last new token move the first one's output."""
    changed = x[:, 3:6].clone()
    changed[:, -1] += 1.0
    try:
        with torch.no_grad():
            cache = layer(x[:, :3])[1]
            out = layer(x[:, 3:4], cache=cache)[0]  # (B, 1, D)
            first = layer.o_proj(cache[1][:, :, :1].transpose(1, 2).reshape(x.size(0), 1, -1))  # (B, 1, D)
            moved = layer(changed, cache=cache)[0][:, 0] - layer(x[:, 3:6], cache=cache)[0][:, 0]  # (B, D)
    except Exception:  # noqa: BLE001 -- only a probe
        return
    if matches(out, first, ATOL, RTOL):
        task.fail(f"{what}: one new token after 3 cached ones gets o_proj of value 0 alone: {MASK_IGNORES_PREFIX}",
                  MASK_IGNORES_PREFIX.slug)
    if moved.abs().max() > 1e-9:
        task.fail(f"{what} ({PLAIN}): changing the last of 3 new tokens changes the first one's output: "
                  f"{FUTURE_WITH_CACHE}", FUTURE_WITH_CACHE.slug)


AXES = ("the batch", "the heads", "the positions", "the features")  # of (B, H, L, head_dim)


def _explain_cache_error(task, layer, x, run, what):
    """When the cached call raises: name a concatenation along another axis than the positions, or a cached tensor
    that is never used."""
    try:
        with torch.no_grad():
            cache = layer(x[:, :run["past"]])[1]
    except Exception:  # noqa: BLE001 -- only a probe
        return
    if not isinstance(cache, (tuple, list)) or len(cache) != 2:
        return
    call = lambda: layer(x[:, run["past"]:run["past"] + run["step"]], cache=cache)
    try:
        with torch.no_grad():
            call()
        return
    except NotImplementedError:
        return  # the cache branch is not written yet: the check's own call says so
    except Exception:  # noqa: BLE001 -- the error is what is explained
        pass
    for dim, shapes in joined_along(call, cache):
        if isinstance(dim, int) and dim % 4 != 2:
            task.fail(f"{what}: the cached and new keys or values, {' and '.join(map(str, shapes))}, are joined "
                      f"along dim {dim}, {AXES[dim % 4]}: join them along the positions, torch.cat([cached, new], "
                      "dim=2).")
    for index in unused_inputs(call, list(cache)):
        name = ("keys", "values")[index]
        task.fail(f"{what}: the cached {name} (cache[{index}]) are never used: concatenate them before the new "
                  f"{name} along the positions, torch.cat([cache[{index}], new], dim=2), as for the "
                  f"{('keys', 'values')[1 - index]}.")


def _explain_queries(task, layer, x, run, keys, attention, last_past, num_heads, what):
    """Name the position the new queries are rotated from, when the weights fit queries rotated from another offset
    than L_past (the keys being right)."""
    new = x[:, last_past:last_past + run["step"]]
    head_dim = x.size(-1) // num_heads
    allowed = torch.ones(new.size(1), keys.size(2), dtype=torch.bool).tril(last_past)  # (L, L_past + L)
    try:
        with torch.no_grad():
            queries = _split(layer.q_proj, new, num_heads)
            weights = {start: (layer.rotary(queries, offset=start) @ keys.transpose(-2, -1) / head_dim ** 0.5)
                       .masked_fill(~allowed, float("-inf")).softmax(-1) for start in range(last_past + 2)}
    except Exception:  # noqa: BLE001 -- only a probe
        return
    fits = [start for start, value in weights.items() if matches(attention, value, ATOL, RTOL)]
    if fits and last_past not in fits:
        task.fail(f"{what}: the weights are those of new queries rotated from position {fits[0]}, not from "
                  f"L_past = {last_past}: rotate the new queries with offset=L_past, as the new keys.")


def _expect_run(task, layer, x, name, run, num_heads):
    """One cached run, with and without the attention weights (code may take another route, e.g. SDPA, for each)."""
    what = f"{NAME} with {name}"
    _explain_cache_error(task, layer, x, run, what)
    out, (keys, values), attention, last_past = _continue(task, layer, x, run, num_heads)
    plain, (plain_keys, plain_values), _, _ = _continue(task, layer, x, run, num_heads, return_attention=False)
    checks = (("out", out, "outputs"), ("attention", attention, "attention"),
              (KEY_TENSOR, keys, "new_keys"), (VALUE_TENSOR, values, "new_values"),
              (f"out {PLAIN}", plain, "outputs"), (f"{KEY_TENSOR} {PLAIN}", plain_keys, "new_keys"),
              (f"{VALUE_TENSOR} {PLAIN}", plain_values, "new_values"))
    for part, value, _ in checks:
        expect_finite(task, f"{what}: {part}", value)
    if not all(matches(value, run[key], ATOL, RTOL) for _, value, key in checks):
        _explain_keys(task, layer, x, run, keys, last_past, what, num_heads)
        _explain_keys(task, layer, x, run, plain_keys, last_past, f"{what} ({PLAIN})", num_heads)
        _explain_values(task, keys, values, run, last_past, what)
        _explain_mask(task, attention, last_past, what)
        if matches(keys, run["new_keys"], ATOL, RTOL) and getattr(layer, "rotary", None) is not None:
            _explain_queries(task, layer, x, run, keys, attention, last_past, num_heads, what)
        _explain_plain_mask(task, layer, x, num_heads, what)
        for part, value, key in checks:
            diagnose(task, f"{what}: {part}", value, signatures(run, key), ATOL, RTOL)
    for part, value, key in checks:
        expect_close(task, f"{what}: {part}", value, run[key], ATOL, RTOL)


@check_function(3)
def check_task_3(task, CausalSelfAttention):
    """Check CausalSelfAttention's cached forward against one pass over the whole sequence (2 heads)."""
    expect_module_class(task, CausalSelfAttention, NAME)
    fixture = load_fixture(__package__, 3)
    x, num_heads = fixture["x"], fixture["num_heads"]
    layer = loaded(task, CausalSelfAttention, fixture, fixture["weights"], num_heads)
    out, (keys, values) = attend(task, layer, x, num_heads, return_attention=False)
    if not all(matches(got, fixture[key], ATOL, RTOL) for got, key in ((out, "outputs"), (keys, "new_keys"),
                                                                       (values, "new_values"))):
        if matches(keys, _split(layer.k_proj, x, num_heads), ATOL, RTOL):
            task.fail(f"{NAME} without a cache: {CACHE_BEFORE_ROPE}", CACHE_BEFORE_ROPE.slug)
        explain_parts(task, f"{NAME} without a cache", [("it", 2, CausalSelfAttention)], __package__)
        expect_close(task, f"{NAME} without a cache", out, fixture["outputs"], ATOL, RTOL)
    for name, run in fixture["runs"].items():
        _expect_run(task, layer, x, name, run, num_heads)
    task.passed("queries and keys rotated at their own positions after the cache, the cache holding rotated keys "
                "and values of every position, the mask over the cached prefix: cached passes equal one full pass.")
