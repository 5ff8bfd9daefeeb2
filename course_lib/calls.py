"""The functions students call from their notebooks answer a wrong call in one sentence, and an error of the student's
own code inside them with the student's frames only, never course_lib's or torch's.

Decorate such a function with @student_call. Its behaviour is unchanged: a call it would reject still raises a
TypeError (ArgumentError), an exception raised inside it propagates as before; only the way IPython shows them
changes (`_render_traceback_`, see course_lib.frames).
"""
import difflib
import functools
import inspect

import torch

from .frames import error_line, frame_lines, student_frames


class ArgumentError(TypeError):
    """A course_lib function was called with arguments it does not take; the message names the ones it takes."""

    def _render_traceback_(self):  # IPython shows these lines: the student's call and the sentence, none of ours
        return render_students_traceback(self)


def render_students_traceback(error):
    """IPython's lines for error: the frames of its traceback in the student's code, then the error's line."""
    return frame_lines(student_frames(error.__traceback__)) + [error_line(error)]


def student_call(function=None, *, calls=None):
    """Decorate a function students call: wrong arguments answer in one sentence, an error shows their frames only.

    Args:
        function: the function (or a class's __init__).
        calls: {keyword: names of the arguments the function passes to that callable}, e.g. {"loss_fn": ("logits",
            "labels")}: a callable that cannot take them is answered before the call, naming the keyword it fits.
    """
    if function is None:
        return lambda function: student_call(function, calls=calls)
    signature = inspect.signature(function)
    name = function.__qualname__.removesuffix(".__init__")

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True
        check_arguments(name, signature, args, kwargs, calls or {})
        try:
            return function(*args, **kwargs)
        except (Exception, KeyboardInterrupt) as error:  # shown differently, raised unchanged
            show_students_frames(error)  # an interrupted train() too: the student's line, not 40 of ours
            raise

    wrapper.student_call = True  # what tests/test_check_traceback.py looks for on every function the notebooks call
    return wrapper


def check_arguments(name, signature, args, kwargs, calls):
    """Raise ArgumentError, in one sentence naming the accepted arguments, unless name(*args, **kwargs) binds."""
    parameters = signature.parameters
    if not any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters.values()):
        unknown = next((keyword for keyword in kwargs if keyword not in parameters), None)
        if unknown is not None:
            keywords = [key for key, parameter in parameters.items()
                        if key != "self" and parameter.kind is not parameter.VAR_POSITIONAL]
            close = difflib.get_close_matches(unknown, keywords, n=1, cutoff=0.5)
            wanted = f"{close[0]}=…, not {unknown}=" if close else f"no {unknown}="
            raise ArgumentError(f"{name}() takes {wanted}; it takes {accepted(signature)}.")
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise ArgumentError(f"{name}(): {error}; it takes {accepted(signature)}.") from None
    for keyword in calls:
        check_callable(name, keyword, bound.arguments.get(keyword), calls)


def check_callable(name, keyword, value, calls):
    """Raise ArgumentError if value, given as keyword, cannot take the arguments name() passes to it."""
    if value is None or not callable(value) or fits(value, calls[keyword]):
        return
    other = next((key for key in calls if key != keyword and fits(value, calls[key])), None)
    given = f"{getattr(value, '__name__', type(value).__name__)}{_parameters(value)}"
    expected = f"{keyword}({', '.join(calls[keyword])})"
    if other is not None:
        raise ArgumentError(f"{name}() takes {given} as {other}=…, not {keyword}=: it calls {expected} and "
                            f"{other}({', '.join(calls[other])}).")
    raise ArgumentError(f"{name}() calls {expected}, but {keyword}= got {given}, which cannot take those arguments.")


def fits(value, names):
    """True unless value's signature rejects len(names) positional arguments (True when it has no signature)."""
    try:
        signature = _signature(value)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return True
    try:
        signature.bind(*names)
    except TypeError:
        return False
    return True


def accepted(signature):
    """'model, train_loader, lr, warmup_steps=…': the arguments a signature takes (self left out)."""
    shown = []
    for key, parameter in signature.parameters.items():
        if key == "self":
            continue
        if parameter.kind is parameter.VAR_POSITIONAL:
            shown.append(f"*{key}")
        else:
            shown.append(key if parameter.default is parameter.empty else f"{key}=…")
    return ", ".join(shown) if shown else "no arguments"


def show_students_frames(error):
    """Make IPython show error with the student's frames only (its type and its traceback are left unchanged)."""
    if hasattr(error, "_render_traceback_"):  # a CheckFailure, an ArgumentError, or done by an inner call already
        return
    try:
        error._render_traceback_ = functools.partial(render_students_traceback, error)
    except (AttributeError, TypeError):  # an exception type without a __dict__
        pass


def _signature(value):
    """value's signature; a module's is its forward's (nn.Module.__call__ takes *args, **kwargs)."""
    return inspect.signature(value.forward if isinstance(value, torch.nn.Module) else value)


def _parameters(value):
    """'(model, sources, targets)': value's parameters, without annotations."""
    try:
        signature = _signature(value)
    except (TypeError, ValueError):
        return ""
    bare = [parameter.replace(annotation=parameter.empty) for parameter in signature.parameters.values()]
    return str(signature.replace(parameters=bare, return_annotation=signature.empty))
