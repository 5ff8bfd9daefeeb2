"""Task 1: scaled dot-product attention."""
import torch

from .._compare import diagnose, expect_close, expect_finite, expect_pair, expect_tensor, matches, signatures
from .._core import Diagnosis, CheckFailure, NotImplementedYet, check_function, expect_callable, load_fixture
from .._probes import matrix_only_ops, normalised_axis, temperature
from ._probes_generic import outcome

ATOL, RTOL = 1e-6, 1e-6  # float64 inputs: any correct formulation lands within ~1e-12
# What the property checks below say; course/transformer/mistakes.py quotes them as its planted mistakes' diagnoses.
RES_FROM_KEY = Diagnosis(
    "res-from-key",
    "res takes its last axis from `key` instead of `value`: compute res = attention @ value.")
BATCHED = Diagnosis(
    "batched",
    "`.T` reverses all axes of a batched tensor: transpose only the last two, key.transpose(-2, -1), and "
    "multiply with @ or torch.matmul, which broadcast over the leading axes.")
MASK_INVERTED = Diagnosis(
    "mask-inverted",
    "the mask looks inverted: mask is nonzero / True where a query MAY attend, so fill the scores with "
    "-inf where mask == 0.")
HARD_CODED_AXIS = Diagnosis(
    "hard-coded-axis",
    "an axis is probably hard-coded: count axes from the end, as in torch.softmax(scores, dim=-1), "
    "query.size(-1) and key.transpose(-2, -1), so that leading batch axes do not shift them.")
OVERFLOW = Diagnosis(
    "overflow",
    "the softmax overflows for large scores: subtract each row's maximum before exp(), or use "
    "torch.softmax(scores, dim=-1).")
# Sentences the known mistakes' diagnoses quote (course/transformer/mistakes.py).
NO_SCALING = Diagnosis(
    "no-scaling",
    "your weights equal softmax(QKᵀ): divide the scores by √D, with D = query.size(-1).")
SCALED_BY_D = Diagnosis(
    "scaled-by-d",
    "your weights equal softmax(QKᵀ/D): divide by √D, not by D.")
SCALED_BY_HALF_D = Diagnosis(
    "scaled-by-d-2",
    "your weights equal softmax(QKᵀ/(D/2)): in Python `D**1/2` is D/2; write `D ** 0.5` or math.sqrt(D).")
SCALED_BY_LENGTH = Diagnosis(
    "scaled-by-the-sequence-length",
    "your scores are divided by √L_k, the number of keys; divide by √D, the feature size query.size(-1).")
SOFTMAX_OVER_QUERIES = Diagnosis(
    "softmax-over-the-queries",
    "your softmax runs over the queries (dim=-2); it must run over the keys, the last axis.")
MASK_IGNORED = Diagnosis(
    "mask-ignored",
    "the mask has no effect: set the scores to -inf where mask is 0 / False, before the softmax.")
MASK_AFTER_SOFTMAX = Diagnosis(
    "mask-applied-after-the-softmax",
    "the mask is applied after the softmax, so rows no longer sum to 1: fill the masked scores with -inf before it.")


def _run(task, attention_fn, case, dtype=torch.float64, mask=None):
    inputs = {name: case[name].to(dtype) for name in ("query", "key", "value")}
    originals = {name: tensor.clone() for name, tensor in inputs.items()}
    mask = case.get("mask") if mask is None else mask
    args = (inputs["query"], inputs["key"], inputs["value"]) + (() if mask is None else (mask,))
    shapes = [f"{name} of shape {tuple(tensor.shape)}" for name, tensor in zip(("query", "key", "value", "mask"), args)]
    result = task.call(f"scaled_softmax_attention({', '.join(shapes)})", attention_fn, *args)
    res, attention = expect_pair(task, "scaled_softmax_attention", result, "(res, attention)")
    if isinstance(res, torch.Tensor) and isinstance(attention, torch.Tensor) and case["res"].shape != \
            case["attention"].shape and (res.shape, attention.shape) == (case["attention"].shape, case["res"].shape):
        task.fail(f"res has the shape of the attention weights, {tuple(res.shape)}, and attention that of res, "
                  f"{tuple(attention.shape)}: return the pair in the order (res, attention).")
    if isinstance(res, torch.Tensor) and res.shape[:-1] == case["res"].shape[:-1] \
            and res.size(-1) == inputs["key"].size(-1) != inputs["value"].size(-1):
        task.fail(f"res has shape {tuple(res.shape)}, expected {tuple(case['res'].shape)}: {RES_FROM_KEY}",
                  RES_FROM_KEY.slug)
    expect_tensor(task, "res", res, case["res"].shape, dtype)
    expect_tensor(task, "attention", attention, case["attention"].shape, dtype)
    for name, tensor in inputs.items():
        if not torch.equal(tensor, originals[name]):
            task.fail(f"the input `{name}` was modified in place; compute new tensors instead.")
    return res, attention


