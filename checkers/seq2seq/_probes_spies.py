"""Probes that watch a student's call run: which reduction's result broadcasts wrongly, which reshape failed,
in which order submodules run and what they are given.

Generic: each takes the student's function or module and a call to run, names nothing of an assignment, never raises,
and returns what it saw (or None); the check turns that into one sentence.
"""
import torch
from torch.overrides import TorchFunctionMode

# reductions whose `dim` / `keepdim` decide how their result lines up with the tensor it came from
REDUCTIONS = {"mean", "sum", "var", "std", "amax", "amin", "argmax", "argmin", "logsumexp", "prod", "norm"}
# element-wise operations that broadcast their tensor operands against each other
ELEMENTWISE = {"add", "sub", "mul", "div", "true_divide", "masked_fill", "where", "eq", "ne", "lt", "le", "gt",
               "ge", "logical_and", "logical_or"}
RESHAPES = {"view", "reshape"}


def _plain(name):
    """'sub' for '__sub__', '__rsub__', 'sub_' and 'sub' alike."""
    name = name.strip("_")
    return name[1:] if name.startswith("r") and name[1:] in ELEMENTWISE else name


def _reduced_axes(args, kwargs):
    """(dim, keepdim) of a reduction's call, dim None when it reduces everything."""
    dim = kwargs.get("dim", args[1] if len(args) > 1 and not isinstance(args[1], bool) else None)
    keepdim = kwargs.get("keepdim", next((arg for arg in args[2:] if isinstance(arg, bool)), False))
    return dim, bool(keepdim)


class _Spy(TorchFunctionMode):
    """Records reductions over one axis, the first element-wise operation that broadcasts one of their results
    wrongly, and the reshape that raised."""

    def __init__(self):
        super().__init__()
        self.reduced, self.misaligned, self.failed_reshape, self.failed_elementwise = {}, None, None, None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _plain(getattr(func, "__name__", ""))
        tensors = [arg for arg in list(args) + list(kwargs.values()) if isinstance(arg, torch.Tensor)]
        if name in ELEMENTWISE and self.misaligned is None:
            self.misaligned = self._misaligned(tensors)
        try:
            result = func(*args, **kwargs)
        except Exception:
            if name in ELEMENTWISE and self.failed_elementwise is None:
                self.failed_elementwise = [tuple(tensor.shape) for tensor in tensors]
            if name in RESHAPES and tensors:
                shape = args[1:] if len(args) > 1 else kwargs.get("shape", ())
                shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)) \
                    else tuple(shape)
                self.failed_reshape = (tuple(tensors[0].shape), shape)
            raise
        dim, keepdim = _reduced_axes(args, kwargs)
        if name in REDUCTIONS and isinstance(result, torch.Tensor) and isinstance(dim, int) and tensors:
            self.reduced[id(result)] = (result, name, dim, keepdim, tuple(tensors[0].shape))
        return result

    def _misaligned(self, tensors):
        """What a reduction's result met, when it broadcasts with another operand into something larger or not at
        all: (name, dim, keepdim, its input shape, its shape, the other shape, the broadcast shape or None)."""
        for tensor in tensors:
            seen = self.reduced.get(id(tensor))
            if seen is None or seen[0] is not tensor:
                continue
            _, _, dim, keepdim, source = seen
            shape = tuple(tensor.shape)
            axis = dim % len(source)
            other_choice = shape[:axis] + shape[axis + 1:] if keepdim else shape[:axis] + (1,) + shape[axis:]
            for other in tensors:
                if other is tensor or other.dim() == 0:
                    continue
                joined = _joined(shape, tuple(other.shape))
                # named only when the other choice of keepdim would line up: then it is the cause
                if not _lines_up(joined, shape, other) and _lines_up(_joined(other_choice, tuple(other.shape)),
                                                                     other_choice, other):
                    return seen[1:] + (shape, tuple(other.shape), joined)
        return None


def _joined(first, second):
    """The broadcast shape of two shapes, or None when they do not broadcast."""
    try:
        return tuple(torch.broadcast_shapes(first, second))
    except RuntimeError:
        return None


