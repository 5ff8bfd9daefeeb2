"""What every check shares: clean failures, guarded calls to student code, tensor comparisons."""
import copy
import functools
import inspect
import os
import sys
from contextlib import contextmanager
from importlib import resources

import torch
import torch.nn as nn

from course_lib.device import cpu_threads

from ._python_errors import error_sentence
from ._shapes import shape_sentence
from ._traceback import attach_student_error, render_traceback


class CheckFailure(AssertionError):
    """A check failed; the message names the task and what is wrong."""

    diagnosis = None  # "<assignment>.<task>.<slug>" when the message names a catalogued mistake (see Diagnosis)

    def _render_traceback_(self):  # IPython shows these lines: the student's line and the message, none of ours
        return render_traceback(self)


class NotImplementedYet(CheckFailure):
    """The student's code still raises NotImplementedError."""


class Diagnosis(str):
    """A named mistake's sentence with its stable slug ("mask-transposed"); `format` keeps the slug.

    A failure given one records the id "<assignment>.<task>.<slug>" as its `diagnosis`: the grader's probe reads it
    from the notebook's own check, and the class report counts it (docs/instructors.md). The student sees the sentence.
    """

    def __new__(cls, slug, sentence):
        diagnosis = super().__new__(cls, sentence)
        diagnosis.slug = slug
        _CATALOGUE.setdefault(str(sentence), slug)
        return diagnosis

    def format(self, *args, **kwargs):
        filled = str.__new__(Diagnosis, str.format(self, *args, **kwargs))  # not catalogued: its template is
        filled.slug = self.slug
        return filled


_CATALOGUE = {}  # sentence or template -> slug of every Diagnosis defined (a fixture keys a mistake by its sentence)


def catalogue(package):
    """{slug: sentence} of every named mistake an assignment's checks can give (the shared checkers' included).

    Args:
        package: the assignment's checkers package, "checkers.<assignment>".
    """
    import importlib
    import pkgutil
    shared = [f"{__package__}.{info.name}" for info in pkgutil.iter_modules(sys.modules[__package__].__path__)
              if info.name.startswith("_")]
    own = [f"{package}.{info.name}" for info in pkgutil.iter_modules(importlib.import_module(package).__path__)]
    modules = [importlib.import_module(name) for name in shared + own]
    return {value.slug: str(value) for module in modules for value in vars(module).values()
            if isinstance(value, Diagnosis)}


def slug_of(sentence):
    """The slug of a named mistake's sentence (a Diagnosis, or the plain text of one, as fixtures store it, a template
    filled in included), or None."""
    text = str(sentence)
    return getattr(sentence, "slug", None) or _CATALOGUE.get(text) or next(
        (slug for template, slug in _CATALOGUE.items() if "{" in template and _pattern(template).fullmatch(text)), None)


@functools.lru_cache(maxsize=None)
def _pattern(template):
    """A regular expression matching the template's text with any value in each of its {fields}."""
    import re
    import string
    parts = [re.escape(literal) + (".+?" if field is not None else "")
             for literal, field, _, _ in string.Formatter().parse(template)]
    return re.compile("".join(parts), re.DOTALL)


def _with_cause(failure, handled):
    """failure, with the student's exception being handled when it was raised (a CheckFailure passes its own on)."""
    if isinstance(handled, CheckFailure):
        handled = getattr(handled, "student_error", None)
    return attach_student_error(failure, handled) if isinstance(handled, Exception) else failure


def one_line(error, limit=200):
    """The first non-empty line of an error's message, shortened: messages stay one sentence, never a traceback."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = lines[0] if lines else "(no message)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Task:
    """Helpers bound to one task number, so every message starts with 'Task N'."""

    def __init__(self, number, package=None):
        self.number = number
        self.package = package  # the assignment's checkers package, whose pinned signatures build uses

    def fail(self, message, diagnosis=None):
        """Raise the one-sentence failure; raised while handling the student's exception, it shows that one's frames.

        Args:
            message: the sentence; a Diagnosis names its mistake by itself.
            diagnosis: the slug of the named mistake when the message only quotes one (see Diagnosis).
        """
        __tracebackhide__ = True  # IPython and pytest then show the message, not the checker's internals
        failure = CheckFailure(f"Task {self.number}: {message}")
        failure.diagnosis = self.diagnosis_id(message, diagnosis)
        raise _with_cause(failure, sys.exc_info()[1])

    def diagnosis_id(self, message, diagnosis=None):
        """"<assignment>.<task>.<slug>" of the named mistake a failure's message states (fail's arguments), or None."""
        slug = diagnosis or slug_of(message)
        return f"{self.package.split('.')[1]}.{self.number}.{slug}" if slug and self.package else None

    def call(self, what, fn, *args, **kwargs):
        """Call student code; turn any exception it raises into a one-sentence failure that shows their frames."""
        __tracebackhide__ = True
        try:
            return fn(*args, **kwargs)
        except NotImplementedError as error:
            raise attach_student_error(NotImplementedYet(
                f"Task {self.number} is not implemented yet: {what} raised NotImplementedError. "
                "Replace the `raise NotImplementedError()` line with your code."), error) from None
        except CheckFailure:
            raise
        except Exception as error:  # noqa: BLE001 -- any student error becomes a message
            # a shape error: the shapes on the student's line, in words; a Python error known to error_sentence: it
            sentence = shape_sentence(error) or error_sentence(error)
            self.fail(f"{what} raised {type(error).__name__}: {sentence or one_line(error)}")

    def passed(self, summary):
        print(f"✓ Task {self.number} passed: {summary}")


def _assignment_package(module):
    """checkers.<assignment> for a check defined in checkers.<assignment>.<module>, else None (every pin applies)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == __package__ and len(parts) > 2 else None


