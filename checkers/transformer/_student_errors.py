"""Errors the student's code raises that torch words for its own purposes: said again in the notebook's terms.

A class put where a module goes (`activation` instead of `activation()` in nn.Sequential), and a forward called with
arguments it does not take (a block whose super().forward passes `mask` on to an attention that takes none).
"""
import inspect
import io
import os
import re
import tokenize
import types

import torch
import torch.nn as nn

from course_lib.frames import is_students, plain_lines, source, student_frames

from .._core import CheckFailure, one_line
from .. import _modules

NOT_A_MODULE = re.compile(r"(\S+) is not a Module subclass")
# Python's words for a call that does not bind to a function's parameters ("EncoderBlock.forward() got ...")
UNBOUND = re.compile(r"(\w+)\.forward\(\) (?:got an unexpected keyword argument|got multiple values for argument|"
                     r"takes \d+ positional argument|takes from \d+ to \d+ positional arguments|missing \d+ required)")


def build(task, cls, name, *args, **kwargs):
    """checkers._modules.build, naming a module class given where a module goes (the class, not an object of it)."""
    try:
        return _modules.build(task, cls, name, *args, **kwargs)
    except CheckFailure as failure:
        explain_class_as_module(task, failure, cls, [*args, *kwargs.values()])
        raise


def _after_task(failure):
    """A failure's sentence without its "Task N: " and its final full stop."""
    return str(failure).split(": ", 1)[-1].rstrip(".")


def explain_class_as_module(task, failure, cls, given):
    """Fail saying that a class must be called when the student's constructor raised torch's "X is not a Module
    subclass" for X an nn.Module class: `activation` when X is the activation class the constructor was given."""
    error = getattr(failure, "student_error", None)
    match = NOT_A_MODULE.fullmatch(str(error)) if isinstance(error, TypeError) else None
    if match is None:
        return
    try:
        defaults = [parameter.default for parameter in inspect.signature(cls).parameters.values()]
    except (TypeError, ValueError):
        defaults = []
    module_classes = [value for value in [*given, *defaults, *vars(nn).values()]
                      if inspect.isclass(value) and issubclass(value, nn.Module)]
    named = next((value for value in module_classes if torch.typename(value) == match.group(1)), None)
    if named is None:
        return
    shown = f"nn.{named.__name__}" if getattr(nn, named.__name__, None) is named else named.__name__
    activation = _activation_given(cls, given)
    fix = (f"`activation` is a class ({shown}), not a module: call it, activation(), to make the module that "
           "nn.Sequential holds" if named is activation else
           f"{shown} is a class, not a module: call it, {shown}(...), to make the module that nn.Sequential holds")
    task.fail(f"{_after_task(failure)}: {fix}.")


def _activation_given(cls, given):
    """The activation class a constructor call hands on: the activation class among its arguments, else the
    default of its `activation` parameter."""
    passed = [value for value in given if inspect.isclass(value) and issubclass(value, nn.Module)]
    if passed:
        return passed[0]
    try:
        parameter = inspect.signature(cls).parameters.get("activation")
    except (TypeError, ValueError):
        return None
    return parameter.default if parameter is not None else None


def call(task, what, module, *args, **kwargs):
    """task.call(what, module, ...), naming the call of the student's that gave a forward arguments it does not take,
    or a .view() of a tensor whose axes were reordered."""
    try:
        return task.call(what, module, *args, **kwargs)
    except CheckFailure as failure:
        explain_unbound_call(task, failure, module)
        explain_view_error(task, failure)
        raise


VIEW_ERROR = "view size is not compatible with input tensor's size and stride"


def explain_view_error(task, failure):
    """Fail saying in the notebook's terms what torch's "view size is not compatible ..." means."""
    error = getattr(failure, "student_error", None)
    if isinstance(error, RuntimeError) and VIEW_ERROR in str(error):
        task.fail(f"{what_of(failure)} raised RuntimeError: .view() was called on a tensor whose axes were reordered "
                  "by transpose or permute, whose values are no longer laid out in the new shape's order: use "
                  ".reshape(...) there (or .contiguous().view(...)).")


