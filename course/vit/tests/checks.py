"""What the vit check tests share: the reference namespace, a mutant's namespace (tests/slice_reference.py), timing a
check (tests/check_timing.py), the message of a check that must fail, a planted
mistake's failure named (its id too)."""
import functools

import pytest
from check_timing import cpu_seconds  # noqa: F401 -- the slice's tests import it from here
from slice_reference import expect_named as expect_named_in, reference_helpers

import checkers.vit

source, reference, variant = reference_helpers("vit")


def raised(task, obj):
    """The CheckFailure that check_task_<task>(obj) must raise, its message one line."""
    with pytest.raises(checkers.vit.CheckFailure) as failure:
        getattr(checkers.vit, f"check_task_{task}")(obj)
    message = str(failure.value)
    assert message.startswith(f"Task {task}") and "\n" not in message, message
    assert "the check itself could not run" not in message, message
    return failure.value


def failure_of(task, obj):
    """The one-line message of the CheckFailure that check_task_<task>(obj) must raise."""
    return str(raised(task, obj))


expect_named = functools.partial(expect_named_in, "vit")  # (failure, mutant): its sentence and its id