def _lines_up(joined, shape, other):
    """Whether a broadcast to `joined` adds no entries beyond the larger operand's (no outer product, no error)."""
    return joined is not None and torch.Size(joined).numel() <= max(torch.Size(shape).numel(), other.numel())


def _watched(run):
    spy = _Spy()
    try:
        with spy:
            run()
    except Exception:  # noqa: BLE001 -- only a probe: what was seen before the error counts
        pass
    return spy


def misaligned_reduction(run):
    """One sentence on a reduction over one axis whose result then broadcasts wrongly against another tensor (a
    dropped or kept axis that no longer lines up), or None.

    Args:
        run: a function of no arguments calling the student's code.
    """
    seen = _watched(run).misaligned
    if seen is None:
        return None
    name, dim, keepdim, source, shape, other, joined = seen
    call = f"{name}(dim={dim}{', keepdim=True' if keepdim else ''})"
    met = "cannot broadcast with it" if joined is None else f"broadcasts with it to {joined}"
    if keepdim:
        dropped = shape[:dim % len(source)] + shape[dim % len(source) + 1:]
        return (f"{call} turns a {source} tensor into {shape}, which then meets a tensor of shape {other} and {met}: "
                f"drop keepdim=True, so that the result has shape {dropped}, one value per row like the {other} "
                "tensor it meets.")
    kept = list(source)
    kept[dim % len(source)] = 1
    return (f"{call} without keepdim=True turns a {source} tensor into {shape}, which then meets a tensor of shape "
            f"{other} and {met} (broadcasting lines up the last axes): keep the reduced axis, "
            f"{name}(dim={dim}, keepdim=True), shape {tuple(kept)}.")


def failed_reshape(run):
    """(shape of the tensor, shape asked for) of the view or reshape that raised during run(), or None."""
    return _watched(run).failed_reshape


def failed_elementwise(run):
    """Shapes of the tensor operands of the first element-wise operation that raised during run(), or None."""
    return _watched(run).failed_elementwise


def call_order(module, run):
    """Names of module's direct children in the order they were called during run() (a child called twice twice)."""
    order, hooks = [], []
    for name, child in module.named_children():
        hooks.append(child.register_forward_pre_hook(lambda part, inputs, name=name: order.append(name)))
    try:
        run()
    except Exception:  # noqa: BLE001 -- only a probe: the calls before an error count
        pass
    finally:
        for hook in hooks:
            hook.remove()
    return order


def tensors_given(module, run):
    """[(submodule path, tensor)] for every tensor argument a submodule of module received during run()."""
    seen, hooks = [], []
    for path, part in module.named_modules():
        if part is module:
            continue

        def record(part, args, kwargs, path=path):
            values = list(args) + list(kwargs.values())
            seen.extend((path, value) for value in values if isinstance(value, torch.Tensor))
        hooks.append(part.register_forward_pre_hook(record, with_kwargs=True))
    try:
        run()
    except Exception:  # noqa: BLE001 -- only a probe: the calls before an error count
        pass
    finally:
        for hook in hooks:
            hook.remove()
    return seen


def square_masks(module, run, size):
    """Paths of the submodules given a (.., size, size) mask (bool, or 0/1 numbers) during run()."""
    def is_mask(tensor):
        if tensor.dim() < 2 or tensor.shape[-2:] != (size, size):
            return False
        return tensor.dtype == torch.bool or bool(((tensor == 0) | (tensor == 1) | (tensor == float("-inf"))).all())
    return sorted({path for path, tensor in tensors_given(module, run) if is_mask(tensor)})


def is_truth_value_error(error):
    """Whether error is torch refusing the truth value of a tensor of several values (`x or y`, `if x:`)."""
    return isinstance(error, RuntimeError) and "Boolean value of Tensor" in str(error)


__all__ = ["misaligned_reduction", "failed_reshape", "failed_elementwise", "call_order", "tensors_given",
           "square_masks", "is_truth_value_error"]