def _expect_case(task, attention_fn, name, case, mask=None):
    try:
        res, attention = _run(task, attention_fn, case, mask=mask)
    except NotImplementedYet:
        raise
    except CheckFailure:
        _explain_batched(task, attention_fn, name, case)
        _explain_mask_axes(task, attention_fn, name, case, mask)
        _explain_mask_dtype(task, attention_fn, name, case, mask)
        _explain_mask_broadcast(task, attention_fn, name, case, mask)
        _explain_rank(task, attention_fn, name, case)
        raise
    if not matches(attention, case["attention"], ATOL, RTOL):
        diagnose(task, f"attention ({name})", attention, signatures(case, "attention"), ATOL, RTOL)
        _explain_batched(task, attention_fn, name, case, attention)
        _explain_mask_axes(task, attention_fn, name, case, mask)
        _explain_attention(task, name, attention, case)
    expect_close(task, f"attention ({name})", attention, case["attention"], ATOL, RTOL)
    if not matches(res, case["res"], ATOL, RTOL):
        expect_finite(task, f"res ({name})", res)
        diagnose(task, f"res ({name})", res, signatures(case, "res"), ATOL, RTOL)
        task.fail(f"in case '{name}' the attention weights are right but res is not: res is attention @ value, "
                  "of shape (..., L_q, D_v), with nothing else applied.")


def _explain_batched(task, attention_fn, name, case, attention=None):
    """Fail saying what is observed when a batched case is wrong but its first 2-D slice is right.

    `.T` (or mm, t) is named only when the batched call was seen applying it to an N-D tensor; otherwise it says
    what the weights show (the axis they sum to 1 along, the divisor of the scores).
    """
    if case["query"].dim() <= 2 or "mask" in case:
        return
    first = (0,) * (case["query"].dim() - 2)
    inputs = tuple(case[key] for key in ("query", "key", "value"))
    try:
        res, attention_2d = attention_fn(*(tensor[first] for tensor in inputs))
        right = matches(res, case["res"][first], ATOL, RTOL) \
            and matches(attention_2d, case["attention"][first], ATOL, RTOL)
    except Exception:  # noqa: BLE001 -- only a probe: the caller reports the failure itself
        return
    if not right:
        return
    used = matrix_only_ops(attention_fn, *inputs)
    if ".T" in used:
        task.fail(f"in case '{name}' the result is right for 2-D inputs but not for batched ones: {BATCHED}",
                  BATCHED.slug)
    if used:
        task.fail(f"in case '{name}' the result is right for 2-D inputs but not for batched ones: {used[0]} takes "
                  "matrices only; use key.transpose(-2, -1) and @ (torch.matmul), which broadcast over leading axes.")
    seen = "" if attention is None else _observed(attention, case["attention"], case["query"])
    task.fail(f"in case '{name}' the result is right for 2-D inputs but not for batched ones{seen}: {HARD_CODED_AXIS}",
              HARD_CODED_AXIS.slug)


def _explain_mask_axes(task, attention_fn, name, case, mask=None):
    """Fail when the function is right once its mask's last two axes are swapped: it reads them the wrong way round."""
    mask = case.get("mask") if mask is None else mask
    if mask is None or mask.dim() < 2:
        return
    try:
        res, attention = attention_fn(case["query"], case["key"], case["value"], mask.transpose(-2, -1))
        right = matches(res, case["res"], ATOL, RTOL) and matches(attention, case["attention"], ATOL, RTOL)
    except Exception:  # noqa: BLE001 -- only a probe: the caller reports the failure itself
        return
    if right:
        task.fail(f"in case '{name}' the result is right only when the mask is given transposed: mask[..., i, j] says "
                  "whether query i may attend to key j, so use it as it is (shape (..., L_q, L_k)), "
                  "without transposing.")


def _observed(attention, expected, query):
    """', where <what the weights show>' for weights that are wrong without a mask, or ''."""
    axis = normalised_axis(attention)
    if axis is None:
        return ""
    if axis != attention.dim() - 1:
        return (f", and the weights sum to 1 along axis {axis} (size {attention.size(axis)}) instead of the last axis, "
                "the keys")
    ratio = temperature(attention, expected)
    if ratio is None or abs(ratio - 1) < 1e-3:
        return ""
    divisor, size = query.size(-1) / ratio ** 2, query.size(-1)
    factor = 1 / divisor if divisor < 1 else divisor  # a divisor below 1 is a multiplication
    named = [axis if axis < query.dim() - 1 else -1 for axis in range(query.dim())
             if abs(query.size(axis) - factor) < 1e-3 * factor]
    which = f" = √query.size({named[0]})" if named else ""
    if divisor < 1:
        return (f", and the scores are multiplied by √{factor:.4g}{which} instead of divided by "
                f"√query.size(-1) = √{size}")
    return f", and the scores are divided by √{divisor:.4g}{which} instead of √query.size(-1) = √{size}"


