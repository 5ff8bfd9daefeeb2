"""Task 3's probes: which input feeds the keys and the values, whether o_proj is used, the head axis of the weights.

Each runs only after an output differs from the expected one (or a call fails), and fails only when what it
measured identifies the cause; otherwise it returns and the comparison that follows says what differs.
"""
import torch

from .._compare import matches
from .._core import Diagnosis, one_line, slug_of
from ._probes_spies import failed_reshape, is_truth_value_error

KEYS_FROM_X = Diagnosis(
    "keys-from-x",
    "the keys come from x instead of the context (the attention weights do not change when only the "
    "context changes): key = k_proj(context).")
VALUES_FROM_X = Diagnosis(
    "values-from-x",
    "the values come from x instead of the context (with every query zero, the output changes with x "
    "and not with the context): value = v_proj(context).")
O_PROJ_UNUSED = Diagnosis(
    "o-proj-unused",
    "the output does not change when o_proj's weight changes: apply the output projection to the "
    "merged heads, outputs = self.o_proj(merged).")
MASK_AS_GIVEN = Diagnosis(
    "mask-as-given",
    "every mask the API names, (L_q, L_k), (B, 1, 1, L_k) or (B, 1, L_q, L_k), already broadcasts to "
    "the scores (B, H, L_q, L_k): pass it on as it is, without adding or removing axes.")


def _quiet(layer, x, context=None, mask=None):
    """(outputs, attention) of layer, or None when the call fails or returns something else."""
    try:
        with torch.no_grad():
            result = layer(x, context=context, mask=mask, return_attention=True)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    ok = isinstance(result, (tuple, list)) and len(result) == 2 and all(isinstance(r, torch.Tensor) for r in result)
    return tuple(result) if ok else None


def _changed(first, second):
    return first is not None and second is not None and first.shape == second.shape and \
        not torch.allclose(first, second, atol=1e-9)


def _same(first, second):
    return first is not None and second is not None and first.shape == second.shape and \
        torch.allclose(first, second, atol=1e-9)


def _with_zero(layer, slots, roles, run):
    """run() with the parameters of roles set to zero, then restored."""
    saved = {role: slots[role].detach().clone() for role in roles if role in slots}
    try:
        with torch.no_grad():
            for role in saved:
                slots[role].zero_()
        return run()
    finally:
        with torch.no_grad():
            for role, value in saved.items():
                slots[role].copy_(value)


def explain_sources(task, what, layer, run, slots, kv_from_x):
    """Name keys or values taken from x: a cross-attention run without a mask, x and context of one length."""
    x, context = run["x"], run["context"]
    other = context.flip(0) + 0.5  # another context of the same shape
    base, moved = _quiet(layer, x, context), _quiet(layer, x, other)
    keys_from_x = base is not None and moved is not None and _same(base[1], moved[1])
    shifted = x.flip(0) - 0.5

    def outputs(queries, keys):
        result = _quiet(layer, queries, keys)
        return None if result is None else result[0]
    zero = ("q_proj.weight", "q_proj.bias")  # every query zero: uniform weights, the output is the values' mean
    by_x = _with_zero(layer, slots, zero, lambda: (outputs(x, context), outputs(shifted, context)))
    by_context = _with_zero(layer, slots, zero, lambda: outputs(x, other))
    values_from_x = _changed(*by_x) and _same(by_x[0], by_context)
    if keys_from_x and values_from_x:
        task.fail(f"{what}: {kv_from_x}", slug_of(kv_from_x))
    if keys_from_x or values_from_x:
        task.fail(f"{what}: {KEYS_FROM_X if keys_from_x else VALUES_FROM_X}")


