"""Differential probes: what changes in a student's output when one input or one weight changes.

Generic: each takes the student's function or module and the inputs to try, names nothing of an assignment, never
raises, and returns what it measured (or None when it could not run); the check turns that into one sentence.
"""
import math

import torch

from .._perturb import changed, quiet as _quiet


def _differ(first, second, atol=1e-9):
    return first is not None and second is not None and first.shape == second.shape and \
        not torch.allclose(first, second, atol=atol)


def _agree(first, second, atol=1e-9):
    return first is not None and second is not None and first.shape == second.shape and \
        torch.allclose(first, second, atol=atol)


def rows_coupled(fn, x):
    """Whether fn's output for one row (vector along the last axis) of x changes when only another row changes; None
    when it cannot tell. fn maps (..., D) to (..., D) row by row when it is False."""
    base = _quiet(lambda: fn(x))
    if base is None or base.shape != x.shape or x.dim() < 2:
        return None
    changed = x.clone().reshape(-1, x.size(-1))
    changed[0] = changed[0] * 3.0 + 1.0
    moved = _quiet(lambda: fn(changed.reshape(x.shape)))
    if moved is None or moved.shape != x.shape:
        return None
    return _differ(base.reshape(-1, x.size(-1))[1:], moved.reshape(-1, x.size(-1))[1:])


def shift_changes_output(fn, x, shift=2.0):
    """Whether adding the same number to every entry of each row of x changes fn's output; None when it cannot tell."""
    base, moved = _quiet(lambda: fn(x)), _quiet(lambda: fn(x + shift))
    if base is None or moved is None or base.shape != moved.shape:
        return None
    return _differ(base, moved, atol=1e-6)


def scale_power(fn, x, factor=10.0):
    """k such that fn(factor * x) = factor**k * fn(x), one k for every entry (to 1e-2), rounded to 0.01; None when
    no single k fits."""
    base, scaled = _quiet(lambda: fn(x)), _quiet(lambda: fn(x * factor))
    if base is None or scaled is None or base.shape != scaled.shape or not torch.isfinite(scaled).all():
        return None
    usable = base.abs() > 1e-6
    if not usable.any():
        return None
    ratio = scaled[usable] / base[usable]
    if (ratio <= 0).any():
        return None
    power = round(math.log(ratio.median().item()) / math.log(factor), 2)
    return power if torch.allclose(scaled, base * factor ** power, rtol=1e-2, atol=1e-6 * factor ** power) else None


def later_positions_read(fn, tokens, position, vocab_size):
    """Which earlier positions' outputs (along axis 1) change when only the token at `position` changes.

    Args:
        fn: tokens (B, L) -> (B, L, ...).
        tokens: the (B, L) token ids to start from.
        position: the position changed (in every row), to the next id modulo vocab_size.

    Returns:
        a (B, position) bool tensor, True where the output changed; None when it cannot tell.
    """
    other = tokens.clone()
    other[:, position] = (other[:, position] + 1) % vocab_size
    base, moved = _quiet(lambda: fn(tokens)), _quiet(lambda: fn(other))
    if base is None or moved is None or base.shape != moved.shape or base.dim() < 2:
        return None
    difference = (base[:, :position] - moved[:, :position]).abs()
    return difference.flatten(2).amax(-1) > 1e-9 if difference.dim() > 2 else difference > 1e-9


def inert_children(container, run):
    """Indices of the children of container (an nn.ModuleList or nn.Sequential) whose weights, all changed, leave
    run()'s output unchanged; None when the output cannot be computed."""
    base = _quiet(run)
    if base is None:
        return None
    inert = []
    for index, child in enumerate(container):
        parameters = [parameter for parameter in child.parameters() if parameter.is_floating_point()]
        if not parameters:
            continue
        with changed(parameters, lambda value: value * 1.5 + 0.1):
            moved = _quiet(run)
        if _agree(base, moved):
            inert.append(index)
    return inert