def _explain_attention(task, name, attention, case):
    """Property checks that name what is wrong when the weights are wrong and no known mistake matched."""
    mask = case.get("mask")
    if mask is not None:
        forbidden = (mask == 0).expand_as(attention)
        if not torch.isfinite(attention).all() or attention[~forbidden].abs().max() == 0:
            task.fail(f"in case '{name}' the allowed positions get no weight (or NaN): {MASK_INVERTED}",
                      MASK_INVERTED.slug)
        if attention[forbidden].abs().max() > 0:
            task.fail(f"in case '{name}' positions where the mask is 0 / False get nonzero weight: fill their "
                      "scores with -inf before the softmax.")
    expect_finite(task, f"attention ({name})", attention)
    if (attention < 0).any():
        task.fail(f"in case '{name}' some attention weights are negative (smallest {attention.min().item():.4g}): "
                  "the weights must be the softmax itself, torch.softmax(scores, dim=-1), with values in [0, 1].")
    rows = attention.sum(-1)
    _explain_scaled_weights(task, name, attention, case)
    if not torch.allclose(rows, torch.ones_like(rows), atol=1e-6):
        worst = rows.flatten()[(rows - 1).abs().argmax()].item()
        seen = _observed(attention, attention, case["query"])  # the axis the weights do sum to 1 along, if any
        task.fail(f"attention rows should sum to 1 along the last axis (the keys); in case '{name}' a row sums "
                  f"to {worst:.4f}{seen}. Is the softmax over the right axis?")
    if mask is None:
        seen = _observed(attention, case["attention"], case["query"])
        if seen:
            task.fail(f"in case '{name}' the weights are a softmax over the keys{seen}.")


def _right(attention_fn, args, case):
    """Whether attention_fn(*args) runs and gives the case's res and attention."""
    state, result = outcome(attention_fn, *args)
    return state == "ok" and isinstance(result, (tuple, list)) and len(result) == 2 \
        and all(isinstance(part, torch.Tensor) for part in result) \
        and matches(result[0], case["res"], ATOL, RTOL) and matches(result[1], case["attention"], ATOL, RTOL)


def _explain_mask_dtype(task, attention_fn, name, case, mask):
    """Fail when a 0/1 mask of numbers fails but the same mask as bools is right: the mask is used as a bool."""
    if mask is None or mask.dtype == torch.bool:
        return
    inputs = (case["query"], case["key"], case["value"])
    if _right(attention_fn, (*inputs, mask != 0), case):
        state, _ = outcome(attention_fn, *inputs, mask)
        how = "raises" if state == "raised" else "gives other values"
        task.fail(f"in case '{name}' the result is right with a bool mask but {how} with the same mask as 0/1 "
                  f"{'floats' if mask.is_floating_point() else 'integers'}: the mask may be bool, integer or float, "
                  "so test it by value, scores.masked_fill(mask == 0, float('-inf')) (~mask, `not` and logical "
                  "operators need bools).")


def _explain_mask_broadcast(task, attention_fn, name, case, mask):
    """Fail when a mask that only broadcasts to the scores fails but the same mask expanded to their full shape is
    right: the mask is used in a way that needs that exact shape (boolean indexing, a view)."""
    mask = case.get("mask") if mask is None else mask
    scores_shape = (*torch.broadcast_shapes(case["query"].shape[:-2], case["key"].shape[:-2]),
                    case["query"].size(-2), case["key"].size(-2))
    if mask is None or tuple(mask.shape) == scores_shape:
        return
    inputs = (case["query"], case["key"], case["value"])
    if _right(attention_fn, (*inputs, mask.expand(scores_shape).clone()), case):
        task.fail(f"in case '{name}' the mask of shape {tuple(mask.shape)}, which broadcasts to the scores' shape "
                  f"{scores_shape}, fails, but the same mask expanded to {scores_shape} is right: the mask is used in "
                  "a way that needs the scores' exact shape (such as boolean indexing, scores[mask == 0] = ...): "
                  "use scores.masked_fill(mask == 0, float('-inf')), which broadcasts.")


