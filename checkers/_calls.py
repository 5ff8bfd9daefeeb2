"""Which torch functions a call makes: a context manager that counts them by name, results unchanged.

A check uses it where the task's text says how to compute something ("by hand", "without Python loops"): the names
show which functions the student's code called, the counts how the work grows with the input.
"""
from collections import Counter
from contextlib import contextmanager

import torch
from torch.overrides import TorchFunctionMode, _pop_mode

from ._core import CheckFailure

# Tensor methods are reported as Tensor.<name>, whichever of torch's classes defines them.
_TENSOR_CLASSES = ("Tensor", "TensorBase", "_TensorBase")


def qualified_name(func):
    """The name a torch function is called by: 'torch.nn.functional.layer_norm', 'torch.stack', 'Tensor.unfold',
    'Tensor.shape' (a property read), 'torch.ops.aten.layer_norm', else its module and qualified name."""
    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):  # torch.ops.aten.<name>[.<overload>]
        return f"torch.ops.{getattr(func, 'overloadpacket', func)}"
    owner = getattr(func, "__self__", None)
    if getattr(func, "__name__", "") == "__get__" and hasattr(owner, "__objclass__"):  # a property, e.g. x.shape
        return f"{_class_name(owner.__objclass__)}.{getattr(owner, '__name__', '?')}"
    if hasattr(func, "__objclass__"):  # a method written in C, e.g. Tensor.reshape
        return f"{_class_name(func.__objclass__)}.{getattr(func, '__name__', '?')}"
    module, name = getattr(func, "__module__", None) or "", getattr(func, "__qualname__", None) or repr(func)
    name = name.replace("_VariableFunctionsClass.", "")  # torch.stack and its kin
    if name.split(".")[0] in _TENSOR_CLASSES:  # a method written in Python, e.g. Tensor.split
        return "Tensor." + name.split(".", 1)[1]
    return f"{module}.{name}" if module else name


def _class_name(cls):
    name = getattr(cls, "__qualname__", "?")
    return "Tensor" if name in _TENSOR_CLASSES else name


class _Recorder(TorchFunctionMode):
    """Counts each torch function called while it is active, then runs it as it would have run."""

    def __init__(self, counts):
        super().__init__()
        self.counts = counts

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.counts[qualified_name(func)] += 1
        return func(*args, **(kwargs or {}))  # torch runs it with this mode set aside: only outermost calls count


@contextmanager
def recorded_calls():
    """Count the torch functions called inside the block: `with recorded_calls() as counts: ...`.

    Returns:
        a Counter {qualified name: number of calls}, filled while the block runs; only the outermost call is counted
        (F.layer_norm, not the torch.layer_norm it calls), and calls inside an inner recorder count in both.

    On leaving, torch's stack of function modes is as it was on entering, also when the block raised or left a mode
    of its own active.
    """
    counts = Counter()
    depth = torch._C._len_torch_function_stack()
    _Recorder(counts).__enter__()
    try:
        yield counts
    finally:
        while torch._C._len_torch_function_stack() > depth:
            _pop_mode()


class MethodFailure(CheckFailure):
    """A check failed on how the answer computes (a function its task rules out, work that grows with the input), not
    on what it computes: a later task's check looking for the part that makes its values wrong passes over it."""


def fail_method(task, problem, diagnosis=None):
    """Fail task with problem, one sentence, as a MethodFailure (its id recorded as Task.fail does: see Diagnosis)."""
    __tracebackhide__ = True
    failure = MethodFailure(f"Task {task.number}: {problem}")
    failure.diagnosis = task.diagnosis_id(problem, diagnosis)
    raise failure
