"""Building student modules with fixed weights, and the module-level properties every layer shares."""
import inspect

import torch
import torch.nn as nn

from ._compare import expect_tensor
from ._core import NotImplementedYet, default_dtype
from ._weights import MissingPart

REQUIRED = object()  # a pinned parameter without a default
# The constructors the tasks pin, in order, with their defaults: a student's class is built with these
# keywords, or, when its signature does not take them (renamed or positional-only), by position.
PINNED = {
    "MultiheadAttention": dict(embed_dim=REQUIRED, num_heads=REQUIRED),
    "EncoderBlock": dict(embed_dim=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED, activation=nn.ReLU,
                         dropout=0.0),
    "PositionalEncoding": dict(embed_dim=REQUIRED, max_len=5000),
    "TransformerForSequenceClassification": dict(
        input_dim=REQUIRED, embed_dim=REQUIRED, num_classes=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED,
        num_layers=REQUIRED, activation=nn.GELU, max_len=5000, dropout=0.0),
    "LinformerAttention": dict(embed_dim=REQUIRED, num_heads=REQUIRED, sequence_length=REQUIRED, proj_dim=REQUIRED),
    "LinformerBlock": dict(embed_dim=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED, sequence_length=REQUIRED,
                           proj_dim=REQUIRED, activation=nn.ReLU, dropout=0.0),
    "LinformerForSequenceClassification": dict(
        input_dim=REQUIRED, embed_dim=REQUIRED, num_classes=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED,
        num_layers=REQUIRED, sequence_length=REQUIRED, proj_dim=REQUIRED, activation=nn.GELU, max_len=5000,
        dropout=0.0),
}


def _binds(signature, args, kwargs):
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def constructor_call(cls, name, values):
    """(args, kwargs) to build cls with: the pinned keywords if its signature takes them, else by position."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):  # no signature to inspect: try the keywords
        return (), values
    pinned = PINNED.get(name, {})
    if _binds(signature, (), values) or not set(values) <= set(pinned):
        return (), values
    names = list(pinned)
    positional = tuple(values.get(key, pinned[key]) for key in names[: max(map(names.index, values), default=-1) + 1])
    if all(value is not REQUIRED for value in positional) and _binds(signature, positional, {}):
        return positional, {}
    return (), values  # neither fits: the call raises the student's own TypeError, which names the problem


def _show(value):
    return f"nn.{value.__name__}" if inspect.isclass(value) else repr(value)


def build(task, cls, name, *args, dtype=torch.float64, **kwargs):
    """Construct the student's class, in dtype, with a clear message if that fails.

    args are the pinned parameters of `name` in order; kwargs any of them by name (see PINNED).
    """
    values = dict(zip(PINNED.get(name, {}), args), **kwargs)
    args, kwargs = constructor_call(cls, name, values)
    arguments = ", ".join([_show(a) for a in args] + [f"{k}={_show(v)}" for k, v in kwargs.items()])
    with default_dtype(dtype):
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
            task.fail(f"{name}: expected a parameter for `{role}` but found none (created with bias=False, or "
                      "a LayerNorm with elementwise_affine=False?).")
        slot = slots[role]
        # the same numbers in the same order, e.g. a cls_token of shape (1, 1, D) for (D,), load as they are
        if tuple(slot.squeeze().shape) != tuple(value.squeeze().shape):
            task.fail(f"{name}: `{role}` has shape {tuple(slot.shape)}, expected {tuple(value.shape)}.")
        with torch.no_grad():
            slot.copy_(value.reshape(slot.shape))
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


def expect_output(task, what, result, shape, dtype, with_attention=False, attention_api=True):
    """Check a module's output: a tensor, or (tensor, attention) when return_attention=True.

    attention_api: whether the module has a return_attention argument (the messages mention it).
    """
    if with_attention:
        if isinstance(result, torch.Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
            task.fail(f"{what} with return_attention=True should return (outputs, attention).")
        expect_tensor(task, f"{what} outputs", result[0], shape, dtype)
        return result
    if isinstance(result, (tuple, list)):
        when = " unless return_attention=True" if attention_api else ""
        task.fail(f"{what} should return only the outputs tensor{when}, got a {type(result).__name__}.")
    return expect_tensor(task, f"{what} output", result, shape, dtype)