def _explain_rank(task, attention_fn, name, case):
    """Fail when the case is wrong (or raises) with its own number of axes but right with one batch axis more or
    fewer: an axis is counted from the front."""
    inputs = [case[key] for key in ("query", "key", "value")] + ([case["mask"]] if "mask" in case else [])
    ranks = {"one more leading axis": ([tensor.unsqueeze(0) for tensor in inputs], 0)}
    if case["query"].dim() > 2 and all(tensor.size(0) == 1 or tensor.dim() == 2 for tensor in inputs[3:]):
        ranks["one leading axis fewer"] = ([tensor[0] if tensor.dim() > 2 else tensor for tensor in inputs], None)
    for words, (args, axis) in ranks.items():
        expected = {key: case[key].unsqueeze(0) if axis == 0 else case[key][0] for key in ("res", "attention")}
        if _right(attention_fn, args, expected):
            shape = tuple(args[0].shape)
            task.fail(f"in case '{name}' the result is wrong (or raises) for query of shape "
                      f"{tuple(case['query'].shape)} but right for the same inputs with {words}, query of shape "
                      f"{shape}: {HARD_CODED_AXIS}", HARD_CODED_AXIS.slug)


def _explain_scaled_weights(task, name, attention, case):
    """Fail when every row sums to one constant other than 1: a factor applied to the weights after the softmax."""
    rows = attention.sum(-1)
    factor = rows.flatten()[0].item()
    if (attention < 0).any() or abs(factor - 1) < 1e-6 or not torch.allclose(rows, torch.full_like(rows, factor)):
        return
    size = case["query"].size(-1)
    named = {f"1/√D = 1/√{size}": size ** -0.5, f"√D = √{size}": size ** 0.5, f"1/D = 1/{size}": 1 / size}
    which = next((f" = {words}" for words, value in named.items() if abs(factor - value) < 1e-6 * value), "")
    ratio = temperature(attention / factor, case["attention"])
    unscaled = ratio is not None and abs(ratio - size ** 0.5) < 1e-3 * size ** 0.5
    seen = (", and divided by it they are softmax(QKᵀ) without the 1/√D" if unscaled else
            "" if ratio is None or abs(ratio - 1) > 1e-3 else ", and divided by it they are the right weights")
    task.fail(f"in case '{name}' every row of the weights sums to {factor:.4g}{which} instead of 1{seen}: a factor "
              "is applied to the weights after the softmax; scale the scores before it, scores = query @ "
              "key.transpose(-2, -1) / √D, and return the softmax itself as the weights.")


def _expect_masked_keys_ignored(task, attention_fn, case):
    ignored = ~case["mask"]  # (B, 1, 1, L_k): keys no query may see
    changed = dict(case, key=case["key"] + 5 * ignored.transpose(-1, -2),
                   value=case["value"] + 5 * ignored.transpose(-1, -2))
    res, attention = _run(task, attention_fn, changed)
    if not torch.allclose(res, case["res"], atol=ATOL) or attention[..., ignored[0, 0, 0]].abs().max() > 0:
        task.fail("changing keys and values that the mask forbids changed the output: masked positions must get "
                  "weight exactly 0 (fill their scores with -inf before the softmax, where mask is 0 / False).")


def _expect_gradients(task, attention_fn, case):
    inputs = {name: case[name].clone().requires_grad_(True) for name in ("query", "key", "value")}
    result = task.call("scaled_softmax_attention", attention_fn, inputs["query"], inputs["key"], inputs["value"])
    task.call("backward through scaled_softmax_attention", lambda: result[0].sum().backward())
    for name, tensor in inputs.items():
        if tensor.grad is None or not torch.isfinite(tensor.grad).all():
            task.fail(f"no finite gradient reaches `{name}`: is the computation detached or done outside torch?")


@check_function(1)
def check_task_1(task, scaled_softmax_attention):
    """Check scaled_softmax_attention(query, key, value, mask=None) -> (res, attention)."""
    expect_callable(task, scaled_softmax_attention, "scaled_softmax_attention")
    fixture = load_fixture(__package__, 1)
    for name in ("unbatched", "batched", "random_mask", "causal_mask", "padding_mask"):
        _expect_case(task, scaled_softmax_attention, name, fixture[name])
    float_mask = fixture["random_mask"]["mask"].double()
    _expect_case(task, scaled_softmax_attention, "random_mask given as 0/1 floats", fixture["random_mask"], float_mask)
    _expect_masked_keys_ignored(task, scaled_softmax_attention, fixture["padding_mask"])
    res, attention = _run(task, scaled_softmax_attention, fixture["large_logits"], dtype=torch.float32)
    if not torch.isfinite(attention).all():
        task.fail(f"attention for large scores (float32) contains NaN or inf: {OVERFLOW}", OVERFLOW.slug)
    expect_close(task, "attention for large scores (float32)", attention, fixture["large_logits"]["attention"],
                 1e-3, 1e-3)
    _expect_gradients(task, scaled_softmax_attention, fixture["batched"])
    task.passed("shapes, values, masks (bool and 0/1), large scores and gradients are right.")
