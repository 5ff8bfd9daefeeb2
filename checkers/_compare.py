"""Type, shape, dtype and value checks of student tensors, with messages that say what differs."""
import torch

from ._core import Diagnosis, slug_of
from ._relations import shape_relation, value_relation

DTYPE_NOT_FOLLOWED = Diagnosis(
    "dtype-not-followed",
    "the dtype should follow the input (a tensor created inside your code with a fixed dtype, or a value computed in "
    "float32 and never cast back, e.g. with .type_as(x), can cause this).")


def describe(value):
    return "None" if value is None else type(value).__name__


def expect_tensor(task, what, value, shape=None, dtype=None):
    """Fail unless value is a tensor of the given shape and dtype."""
    if value is None:
        task.fail(f"{what} is None: is a `return` statement missing?")
    if type(value).__module__ == "numpy":
        task.fail(f"{what} is a NumPy array; compute it with torch so it stays a tensor and gradients can flow.")
    if not isinstance(value, torch.Tensor):
        task.fail(f"{what} should be a torch.Tensor, got {describe(value)}.")
    if shape is not None and tuple(value.shape) != tuple(shape):
        relation = shape_relation(value.shape, shape)
        task.fail(f"{what} has shape {tuple(value.shape)}, expected {tuple(shape)}"
                  + (f": {relation}." if relation else "."))
    if dtype is not None and value.dtype != dtype:
        task.fail(f"{what} has dtype {value.dtype} for {dtype} inputs; {DTYPE_NOT_FOLLOWED}", DTYPE_NOT_FOLLOWED.slug)
    return value


def expect_pair(task, what, value, names):
    """Fail unless value is a tuple of two items (e.g. (res, attention))."""
    if value is None:
        task.fail(f"{what} returned None: is the `return {names.strip('()')}` line missing?")
    if isinstance(value, torch.Tensor):
        task.fail(f"{what} returned a single tensor; it should return a tuple {names}.")
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        size = f" of length {len(value)}" if isinstance(value, (tuple, list)) else ""
        task.fail(f"{what} should return a tuple {names}, got {describe(value)}{size}.")
    return value


def expect_finite(task, what, value):
    bad = ~torch.isfinite(value.detach())
    if bad.any():
        index = tuple(bad.nonzero()[0].tolist())
        task.fail(f"{what} contains {int(bad.sum())} NaN or inf value(s), the first at index {index}.")


def _worst(got, expected, atol, rtol):
    excess = (got - expected).abs() - (atol + rtol * expected.abs())
    flat = int(excess.argmax())
    return excess.max().item() > 0, _unravel(flat, tuple(got.shape))


def _unravel(flat, shape):
    """The index tuple of entry `flat` of a row-major tensor of this shape (torch.unravel_index's first call
    imports torch's lazy modules, about a second, which a student's first check would pay)."""
    index = []
    for size in reversed(shape):
        flat, position = divmod(flat, size)
        index.append(position)
    return tuple(reversed(index))


def matches(got, expected, atol, rtol):
    """True when got has expected's shape and every entry is within atol + rtol * |expected|."""
    if tuple(got.shape) != tuple(expected.shape) or not torch.isfinite(got).all():
        return False
    return not _worst(got.detach().to(expected.dtype), expected, atol, rtol)[0]


def signatures(case, key):
    """The outputs of known mistakes stored beside an expected output (see tools/make_fixtures.py)."""
    return case.get("mistakes", {}).get(key)


def diagnose(task, what, got, mistakes, atol, rtol):
    """Fail naming the mistake if got matches the output of a known mistake; otherwise return."""
    for diagnosis, signature in (mistakes or {}).items():
        if matches(got, signature, atol, rtol):
            task.fail(f"{what} is wrong: {diagnosis}", slug_of(diagnosis))


def expect_close(task, what, got, expected, atol, rtol, mistakes=None):
    """Fail unless got matches expected; name a known mistake when got matches one of its signatures.

    Args:
        mistakes: optional dict "diagnosis sentence" -> the output that mistake would produce.
    """
    expect_finite(task, what, got)
    got = got.detach().to(device=expected.device, dtype=expected.dtype)
    too_far, index = _worst(got, expected, atol, rtol)
    if not too_far:
        return
    diagnose(task, what, got, mistakes, atol, rtol)
    deviation = (got - expected).abs().max().item()
    relation = value_relation(got, expected)  # what no known mistake explained, said as a relation when one holds
    task.fail(f"{what} differs from the expected values: {relation + '; ' if relation else ''}"
              f"largest deviation {deviation:.3g} at index {index} "
              f"(got {got[index].item():.6g}, expected {expected[index].item():.6g}; "
              f"tolerance {atol:g} + {rtol:g}·|expected|).")
