"""Task 6: tiled_attention against fixed expected outputs, with a partial last block, causal or not, and on scores
near ±150 (beyond exp's float32 range); it must neither call scaled_dot_product_attention nor build an L × L tensor
(the scores, or a mask of any dtype: memory that grows with L², which tiling exists to avoid)."""
import functools

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .._calls import fail_method
from .._compare import DTYPE_NOT_FOLLOWED, expect_close, expect_tensor, matches
from .._shapes import shape_sentence
from .._core import Diagnosis, check_function, expect_callable, load_fixture, one_line
from ._probes_tiled import applied_weights, exponents, reduced_over_queries

NAME = "tiled_attention"
ATOL, RTOL = 1e-5, 1e-5  # float32 inputs against float64 values
LARGE_ATOL = 2e-4  # scores near 150 carry float32 rounding errors of ~1e-5 in float32 (measured in the prototype)
NO_RESCALE_ACC = Diagnosis(
    "tiled-no-rescale-acc",
    "the output accumulator is not rescaled when the running max grows: multiply it by exp(m_old - m_new) before "
    "adding the new block's probs @ V.")
NO_RESCALE_SUM = Diagnosis(
    "tiled-no-rescale-sum",
    "the running sum is not rescaled when the running max grows: l = l * exp(m_old - m_new) + probs.sum(-1).")
DIVIDE_EARLY = Diagnosis(
    "tiled-divide-early",
    "each block's probs @ V is divided by the running sum of its own step: the sum is final only after the last "
    "block; divide the accumulator once, at the end.")
LOCAL_MASK = Diagnosis(
    "tiled-local-mask",
    "the causal mask compares block-local key indices (0 .. block - 1) with the query positions: a key's position "
    "is the block's start + its index in the block.")
DIAGONAL_HIDDEN = Diagnosis(
    "tiled-diagonal-hidden",
    "the causal mask hides the diagonal (key j >= query i): a query sees itself; mask key j > query i only.")
LAST_BLOCK_DROPPED = Diagnosis(
    "tiled-last-block-dropped",
    "the keys of the last, partial block are left out: loop over range(0, L, block_size) and end each block at "
    "min(start + block_size, L).")
NOT_CAUSAL = Diagnosis(
    "tiled-not-causal",
    "with causal=True a query still attends keys after it (the output is causal=False's): mask key position > "
    "query position with -inf.")
NOT_SCALED = Diagnosis("tiled-not-scaled", "the scores are not scaled by 1/√head_dim.")
NO_MAX = Diagnosis(
    "tiled-no-max",
    "no running max is subtracted: in float32 exp(score) overflows to inf above ~88 (the rows of this probe have "
    "scores near +150), giving inf/inf; keep the running max m and use exp(score - m).")
MAX_FROM_ZERO = Diagnosis(
    "tiled-max-from-zero",
    "the running max starts at 0 instead of -inf: for rows whose scores are all far below 0 (near -150 here) "
    "exp(score - 0) underflows to 0 and the sum is 0; start it at -inf.")
MAX_OVER_BLOCK = Diagnosis(
    "tiled-max-over-block",
    "the running max is taken over the whole block of scores, every query row at once, instead of per row: a row "
    "whose scores all lie far below the block's largest (near -150 beside rows near +150) underflows to 0; take the "
    "max over the keys only, scores.max(dim=-1, keepdim=True).")
CALLS_SDPA = Diagnosis(
    "tiled-calls-sdpa",
    "tiled_attention calls F.scaled_dot_product_attention: write the blockwise algorithm yourself.")
FULL_SCORES = Diagnosis(
    "tiled-full-scores",
    "a {dtype} tensor of shape {shape} was computed, as large as the full L × L score matrix (L = {length}, "
    "block_size = {block}) that tiling exists to avoid: compute the scores, and any mask, one key block at a time.")


class _Recorder(TorchFunctionMode):
    """Notes a call of scaled_dot_product_attention and the first result of shape (..., >= L, >= L), of any dtype: a
    full boolean or integer mask grows with L² as the scores do."""

    def __init__(self, length):
        super().__init__()
        self.length, self.sdpa, self.full, self.dtype = length, False, None, None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.sdpa = self.sdpa or func is F.scaled_dot_product_attention
        result = func(*args, **(kwargs or {}))
        for out in result if isinstance(result, (tuple, list)) else (result,):
            if isinstance(out, torch.Tensor) and out.dim() >= 2 and self.full is None \
                    and min(out.shape[-2:]) >= self.length:
                self.full, self.dtype = tuple(out.shape), str(out.dtype).removeprefix("torch.")
        return result


