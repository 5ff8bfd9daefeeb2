"""Differential probes of a student's module, generic over what the module computes: which parameters its output
ignores, with which arguments its submodules are called, how it repeats a tensor's axes. They never raise; each
returns what it observed, and the check turns that into one sentence."""
import inspect

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

from .._perturb import noise, quiet, unchanged_by


def ignored_parameters(run, slots):
    """The roles (of slots: role -> parameter) whose parameter, changed, leaves run()'s output as it was.

    Args:
        run: a callable of no arguments that runs the module (its output a tensor, or a tuple that starts with one).
        slots: {role: parameter} of the module.
    """
    before = quiet(run)
    if before is None:
        return []
    change = noise(torch.Generator().manual_seed(0))
    return [role for role, parameter in slots.items() if unchanged_by(run, [parameter], before, change)]


def _bound(module, args, kwargs):
    """{parameter: value} of one call of module.forward, by its signature (the call's own kwargs when it has none)."""
    try:
        return dict(inspect.signature(module.forward).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return dict(kwargs)


def submodule_calls(module, run, kind=nn.Module, skip=(nn.Linear,)):
    """[(name, first input's shape, {argument: value} of the others)] of every call of a submodule of module (of
    kind, not of skip) during run(), in call order."""
    calls, hooks = [], []

    def record(name):
        def hook(part, args, kwargs):
            bound = _bound(part, args, kwargs)
            first = next(iter(bound.values()), None) if bound else (args[0] if args else None)
            shape = tuple(first.shape) if isinstance(first, torch.Tensor) else None
            others = {key: value for key, value in list(bound.items())[1:] if not isinstance(value, torch.Tensor)}
            calls.append((name, shape, others))
        return hook

    for name, part in module.named_modules():
        if name and isinstance(part, kind) and not isinstance(part, skip):
            hooks.append(part.register_forward_pre_hook(record(name), with_kwargs=True))
    try:
        quiet(run)
    finally:
        for hook in hooks:
            hook.remove()
    return calls


REPEATS = {torch.repeat_interleave: "repeat_interleave", torch.Tensor.repeat_interleave: "repeat_interleave",
           torch.Tensor.repeat: "repeat", torch.Tensor.expand: "expand", torch.tile: "tile"}


class _RepeatSpy(TorchFunctionMode):
    """Records (operation, input shape, output shape) of every repeat, repeat_interleave, expand and tile."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        name = next((label for op, label in REPEATS.items() if func is op), None)
        if name and args and isinstance(args[0], torch.Tensor) and isinstance(result, torch.Tensor):
            self.seen.append((name, tuple(args[0].shape), tuple(result.shape)))
        return result


def repeats_seen(run):
    """(operation, input shape, output shape) of every repeat-like call in run(), errors ignored."""
    spy = _RepeatSpy()
    try:
        with spy, torch.no_grad():
            run()
    except Exception:  # noqa: BLE001 -- only a probe
        pass
    return spy.seen
