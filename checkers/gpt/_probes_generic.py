"""Differential probes of a student's function or module, naming nothing of an assignment (candidates for the core).

Each runs the student's object again on changed inputs or weights (restored afterwards), never raises, and returns
what it observed (or None); the caller turns that into one sentence.
"""
import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

from .._perturb import noise, quiet, unchanged_by


def _tensors(value):
    """The tensors in value, a tensor or a (nested) list, tuple or dict of them."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in _tensors(item)]
    if isinstance(value, dict):
        return _tensors(list(value.values()))
    return []


class _Calls(TorchFunctionMode):
    """Records every torch function called inside it, with the tensors among its arguments."""

    def __init__(self):
        super().__init__()
        self.calls = []  # (func, args, kwargs)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append((func, args, kwargs or {}))
        return func(*args, **(kwargs or {}))


def torch_calls(run):
    """[(func, args, kwargs)] of the torch functions run() calls, in order, up to an error it raises."""
    spy = _Calls()
    try:
        with spy, torch.no_grad():
            run()
    except Exception:  # noqa: BLE001 -- only a probe: what ran before the error is what it tells
        pass
    return spy.calls


def unused_inputs(run, inputs):
    """Indices of the tensors in inputs that run() never hands to a torch function (a slice of one counts as it)."""
    seen = set()
    for _, args, kwargs in torch_calls(run):
        for tensor in _tensors(list(args) + list(kwargs.values())):
            seen.add(id(tensor))
            base = tensor._base
            if base is not None:
                seen.add(id(base))
    return [index for index, tensor in enumerate(inputs) if id(tensor) not in seen]


def joined_along(run, inputs):
    """[(dim, shapes)] of each torch.cat that run() applies to one of inputs (the tensors themselves)."""
    wanted, found = {id(tensor) for tensor in inputs}, []
    for func, args, kwargs in torch_calls(run):
        if func not in (torch.cat, torch.concat, torch.concatenate):
            continue
        parts = _tensors(args[0] if args else kwargs.get("tensors", []))
        if any(id(part) in wanted for part in parts):
            dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
            found.append((dim, [tuple(part.shape) for part in parts]))
    return found


def arguments_of(run, func):
    """The positional arguments of every call run() makes to func (a torch function), in order."""
    return [args for called, args, _ in torch_calls(run) if called is func]


def unused_parameters(module, run, scale=0.5):
    """Names of module's submodules none of whose parameters change run()'s output when changed (run: () -> tensor).

    A parameter shared by two submodules is changed once, under its first name."""
    before = quiet(run)
    if before is None:
        return []
    moved, change = {}, noise(torch.Generator().manual_seed(0), scale)
    for name, parameter in module.named_parameters():
        owner = name.rpartition(".")[0]
        same = unchanged_by(run, [parameter], before, change, atol=1e-12)
        moved[owner] = moved.get(owner, False) or not same
    return [owner for owner, changed in moved.items() if owner and not changed]


def feature_permutation(got, expected, atol=1e-6):
    """perm such that got[..., j] equals expected[..., perm[j]] for every j, when perm is a permutation other than
    the identity; else None."""
    if got.shape != expected.shape or not torch.isfinite(got).all():
        return None
    columns = expected.reshape(-1, expected.size(-1)).T  # (F, N)
    perm = []
    for column in got.reshape(-1, got.size(-1)).T.to(expected.dtype):
        close = ((columns - column).abs().amax(dim=-1) <= atol).nonzero().flatten().tolist()
        if not close:
            return None
        perm.append(next((index for index in close if index not in perm), close[0]))
    return perm if sorted(perm) == list(range(len(perm))) and perm != sorted(perm) else None


def reduced_along(got, source, reduce):
    """The axis of source along which reduce(source, axis) equals got, or None (e.g. an argmax over the batch)."""
    for axis in range(source.dim()):
        try:
            value = reduce(source, axis)
        except Exception:  # noqa: BLE001 -- only a probe
            continue
        if value.shape == got.shape and torch.equal(value.to(got.dtype), got):
            return axis
    return None


def shift_changes(run, tensor, shift):
    """What run(tensor + shift) does that run(tensor) does not: 'raises <Error>', 'differs' or None (the same)."""
    try:
        first = run(tensor)
    except Exception:  # noqa: BLE001 -- only a probe: the unshifted call failing says nothing of the shift
        return None
    try:
        second = run(tensor + shift)
    except Exception as error:  # noqa: BLE001 -- the probe's finding
        return f"raises {type(error).__name__}"
    same = isinstance(second, torch.Tensor) and isinstance(first, torch.Tensor) and torch.equal(first, second)
    return None if same else "differs"


def call_inputs(module, submodule_name, run):
    """The inputs (first argument) of every call of module's submodule named submodule_name during run(), or None."""
    part = dict(module.named_modules()).get(submodule_name)
    if not isinstance(part, nn.Module):
        return None
    seen = []
    hook = part.register_forward_pre_hook(lambda _, inputs: seen.append(inputs[0].detach() if inputs else None))
    try:
        with torch.no_grad():
            run()
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    finally:
        hook.remove()
    return seen


def dropout_rates(module):
    """{name: p} of every nn.Dropout in module (its own included)."""
    return {name: part.p for name, part in module.named_modules() if isinstance(part, nn.modules.dropout._DropoutNd)}
