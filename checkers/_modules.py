"""Building student modules with fixed weights, and the module-level properties every layer shares."""
import dis
import functools
import importlib
import inspect
import pkgutil

import torch
import torch.nn as nn

from ._compare import expect_close, expect_tensor
from ._core import Diagnosis, CheckFailure, NotImplementedYet, default_dtype
from ._weights import MissingPart

REQUIRED = object()  # a pinned parameter without a default


def _own_pinned(package):
    """PINNED of the assignment's checkers package, {} when it pins nothing (its _pinned module is absent)."""
    try:
        return importlib.import_module(f"{package}._pinned").PINNED
    except ModuleNotFoundError as error:
        if error.name != f"{package}._pinned":
            raise
        return {}


@functools.cache
def pinned(package=None):
    """{class name: {parameter: default or REQUIRED}}: the constructors the tasks pin, in order, with their defaults.

    A student's class is built with these keywords, or, when its signature does not take them (renamed or
    positional-only), by position. Each assignment pins its own in checkers/<assignment>/_pinned.py.

    Args:
        package: the assignment's checkers package ("checkers.<assignment>"); None: every assignment's, for a caller
            that builds classes by name alone (a class two assignments share is pinned alike in both).
    """
    if package is not None:
        return _own_pinned(package)
    merged = {}
    packages = [found.name for found in pkgutil.iter_modules(importlib.import_module(__package__).__path__)
                if found.ispkg]
    for package in packages:
        for name, signature in _own_pinned(f"{__package__}.{package}").items():
            if merged.setdefault(name, signature) != signature:
                raise ValueError(f"{name} is pinned differently by two assignments: give it one signature")
    return merged


def _binds(signature, args, kwargs):
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def constructor_call(cls, name, values, package=None):
    """(args, kwargs) to build cls with: the pinned keywords if its signature takes them, else by position.

    package: the assignment's checkers package whose pins apply (see pinned).
    """
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):  # no signature to inspect: try the keywords
        return (), values
    pins = pinned(package).get(name, {})
    if _binds(signature, (), values) or not set(values) <= set(pins):
        return (), values
    names = list(pins)
    positional = tuple(values.get(key, pins[key]) for key in names[: max(map(names.index, values), default=-1) + 1])
    if all(value is not REQUIRED for value in positional) and _binds(signature, positional, {}):
        return positional, {}
    return (), values  # neither fits: the call raises the student's own TypeError, which names the problem


def _show(value):
    return f"nn.{value.__name__}" if inspect.isclass(value) else repr(value)


# Said of a tensor whose dtype does not follow the default dtype (an assignment's known mistakes quote it).
FIXED_DTYPE = Diagnosis(
    "fixed-dtype",
    "a tensor created with a fixed dtype (NumPy's float64, or dtype=torch.float64) keeps it when the rest "
    "of the model follows the default dtype: build it with torch functions in the default dtype, or "
    "convert it with .to(torch.get_default_dtype()).")
# Said of a module without a parameter its role needs (a known mistake quotes it: a projection without a bias).
NO_PARAMETER = Diagnosis(
    "missing-parameter",
    "expected a parameter for `{role}` but found none (created with bias=False, or an nn.LayerNorm with "
    "elementwise_affine=False?).")
# Said of a block whose dropout still acts in eval mode (every assignment's block checks say it).
DROPOUT_IN_EVAL = Diagnosis(
    "dropout-in-eval",
    "dropout stays active in eval mode: use the nn.Dropout module self.dropout, which switches off "
    "under .eval().")
# Said of a forward that changes its input (a known mistake quotes it with name "x").
ADDED_IN_PLACE = Diagnosis(
    "added-in-place",
    "forward modified its input `{name}` in place (e.g. `x += ...`); build a new tensor instead.")


def _tensor_attributes(module):
    """(name, tensor) for every parameter, buffer and plain tensor attribute of module and its submodules."""
    for prefix, part in module.named_modules():
        for key, value in vars(part).items():
            if isinstance(value, torch.Tensor):
                yield f"{prefix}.{key}".lstrip("."), value
        for key, value in list(part._parameters.items()) + list(part._buffers.items()):
            if value is not None:
                yield f"{prefix}.{key}".lstrip("."), value


def _other_dtype(module, dtype):
    """The first (name, tensor) of module that is floating point but not of dtype, or None."""
    return next(((key, value) for key, value in _tensor_attributes(module)
                 if value.is_floating_point() and value.dtype != dtype), None)


