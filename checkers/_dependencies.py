"""Probe the parts a wrong module is built from with their own tasks' checks: a wrong part is the likely cause."""
import contextlib
import importlib
import inspect
import io

from ._calls import MethodFailure
from ._core import CheckFailure, one_line


def explain_parts(task, what, parts, package):
    """Fail naming the first part that fails its own task's check.

    Args:
        parts: (description, task number, the object that check takes, or a tuple of the objects it takes) in the
            order to try; a part with a None object is skipped.
        package: the assignment's checkers package ("checkers.<assignment>"), whose check_task_<N> judge the parts.
    """
    checkers = importlib.import_module(package)  # at call time: the package imports this module's users

    for description, number, obj in parts:
        objects = obj if isinstance(obj, tuple) else (obj,)
        if any(part is None for part in objects):
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # a passing check prints its ✓ line
                getattr(checkers, f"check_task_{number}")(*objects)
        except MethodFailure:  # the part's values are right (only its method is not the task's): not the cause
            continue
        except CheckFailure as failure:
            reason = one_line(str(failure).split(": ", 1)[-1], 160)
            task.fail(f"{what}: {description} does not pass check_task_{number} ({reason}); fix Task {number} first.")
        except Exception:  # noqa: BLE001 -- only a probe
            continue


def attention_function(cls, name="scaled_softmax_attention"):
    """The function `name` that a method of cls (not of torch) calls by that name, from its globals; or None."""
    for klass in cls.__mro__:
        if klass.__module__.startswith("torch") or klass is object:
            continue
        for method in vars(klass).values():
            if inspect.isfunction(method) and name in method.__code__.co_names:
                found = method.__globals__.get(name)
                return found if inspect.isfunction(found) else None
    return None


def part_class(module, name):
    """The class of module.<name> when that is a module defined outside torch (the student's), or None."""
    part = getattr(module, name, None)
    cls = type(part)
    return None if part is None or cls.__module__.startswith("torch.") else cls