def _forward_class(module, name):
    """The class called name, among the classes (and their bases) of module's submodules, that defines forward."""
    for part in module.modules():
        for cls in type(part).__mro__:
            if cls.__name__ == name and "forward" in vars(cls):
                return cls
    return None


def _parameters(function):
    """A forward's parameters as text, `self` left out: "(x, return_attention=False)"."""
    signature = inspect.signature(function)
    return str(signature.replace(parameters=list(signature.parameters.values())[1:]))


def explain_unbound_call(task, failure, module):
    """Fail naming the student's line that called a forward with arguments it does not take, the forward's parameters
    (inspect.signature) and, when that line runs inside a parent's forward reached through super().forward, that."""
    error = getattr(failure, "student_error", None)
    match = UNBOUND.match(str(error)) if isinstance(error, TypeError) else None
    callee = _forward_class(module, match.group(1)) if match else None
    if callee is None:
        return
    try:
        accepted = _parameters(callee.forward)
    except (TypeError, ValueError):
        return
    head = f"{what_of(failure)} raised TypeError: {one_line(error)}"
    frames = student_frames(error.__traceback__)
    if not frames:  # the calling line is not the student's to show: what the forward takes, at least
        task.fail(f"{head}: {callee.__name__}.forward takes {accepted}.")
    filename, lineno, caller, namespace = frames[-1]
    line = code(source(filename, lineno, namespace))
    outer = frames[-2] if len(frames) > 1 else None
    through = outer is not None and "super(" in source(outer[0], outer[1], outer[3]) and outer[2] != caller
    if through:
        task.fail(f"{head}: {outer[2]} calls super().forward(...), so {caller} runs `{line}`, but "
                  f"{callee.__name__}.forward takes only {accepted}: write {outer[2]} in full rather than handing "
                  "the call on to super().forward(...).")
    task.fail(f"{head}: `{line}` in {caller} calls {callee.__name__}.forward, which takes {accepted}.")


def code(line):
    """A source line without its comment (a shape comment would read as part of the quoted call)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return line
    comment = next((token.start[1] for token in tokens if token.type == tokenize.COMMENT), None)
    return line if comment is None else line[:comment].rstrip()


def what_of(failure):
    """The call a failure of task.call names ("LinformerBlock.forward" of "... raised TypeError: ...")."""
    return _after_task(failure).split(" raised ", 1)[0]


CHECKERS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def call_site():
    """The student's frames that are running now, inside the check (a forward hook calls this), as a traceback
    whose innermost entry is the student's line being run; None when no frame of theirs is running."""
    frame, found = inspect.currentframe().f_back, []
    while frame is not None:
        filename = frame.f_code.co_filename
        if found and os.path.abspath(filename).startswith(CHECKERS):  # the check that runs the student's code
            break
        if is_students(filename):
            found.append(frame)
        frame = frame.f_back
    located = None
    for frame in found:  # innermost first: each outer entry leads to the inner ones
        located = types.TracebackType(located, frame, frame.f_lasti, frame.f_lineno)
    return located


def fail_at(task, message, slug, located):
    """Raise the task's failure showing the student's line `located` (a call_site traceback) as their frames; with
    located None, showing none of their lines (not the line of whatever error is being handled: it misleads)."""
    failure = CheckFailure(f"Task {task.number}: {message}")
    failure.diagnosis = task.diagnosis_id(message, slug)
    if located is not None:
        failure.student_error = RuntimeError("the line at fault").with_traceback(located)
        if hasattr(failure, "add_note"):  # plain Python and pytest print notes, not _render_traceback_
            failure.add_note("\n".join(["Your code does it here (most recent call last):",
                                        *plain_lines(student_frames(located))]))
    raise failure