def explain_output_projection(task, what, layer, run, slots):
    """Name an o_proj whose weight does not change the output."""
    if "o_proj.weight" not in slots:
        return
    base = _quiet(layer, run["x"], run.get("context"), run.get("mask"))
    weight = slots["o_proj.weight"]
    saved = weight.detach().clone()
    try:
        with torch.no_grad():
            weight.mul_(2.0).add_(0.5)
        moved = _quiet(layer, run["x"], run.get("context"), run.get("mask"))
    finally:
        with torch.no_grad():
            weight.copy_(saved)
    if base is not None and moved is not None and _same(base[0], moved[0]):
        task.fail(f"{what}: {O_PROJ_UNUSED}", O_PROJ_UNUSED.slug)


def explain_head_axis(task, what, attention, expected):
    """Name attention weights of shape (B, L_q, L_k): averaged or summed over the heads, or without a head axis."""
    if not isinstance(attention, torch.Tensor) or attention.dim() != 3 or \
            tuple(attention.shape) != tuple(expected.shape[:1] + expected.shape[2:]):
        return
    for how, merged in (("averaged", expected.mean(1)), ("summed", expected.sum(1))):
        if matches(attention.detach().to(expected.dtype), merged, 1e-6, 1e-6):
            task.fail(f"{what}: the attention weights are {how} over the heads, shape {tuple(attention.shape)}: "
                      f"return each head's weights, (B, H, L_q, L_k) = {tuple(expected.shape)}.")
    task.fail(f"{what}: the attention weights have shape {tuple(attention.shape)}, without the head axis: return "
              f"(B, H, L_q, L_k) = {tuple(expected.shape)}.")


def explain_mask_error(task, layer, x, kwargs):
    """After a call with a mask failed: if the same call without the mask runs, the mask's axes are the cause."""
    mask = kwargs.get("mask")
    if not isinstance(mask, torch.Tensor) or _quiet(layer, x, kwargs.get("context")) is None:
        return
    try:
        with torch.no_grad():
            layer(x, **kwargs)
    except Exception as error:  # noqa: BLE001 -- the student's error, named below
        task.fail(f"MultiheadAttention.forward with a mask of shape {tuple(mask.shape)} raised "
                  f"{type(error).__name__} ({one_line(error, 100)}), and runs without a mask: {MASK_AS_GIVEN}",
                  MASK_AS_GIVEN.slug)


def explain_truth_value(task, layer, x, kwargs):
    """After a call with a context failed: a tensor used as a truth value (`context or x`) when the same call without
    a context runs."""
    if not isinstance(kwargs.get("context"), torch.Tensor) or _quiet(layer, x, mask=kwargs.get("mask")) is None:
        return
    try:
        with torch.no_grad():
            layer(x, **kwargs)
    except Exception as error:  # noqa: BLE001 -- the student's error, named below
        if is_truth_value_error(error):
            task.fail("MultiheadAttention.forward raises when it is given a context and runs without one: it asks for "
                      "the truth value of a tensor (as `context or x` or `if context:` do), which is ambiguous for a "
                      "tensor of several values; test for the default explicitly, `if context is None: context = x`.")


def explain_length_error(task, what, layer, run):
    """After a call with L_k != L_q failed (and L_k = L_q runs): name the reshape that put one length for the other.

    Returns:
        True when the failing reshape merged the heads with L_k (the caller names that), False when nothing was found.
    """
    query_len, key_len = run["x"].size(1), run["context"].size(1)
    seen = failed_reshape(lambda: layer(run["x"], context=run["context"], return_attention=True))
    if seen is None or len(seen[0]) < 2 or len(seen[1]) < 2:
        return False
    (source, asked), lengths = seen, f"(L_q = {query_len}, L_k = {key_len})"
    if source[1] == key_len and asked[1] == query_len:
        task.fail(f"{what} {lengths} fails: a view of the context's projection, shape {source} with L_k = "
                  f"{key_len} rows, asks for shape {asked}, with x's length L_q = {query_len}: split the keys and "
                  "values with the context's own length, key_len = context.size(1).")
    if source[1] == query_len and asked[1] == key_len:
        return True
    task.fail(f"{what} {lengths} fails, and runs when the context is as long as x: a view or reshape of a "
              f"{source} tensor asks for shape {asked}; use L_q where a tensor has one row per query and L_k "
              "where it has one row per key.")
