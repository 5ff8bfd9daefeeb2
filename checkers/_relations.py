"""How a wrong tensor relates to the expected one, said in words, for the checks' last resort when no known mistake and
no probe of the task explains it: a constant factor or offset, a per-feature offset or factor, a factor per row,
probabilities where scores were expected, the transpose, slices reordered along one axis, or, for a wrong shape, the
expected axes in another order, one missing or one too many. Each finding is a relation that holds for every entry
(to RELATIVE of the largest expected value), so what is said is what was seen; a cause is named only where the
relation leaves one.
"""
import math

import torch

RELATIVE = 1e-4  # a relation holds when it reproduces every entry to this share of the largest |expected|
SQUARE_ROOTS = range(2, 4097)  # a factor c with c² (or 1/c²) one of these is said as a square root


def _close(a, b, scale):
    return a.shape == b.shape and bool(((a - b).abs() <= RELATIVE * scale + 1e-12).all())


def _factor_words(c):
    """c, and its square root form when c² or 1/c² is a whole number (√k, 1/√k)."""
    for square, form in ((c * c, "√{}"), (1 / (c * c), "1/√{}")):
        k = round(square)
        if k in SQUARE_ROOTS and abs(square - k) < 1e-3 * k and abs(math.sqrt(k) - round(math.sqrt(k))) > 1e-9:
            return f"{c:.4g} = {form.format(k)}"
    return f"{c:.4g}"


def value_relation(got, expected):
    """A sentence saying how got (same shape, finite) relates to expected, or None when no relation holds."""
    if got.shape != expected.shape or got.numel() < 2 or not torch.isfinite(got).all():
        return None
    got, expected = got.detach().double().cpu(), expected.detach().double().cpu()
    scale = float(expected.abs().max())
    if scale == 0:
        return None
    for finding in (_zero, _factor, _offset, _transposed, _probabilities, _per_feature, _per_row, _reordered):
        sentence = finding(got, expected, scale)
        if sentence:
            return sentence
    return None


def _zero(got, expected, scale):
    return "it is zero everywhere" if _close(got, torch.zeros_like(got), scale) else None


def _factor(got, expected, scale):
    c = float((got * expected).sum() / (expected * expected).sum())
    if abs(c - 1) < 1e-3 or not _close(got, c * expected, scale):
        return None
    if abs(c + 1) < 1e-3:
        return "it is the expected values with the sign flipped"
    return f"every value is {_factor_words(c)} times the expected one: one factor is off"


def _offset(got, expected, scale):
    shift = float((got - expected).mean())
    if abs(shift) <= RELATIVE * scale or not _close(got, expected + shift, scale):
        return None
    return f"every value is the expected one plus the same {shift:.4g}"


def _transposed(got, expected, scale):
    if got.dim() >= 2 and got.shape[-1] == got.shape[-2] and _close(got, expected.transpose(-1, -2), scale):
        return "it is the expected values transposed: its last two axes are swapped"
    return None


def _probabilities(got, expected, scale):
    rows_sum_to_one = bool((got >= -1e-6).all()) and _close(got.sum(-1), torch.ones_like(got.sum(-1)), 1.0)
    if not rows_sum_to_one or _close(expected.sum(-1), torch.ones_like(expected.sum(-1)), 1.0):
        return None
    if _close(got, expected.softmax(-1), 1.0):
        return ("it is the softmax of the expected values over the last axis: probabilities where the raw scores "
                "(logits) are expected; return them before the softmax")
    return "its rows are non-negative and sum to 1 (probabilities), which the expected rows do not"


def _per_feature(got, expected, scale):
    """The same vector added to (or multiplying) every position: a per-feature term applied differently."""
    if got.dim() < 2:
        return None
    rows, expected_rows = got.reshape(-1, got.shape[-1]), expected.reshape(-1, got.shape[-1])
    difference = rows - expected_rows
    if _close(difference, difference[:1].expand_as(difference), scale):
        return ("every position is off by the same vector over the last axis (a per-feature offset): a term that "
                "depends only on the feature, such as a bias or shift, is added where it should not be, or missing")
    if bool((expected_rows.abs() > 1e-9).all()):
        ratio = rows / expected_rows
        if _close(ratio * expected_rows, ratio[:1] * expected_rows, scale):
            return ("every position is scaled by the same factors over the last axis (a per-feature factor): a "
                    "per-feature weight is applied where it should not be, or missing")
    return None


def _per_row(got, expected, scale):
    """Each row (over the last axis) is the expected row times a factor of its own."""
    rows, expected_rows = got.reshape(-1, got.shape[-1]), expected.reshape(-1, got.shape[-1])
    weights = (expected_rows * expected_rows).sum(-1, keepdim=True).clamp_min(1e-300)
    factors = (rows * expected_rows).sum(-1, keepdim=True) / weights  # (rows, 1)
    if min(rows.shape) < 2 or not _close(rows, factors * expected_rows, scale) or float(factors.std()) < 1e-6:
        return None
    return (f"each row over the last axis is the expected row times a factor of its own (from "
            f"{float(factors.min()):.4g} to {float(factors.max()):.4g}): the rows are scaled or normalised differently")


def _reordered(got, expected, scale):
    """The expected slices along one axis, in another order."""
    for axis in range(got.dim()):
        count = got.shape[axis]
        if count < 2 or count > 64:
            continue
        slices, wanted = got.unbind(axis), expected.unbind(axis)
        order = [next((j for j in range(count) if _close(slices[i], wanted[j], scale)), None) for i in range(count)]
        if None not in order and sorted(order) == list(range(count)) and order != list(range(count)):
            moved = next(i for i in range(count) if order[i] != i)
            return (f"it holds the expected values in another order along axis {axis}: its index {moved} holds the "
                    f"expected index {order[moved]}")
    return None


def shape_relation(got, expected):
    """A sentence saying how shape got relates to shape expected, or None."""
    got, expected = tuple(got), tuple(expected)
    if got == expected:
        return None
    if sorted(got) == sorted(expected) and len(got) == len(expected):
        swapped = [axis for axis in range(len(got)) if got[axis] != expected[axis]]
        if len(swapped) == 2:
            return (f"the expected axes {swapped[0]} and {swapped[1]} are swapped (sizes {expected[swapped[0]]} and "
                    f"{expected[swapped[1]]})")
        return "it holds the expected axes in another order"
    if len(got) == len(expected) - 1:
        axes = [axis for axis in range(len(expected)) if expected[:axis] + expected[axis + 1:] == got]
        if axes:
            which = f"axis {axes[0]}" if len(axes) == 1 else f"one of the axes {', '.join(map(str, axes))}"
            return (f"{which} of the expected shape (size {expected[axes[0]]}) is missing: it was reduced (a mean, "
                    "sum or index over it) or never made")
    if len(got) == len(expected) + 1:
        for axis in range(len(got)):
            if got[:axis] + got[axis + 1:] == expected:
                kept = "kept by a slice such as [:, :1], or by keepdim=True, " if got[axis] == 1 else ""
                return f"it has an extra axis {axis} of size {got[axis]}: {kept}where the expected shape has none"
    return None