def _forward_is_stub(cls):
    """Whether cls's forward is still unwritten: nn.Module's own, or one that only raises NotImplementedError (a
    module without tensors whose forward is written lacks its parameters; the task's check says which)."""
    forward = getattr(cls, "forward", None)
    if forward is nn.Module.forward:
        return True
    code = getattr(forward, "__code__", None)
    if code is None:
        return True  # not a Python function: nothing to tell from it
    # the first instruction that does something loads NotImplementedError: the skeleton's raise comes first (dead code
    # after it, as in the notebooks' stubs, may name other things)
    first = next((ins for ins in dis.get_instructions(code) if ins.opname not in SETUP_OPS), None)
    return first is not None and first.opname in ("LOAD_GLOBAL", "LOAD_NAME") and \
        str(first.argval).endswith("NotImplementedError")


SETUP_OPS = {"RESUME", "NOP", "CACHE", "EXTENDED_ARG", "COPY_FREE_VARS", "MAKE_CELL", "PUSH_NULL"}


def build(task, cls, name, *args, dtype=torch.float64, native=False, **kwargs):
    """Construct the student's class, in dtype, with a clear message if that fails.

    args are the pinned parameters of `name` in order; kwargs any of them by name (see pinned: the task's
    assignment's pins).
    native: leave the module as built under the default dtype `dtype`, without the .to(dtype) that would hide a
    tensor of a fixed dtype (see expect_native_output).
    """
    package = getattr(task, "package", None)
    values = dict(zip(pinned(package).get(name, {}), args), **kwargs)
    args, kwargs = constructor_call(cls, name, values, package)
    arguments = ", ".join([_show(a) for a in args] + [f"{k}={_show(v)}" for k, v in kwargs.items()])
    with default_dtype(dtype):
        module = task.call(f"{name}({arguments})", cls, *args, **kwargs)
        if not isinstance(module, nn.Module):
            task.fail(f"{name}(...) should create an nn.Module; did {name} forget to subclass nn.Module?")
        if next(_tensor_attributes(module), None) is None and _forward_is_stub(cls):  # a tensor is code, not a stub
            raise NotImplementedYet(f"Task {task.number} is not implemented yet: {name}.__init__ creates no layers "
                                    "(replace the `# YOUR CODE HERE` comment with your code).")
        if native:
            return module
    # like module.to(dtype), but leaving complex tensors complex (a RoPE table of e^{i p theta}, say), which .to(dtype)
    # would cast to real, dropping their imaginary parts
    return module._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)


def expect_native_output(task, module, name, what, run, expected, atol=1e-4, rtol=1e-4, **options):
    """run(): module's forward on float32 input; module was built under the default dtype float32 (native=True).

    The output must be float32, of expected's shape, and close to the float64 values (float32 carries about
    7 digits; through a few layers the rounding stays far below 1e-4). When the forward fails or gives another
    dtype and a tensor of module has a fixed other dtype, that tensor is named: it is the usual cause.
    """
    other = _other_dtype(module, torch.float32)
    blame = None if other is None else (f"{name}.{other[0]} has dtype {other[1].dtype} in a module built with the "
                                        f"default dtype torch.float32: {FIXED_DTYPE}")
    try:
        result = run()
    except CheckFailure:
        if blame:
            task.fail(blame, FIXED_DTYPE.slug)
        raise
    first = result[0] if isinstance(result, (tuple, list)) and result else result
    if blame and isinstance(first, torch.Tensor) and first.dtype != torch.float32:
        task.fail(blame, FIXED_DTYPE.slug)
    outputs = expect_output(task, what, result, expected.shape, torch.float32, **options)
    outputs = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
    expect_close(task, f"{what} (float32, compared with float64 values)", outputs, expected, atol, rtol)
    return outputs


def load(task, module, slots_of, weights, name):
    """Copy fixture weights into the student's module by role (see _weights)."""
    try:
        slots = slots_of(module)
    except MissingPart as missing:
        task.fail(f"{name}: {missing}.", missing.diagnosis)
    for role, value in weights.items():
        if role not in slots:
            task.fail(f"{name}: {NO_PARAMETER.format(role=role)}", NO_PARAMETER.slug)
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
        task.fail(ADDED_IN_PLACE.format(name=name))


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
