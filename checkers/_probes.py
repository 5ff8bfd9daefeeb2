"""Property probes: measurements of a student's output that point at a cause, whatever the code looks like.

They run only after an output differs from the expected one, and never raise: each returns what it observed
(or None), and the checker turns that into one sentence.
"""
import warnings

import torch
from torch.overrides import TorchFunctionMode


class _ReversedAxesSpy(TorchFunctionMode):
    """Records whether `.T` was read on a tensor of more than two axes (where it reverses all of them)."""

    def __init__(self):
        super().__init__()
        self.seen = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__self__", None) is torch.Tensor.T and args and args[0].dim() > 2:
            self.seen = True
        return func(*args, **(kwargs or {}))


def uses_T_on_batched(fn, *args):
    """Whether fn(*args) reads `.T` of a tensor with more than two axes (errors in fn are ignored)."""
    spy = _ReversedAxesSpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own deprecation warning for .T on N-D tensors
        try:
            with spy:
                fn(*args)
        except Exception:  # noqa: BLE001 -- only a probe
            pass
    return spy.seen


def normalised_axis(weights, atol=1e-6):
    """The axis along which weights sum to 1 (the last one first), or None when there is none."""
    weights = weights.detach().double()
    if not torch.isfinite(weights).all():
        return None
    for axis in [weights.dim() - 1] + list(range(weights.dim() - 1)):
        sums = weights.sum(axis)
        if torch.allclose(sums, torch.ones_like(sums), atol=atol):
            return axis
    return None


def _centred_log(weights):
    logs = weights.detach().double().clamp_min(1e-300).log()
    return logs - logs.mean(-1, keepdim=True)


def temperature(got, expected, rtol=1e-4):
    """r such that got = softmax(r · logits) where expected = softmax(logits), along the last axis; else None.

    A wrong scale of the scores multiplies the logits: r = 1 / (wrong scale / right scale).
    """
    if got.shape != expected.shape or not (torch.isfinite(got).all() and (got > 0).all() and (expected > 0).all()):
        return None
    mine, theirs = _centred_log(got), _centred_log(expected)
    norm = theirs.pow(2).sum()
    if norm == 0:
        return None
    ratio = (mine * theirs).sum() / norm
    if (mine - ratio * theirs).abs().max() > rtol * max(1.0, theirs.abs().max().item()):
        return None
    return ratio.item()


def depends_on(fn, x, perturbed):
    """Whether fn gives a different output for x and for perturbed (False when either call fails)."""
    try:
        return not torch.allclose(fn(x), fn(perturbed), atol=1e-9)
    except Exception:  # noqa: BLE001 -- only a probe
        return False