def check_function(number):
    """Decorate a check so that no exception other than a clean CheckFailure ever escapes it."""

    def decorate(check):
        @functools.wraps(check)
        def wrapper(*args, **kwargs):
            __tracebackhide__ = True
            task = Task(number, _assignment_package(check.__module__))
            try:
                with single_threaded():
                    return check(task, *args, **kwargs)
            except CheckFailure as failure:
                # Drop the checker's frames: the student sees their cell and the message, nothing else.
                raise failure.with_traceback(None) from None
            except Exception as error:  # noqa: BLE001 -- a bug in the check must not look like a student bug
                raise CheckFailure(f"Task {number}: the check itself could not run ({type(error).__name__}: "
                                   f"{one_line(error)}); "
                                   "please report this to the course staff.") from None
        return wrapper

    return decorate


def single_threaded():
    """Run torch on one CPU thread, then restore the setting.

    The checks' tensors are tiny, so extra threads never help them; on a busy machine each multi-threaded
    op can instead wait milliseconds for a descheduled worker (seen: 6 ms per layer norm on 2 loaded cores,
    which made one block's check take 0.65 s instead of 0.05 s).
    """
    return cpu_threads(1)


_FIXTURES = {}  # (file, its size and time) -> what torch.load read: a check run again copies it instead of reading


def load_fixture(package, number):
    """The expected values of one task of an assignment, computed from its reference in float64 by `make fixtures`.

    Read once per process and file (torch.load's safe unpickler takes about 9 ms a file, a copy well under one);
    each call returns a copy of its own, so a check whose student code writes into its inputs spoils no later one.

    Args:
        package: the assignment's checkers package ("checkers.<assignment>"), whose fixtures/ holds task_<N>.pt.
        number: the task number.
    """
    path = resources.files(package).joinpath("fixtures", f"task_{number}.pt")
    try:
        status = os.stat(path)
        key = (str(path), status.st_size, status.st_mtime_ns)  # a fixture written anew is read anew
    except (OSError, TypeError):  # not a plain file (a zipped package): read every time
        key = None
    if key not in _FIXTURES:
        with path.open("rb") as file:
            loaded = torch.load(file, weights_only=True)
        if key is None:
            return loaded
        _FIXTURES[key] = loaded
    return copy.deepcopy(_FIXTURES[key])


@contextmanager
def default_dtype(dtype):
    """Build student modules in float64, so their own buffers (e.g. `pe`) are computed in float64 too."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def describe_object(obj):
    """`type repr` of a student object, on one short line (a broken __repr__ included)."""
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return f"the function {obj.__name__}"
    try:
        text = one_line(repr(obj), 60)
    except Exception:  # noqa: BLE001 -- a student's __repr__ may raise
        text = "(no repr)"
    return f"{type(obj).__name__} {text}"


def expect_callable(task, obj, name):
    """Fail unless obj is a function (or other callable object), not None, a class or data."""
    if obj is None:
        task.fail(f"got None instead of `{name}`; pass the function itself, e.g. check_task_{task.number}({name}).")
    if inspect.isclass(obj) or not callable(obj):
        what = f"the class {obj.__name__}" if inspect.isclass(obj) else describe_object(obj)
        task.fail(f"expected the function `{name}`, got {what}; pass the function itself, "
                  f"e.g. check_task_{task.number}({name}).")


def expect_module_class(task, obj, name):
    """Fail unless obj is a subclass of nn.Module (the class itself, not an object of it)."""
    if obj is None:
        task.fail(f"got None instead of the class `{name}`; pass the class itself, "
                  f"e.g. check_task_{task.number}({name}).")
    if inspect.isclass(obj) and not issubclass(obj, nn.Module):
        task.fail(f"`{obj.__name__}` is a class but not an nn.Module: declare it as `class {name}(nn.Module)` and "
                  "call super().__init__() first in __init__.")
    if not inspect.isclass(obj):
        what = f"an object of class {type(obj).__name__}" if isinstance(obj, nn.Module) else describe_object(obj)
        task.fail(f"expected the class `{name}` (a subclass of nn.Module), got {what}; pass the class itself, "
                  f"e.g. check_task_{task.number}({name}), not an object.")
