"""What every check shares: clean failures, guarded calls to student code, tensor comparisons."""
import functools
import inspect
from contextlib import contextmanager
from importlib import resources

import torch
import torch.nn as nn


class CheckFailure(AssertionError):
    """A check failed; the message names the task and what is wrong."""


class NotImplementedYet(CheckFailure):
    """The student's code still raises NotImplementedError."""


class Task:
    """Helpers bound to one task number, so every message starts with 'Task N'."""

    def __init__(self, number):
        self.number = number

    def fail(self, message):
        __tracebackhide__ = True  # IPython and pytest then show the message, not the checker's internals
        raise CheckFailure(f"Task {self.number}: {message}")

    def call(self, what, fn, *args, **kwargs):
        """Call student code; turn any exception it raises into a one-sentence failure."""
        __tracebackhide__ = True
        try:
            return fn(*args, **kwargs)
        except NotImplementedError:
            raise NotImplementedYet(f"Task {self.number} is not implemented yet: {what} raised NotImplementedError. "
                                    "Replace the `raise NotImplementedError()` line with your code.") from None
        except CheckFailure:
            raise
        except Exception as error:  # noqa: BLE001 -- any student error becomes a message
            self.fail(f"{what} raised {type(error).__name__}: {error}")

    def passed(self, summary):
        print(f"✓ Task {self.number} passed: {summary}")


def check_function(number):
    """Decorate a check so that no exception other than a clean CheckFailure ever escapes it."""

    def decorate(check):
        @functools.wraps(check)
        def wrapper(*args, **kwargs):
            __tracebackhide__ = True
            task = Task(number)
            try:
                return check(task, *args, **kwargs)
            except CheckFailure:
                raise
            except Exception as error:  # noqa: BLE001 -- a bug in the check must not look like a student bug
                raise CheckFailure(f"Task {number}: the check itself could not run ({type(error).__name__}: {error}); "
                                   "please report this to the course staff.") from None
        return wrapper

    return decorate


def load_fixture(number):
    """The expected values of one task, computed from the reference in float64 by `make fixtures`."""
    with resources.files("checkers").joinpath("fixtures", f"task_{number}.pt").open("rb") as file:
        return torch.load(file, weights_only=True)


@contextmanager
def default_dtype(dtype):
    """Build student modules in float64, so their own buffers (e.g. `pe`) are computed in float64 too."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def expect_callable(task, obj, name):
    if obj is None:
        task.fail(f"got None instead of `{name}`; pass the function itself, e.g. check_task_{task.number}({name}).")
    if inspect.isclass(obj) or not callable(obj):
        task.fail(f"expected the function `{name}`, got {type(obj).__name__} {obj!r:.60}.")


def expect_module_class(task, obj, name):
    if obj is None:
        task.fail(f"got None instead of the class `{name}`; pass the class itself, e.g. check_task_{task.number}({name}).")
    if not (inspect.isclass(obj) and issubclass(obj, nn.Module)):
        what = "an instance" if isinstance(obj, nn.Module) else type(obj).__name__
        task.fail(f"expected the class `{name}` (a subclass of nn.Module), got {what}; pass the class, not an object.")
