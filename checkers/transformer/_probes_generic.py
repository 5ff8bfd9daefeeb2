"""Differential probes of a student's function or module, naming no assignment: each runs the student's object on
changed inputs, weights or arguments and returns what it observed (or None); the checker words it.

They never raise: a probe that cannot run observes nothing.
"""
import torch
from torch.overrides import TorchFunctionMode

from .._perturb import noise, quiet, unchanged_by


def outcome(fn, *args, **kwargs):
    """("ok", result) or ("raised", the exception) of fn(*args, **kwargs), under no_grad."""
    try:
        with torch.no_grad():
            return "ok", fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 -- only a probe: an error is what it observes
        return "raised", error


def constant_factor(got, expected, atol=1e-6):
    """c with got = c · expected (c not 1), fitted by least squares and confirmed, else None."""
    if got.shape != expected.shape or not torch.isfinite(got).all():
        return None
    norm = expected.double().pow(2).sum()
    if norm == 0:
        return None
    factor = ((got.double() * expected.double()).sum() / norm).item()
    if abs(factor - 1) < 1e-6 or not torch.allclose(got.double(), factor * expected.double(), atol=atol):
        return None
    return factor


def unused_weights(module, run, roles=None, atol=1e-9):
    """Names of the module's weights (parameters of 1 axis or more, biases left out: a key bias changes no softmax)
    whose change leaves run(module)'s tensor unchanged; [] when run fails."""
    before = quiet(lambda: run(module))
    if before is None:
        return []
    change = noise(torch.Generator().manual_seed(0))
    return [name for name, parameter in module.named_parameters()
            if not name.endswith("bias") and (roles is None or name in roles)
            and unchanged_by(lambda: run(module), [parameter], before, change, atol=atol)]


def _tensor(result):
    return result[0] if isinstance(result, (tuple, list)) and result else result


def aliased_modules(module):
    """(first name, second name) of a submodule with parameters that the module holds under two names, or None."""
    seen = {}
    for name, part in module.named_modules(remove_duplicate=False):
        if not name or not any(True for _ in part.parameters()):
            continue
        if id(part) in seen and not name.startswith(seen[id(part)] + "."):
            return seen[id(part)], name
        seen.setdefault(id(part), name)
    return None


def parts_unchanged_by(build, name, values):
    """Whether modules built with each value of the keyword `name` hold parameters and buffers of the same names and
    shapes (the argument changes nothing that is built); None when a build fails."""
    layouts = []
    for value in values:
        state, built = outcome(build, **{name: value})
        if state != "ok":
            return None
        layouts.append(sorted((key, tuple(tensor.shape)) for key, tensor in
                              [*built.named_parameters(), *built.named_buffers()]))
    return all(layout == layouts[0] for layout in layouts)


class _LastOp(TorchFunctionMode):
    """Records the torch operation being run and its tensor operands, so the one that raised is known."""

    def __init__(self):
        super().__init__()
        self.last = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        operands = [arg for arg in args if isinstance(arg, torch.Tensor)]
        operands += [arg for value in args if isinstance(value, (tuple, list)) for arg in value
                     if isinstance(arg, torch.Tensor)]
        self.last = (getattr(func, "__name__", str(func)), operands)
        return func(*args, **(kwargs or {}))


def failing_operation(fn, *args, **kwargs):
    """(operation name, [its tensor operands]) of the torch operation that made fn(*args, **kwargs) raise, or None."""
    spy = _LastOp()
    try:
        with torch.no_grad(), spy:
            fn(*args, **kwargs)
    except Exception:  # noqa: BLE001 -- only a probe: the error is what it looks for
        return spy.last
    return None


def holds_values_of(tensor, other):
    """Whether tensor holds exactly other's numbers, in any layout (a view, transpose or permute of it)."""
    return tensor.numel() == other.numel() and tensor.dtype == other.dtype and \
        torch.equal(tensor.detach().flatten().sort().values, other.detach().flatten().sort().values)


def varies_in_train_mode(module, x, seed=1):
    """Whether two train-mode passes of module(x) differ (something random, e.g. dropout, reaches the output)."""
    module.train()
    torch.manual_seed(seed)
    first, second = outcome(module, x), outcome(module, x)
    if first[0] != "ok" or second[0] != "ok":
        return None
    return not torch.allclose(_tensor(first[1]), _tensor(second[1]), atol=1e-9)