def _non_finite_rows(task, what, got, run, alone):
    """Name a mistake from which query rows are not finite: row 0 alone of a causal run (the diagonal masked), the
    rows of the large probe (the running max: alone(rows) runs those query rows by themselves, which tells a max
    taken over every row at once from one that starts at 0)."""
    bad = ~torch.isfinite(got).all(dim=-1).reshape(-1, got.size(-2)).all(dim=0)  # (L,): a row not finite anywhere
    if run["causal"] and bad.nonzero().flatten().tolist() == [0]:  # query 0 sees key 0 alone: here it saw none
        task.fail(f"{what}: only query row 0 is not finite: {DIAGONAL_HIDDEN}", DIAGONAL_HIDDEN.slug)
    if not bad.any() or "signs" not in run:
        return
    positive = run["signs"] > 0  # (L,): rows whose scores are near +150
    if bad[positive].any():
        task.fail(f"{what}: {NO_MAX}", NO_MAX.slug)
    by_themselves = alone(~positive)  # the rows near -150 without the rows near +150
    if by_themselves is not None and torch.isfinite(by_themselves).all():
        task.fail(f"{what}: the rows near -150 are not finite beside the rows near +150, and are by themselves: "
                  f"{MAX_OVER_BLOCK}", MAX_OVER_BLOCK.slug)
    task.fail(f"{what}: {MAX_FROM_ZERO}", MAX_FROM_ZERO.slug)


def _rows_alone(tiled_attention, query, key, value, block, causal, rows):
    """The output of only the given query rows (a boolean (L,)) against every key, or None when it cannot be had
    (a causal run, where dropping rows moves the diagonal, or an error)."""
    if causal:
        return None
    try:
        with torch.no_grad():
            return tiled_attention(query[..., rows, :].clone(), key.clone(), value.clone(), block, causal).detach()
    except Exception:  # noqa: BLE001 -- no evidence either way
        return None


def _called(task, what, recorder, call, length):
    """call()'s output, recorded; a call that raises is probed for a reduction over the queries first."""
    try:
        with recorder:
            return call()
    except Exception as error:  # noqa: BLE001 -- probed, then raised again by task.call, which shows it
        found = reduced_over_queries(call, length)
        if found:
            shapes = shape_sentence(error)  # the shapes on the student's line, when it is a shape error
            task.fail(f"{what} raised {type(error).__name__}: " + (f"{shapes.rstrip('.')}; " if shapes else "") + found)
        with recorder:
            return task.call(what, call)


def _explain(task, what, got, run, tolerance, call):
    """Fail with what a probe of tiled_attention found when got differs from the run's outputs and from every known
    mistake's (those expect_close names): a positive exponent, then the weights it applies."""
    known = run.get("mistakes", {}).get("outputs", {}).values()
    if matches(got, run["outputs"], tolerance, RTOL) or any(matches(got, value, tolerance, RTOL) for value in known):
        return
    found = exponents(call) or reduced_over_queries(call, run["query"].size(-2)) \
        or applied_weights(call.func, run["block_size"], run["causal"])
    if found:
        task.fail(f"{what} differs from the expected values: {found}")


def _expect_dtype_followed(task, tiled_attention):
    """bfloat16 inputs give a bfloat16 output: the running max, sum and accumulator follow the query's dtype."""
    generator = torch.Generator().manual_seed(6)
    query, key, value = (torch.randn(1, 2, 11, 4, generator=generator).bfloat16() for _ in range(3))
    what = f"{NAME}(L=11, block_size=4, causal=True) on bfloat16 inputs"
    try:
        got = tiled_attention(query, key, value, 4, True)
    except Exception as error:  # noqa: BLE001 -- float32 ran: the dtype is what differs
        task.fail(f"{what} raised {type(error).__name__} ({one_line(error, 80)}), where float32 inputs ran: "
                  f"{DTYPE_NOT_FOLLOWED}", DTYPE_NOT_FOLLOWED.slug)
    expect_tensor(task, f"{what}'s output", got, tuple(query.shape), torch.bfloat16)


@check_function(6)
def check_task_6(task, tiled_attention):
    """Check tiled_attention(query, key, value, block_size, causal) on float32 inputs against float64 values."""
    expect_callable(task, tiled_attention, NAME)
    for run in load_fixture(__package__, 6)["runs"].values():
        query, key, value = (run[name].float() for name in ("query", "key", "value"))
        length, block, causal = query.size(-2), run["block_size"], run["causal"]
        what = f"{NAME}(L={length}, block_size={block}, causal={causal})" + (
            " on scores near ±150" if "signs" in run else "")
        recorder = _Recorder(length)
        got = _called(task, what, recorder, functools.partial(tiled_attention, query.clone(), key.clone(),
                                                              value.clone(), block, causal), length)
        if recorder.sdpa:
            fail_method(task, f"{what}: {CALLS_SDPA}", CALLS_SDPA.slug)
        if recorder.full is not None and block < length:
            found = FULL_SCORES.format(dtype=recorder.dtype, shape=recorder.full, length=length, block=block)
            fail_method(task, f"{what}: {found}", FULL_SCORES.slug)
        expect_tensor(task, f"{what}'s output", got, tuple(query.shape))
        _non_finite_rows(task, what, got.detach(), run, functools.partial(
            _rows_alone, tiled_attention, query, key, value, block, causal))
        tolerance = LARGE_ATOL if "signs" in run else ATOL
        _explain(task, what, got, run, tolerance, functools.partial(tiled_attention, query, key, value, block, causal))
        expect_close(task, what, got, run["outputs"], tolerance, RTOL, run.get("mistakes", {}).get("outputs"))
    _expect_dtype_followed(task, tiled_attention)
    task.passed("a blockwise softmax with a running max and sum: exact attention, causal or not, with a partial last "
                "block, finite for scores near ±150, never an L × L tensor.")
