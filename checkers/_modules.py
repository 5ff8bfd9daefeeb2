"""Building student modules with fixed weights, and the module-level properties every layer shares."""
import torch
import torch.nn as nn

from ._compare import expect_tensor
from ._core import NotImplementedYet, default_dtype
from ._weights import MissingPart


def build(task, cls, name, *args, dtype=torch.float64, **kwargs):
    """Construct the student's class, in dtype, with a clear message if that fails."""
    with default_dtype(dtype):
        arguments = ", ".join([repr(a) for a in args] + [f"{k}={getattr(v, '__name__', v)!r}" for k, v in kwargs.items()])
        module = task.call(f"{name}({arguments})", cls, *args, **kwargs)
    if not isinstance(module, nn.Module):
        task.fail(f"{name}(...) should create an nn.Module; did {name} forget to subclass nn.Module?")
    if next(module.parameters(), None) is None and next(module.buffers(), None) is None:
        raise NotImplementedYet(f"Task {task.number} is not implemented yet: {name}.__init__ creates no layers "
                                "(replace the `# YOUR CODE HERE` comment with your code).")
    return module.to(dtype)


def load(task, module, slots_of, weights, name):
    """Copy fixture weights into the student's module by role (see _weights)."""
    try:
        slots = slots_of(module)
    except MissingPart as missing:
        task.fail(f"{name}: {missing}.")
    for role, value in weights.items():
        if role not in slots:
            task.fail(f"{name}: expected a parameter for `{role}` but found none (is the bias missing?).")
        if tuple(slots[role].shape) != tuple(value.shape):
            task.fail(f"{name}: `{role}` has shape {tuple(slots[role].shape)}, expected {tuple(value.shape)}.")
        with torch.no_grad():
            slots[role].copy_(value)
    return module


def expect_gradients_everywhere(task, module, loss, inputs, name):
    """Fail unless backward from loss gives a finite gradient to every parameter and to the input."""
    module.zero_grad(set_to_none=True)
    task.call(f"backward through {name}", loss.backward)
    for parameter_name, parameter in module.named_parameters():
        if parameter.requires_grad and (parameter.grad is None or not torch.isfinite(parameter.grad).all()):
            task.fail(f"no gradient reaches `{parameter_name}`: is it created but never used in forward, "
                      "or used through .data / .detach()?")
    if inputs.grad is None:
        task.fail(f"no gradient reaches the input of {name}: is part of forward detached?")


def expect_unchanged(task, before, after, name="x"):
    if not torch.equal(before, after):
        task.fail(f"forward modified its input `{name}` in place (e.g. `x += ...`); build a new tensor instead.")


def expect_output(task, what, result, shape, dtype, with_attention=False):
    """Check a module's output: a tensor, or (tensor, attention) when return_attention=True."""
    if with_attention:
        if isinstance(result, torch.Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
            task.fail(f"{what} with return_attention=True should return (outputs, attention).")
        expect_tensor(task, f"{what} outputs", result[0], shape, dtype)
        return result
    if isinstance(result, (tuple, list)):
        task.fail(f"{what} should return only the outputs tensor unless return_attention=True, got a tuple.")
    return expect_tensor(task, f"{what} output", result, shape, dtype)
