"""Compare regenerated values with committed ones to a stated tolerance, never bytes.

float64 results differ in the last bits from one CPU to another (seen: 1e-16 to 4e-15 between an Intel and an
AMD EPYC machine), so an "is it current" test compares values. The tolerance is far below the checkers' own
(1e-6 and looser) and far above rounding: a value that really changed shows, a different CPU does not.
"""
import math

import torch

RTOL = 1e-12  # relative
ATOL = 1e-12  # absolute, for entries near zero (their rounding error scales with the neighbouring entries)


def differences(committed, fresh, where="", rtol=RTOL, atol=ATOL):
    """Where fresh differs from committed: a list of one-line descriptions, empty when they agree.

    Walks dicts, lists and tuples; compares tensors (dtype, shape, then values: floating point within
    atol + rtol * |committed|, NaN equal to NaN; exactly otherwise), floats the same way, anything else with ==.
    """
    if isinstance(committed, dict) and isinstance(fresh, dict):
        if committed.keys() != fresh.keys():
            return [f"{where or '/'}: keys {sorted(map(str, committed))} != {sorted(map(str, fresh))}"]
        return [d for key in committed for d in differences(committed[key], fresh[key], f"{where}/{key}", rtol, atol)]
    if isinstance(committed, (list, tuple)) and type(committed) is type(fresh):
        if len(committed) != len(fresh):
            return [f"{where}: length {len(committed)} != {len(fresh)}"]
        pairs = enumerate(zip(committed, fresh))
        return [d for i, (a, b) in pairs for d in differences(a, b, f"{where}/{i}", rtol, atol)]
    if isinstance(committed, torch.Tensor) and isinstance(fresh, torch.Tensor):
        return _tensor_differences(committed, fresh, where, rtol, atol)
    if isinstance(committed, float) and isinstance(fresh, float):
        both_nan = math.isnan(committed) and math.isnan(fresh)
        same = both_nan or math.isclose(fresh, committed, rel_tol=rtol, abs_tol=atol)
        return [] if same else [f"{where}: {fresh!r} != {committed!r}"]
    if type(committed) is not type(fresh) or committed != fresh:
        return [f"{where}: {fresh!r} != {committed!r}"]
    return []


def _tensor_differences(committed, fresh, where, rtol, atol):
    if committed.dtype != fresh.dtype or committed.shape != fresh.shape:
        return [f"{where}: {fresh.dtype} {tuple(fresh.shape)} != {committed.dtype} {tuple(committed.shape)}"]
    if not committed.is_floating_point() and not committed.is_complex():
        return [] if torch.equal(committed, fresh) else [f"{where}: entries differ"]
    if torch.allclose(fresh, committed, rtol=rtol, atol=atol, equal_nan=True):
        return []
    largest = (fresh - committed).abs().nan_to_num(nan=math.inf).max().item()
    return [f"{where}: differs by up to {largest:.3g} (tolerance {atol:g} + {rtol:g}·|committed|)"]


# Root-mean-square pixel difference, in grey levels out of 255; one cell of the positional-encoding figure's table
# changed by 0.3 gives 0.67.
FIGURE_RMS = 0.1


def figure_difference(committed_png, fresh_png, tol=FIGURE_RMS):
    """None when two PNGs agree pixel by pixel to tol (RMS), else why not (matplotlib's own image comparison)."""
    from matplotlib.testing.compare import ImageComparisonFailure, compare_images
    try:
        return compare_images(str(committed_png), str(fresh_png), tol=tol)
    except ImageComparisonFailure as failure:  # e.g. another size
        return str(failure)
