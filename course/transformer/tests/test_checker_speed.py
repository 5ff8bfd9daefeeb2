"""Checks are instant: 1-5 and 7 on the reference within 1 s, 6 and 8 on a perfect model within 10 s (CPU time).

Each check runs once to warm up (imports, first allocations), then five timed times; their median must be
within the limit (tests/check_timing.py says why not the maximum). `pytest -s` prints the median and maximum.
"""
import pytest

import checkers.transformer as checkers
from checkers.transformer import CheckFailure
from check_timing import cpu_seconds
from .palindrome_models import MirrorModel
from .student_objects import STUDENT_OBJECTS
from .unnamed_mistakes import UNNAMED

pytestmark = pytest.mark.full  # how long each check takes: repeated runs, CPU time


def expect_fast(task, check, limit):
    seconds = cpu_seconds(check)
    assert seconds <= limit, f"check_task_{task} took a median {seconds:.2f} s of CPU time (limit {limit} s)"


@pytest.mark.parametrize("task", sorted(STUDENT_OBJECTS))
def test_reference_checks_take_under_a_second(task, reference):
    objects = [reference[name] for name in STUDENT_OBJECTS[task]]
    expect_fast(task, lambda: getattr(checkers, f"check_task_{task}")(*objects), limit=1.0)


@pytest.mark.parametrize("task", [6, 8])
def test_trained_model_checks_take_under_ten_seconds(task, monkeypatch):
    import checkers.transformer.trained as trained
    monkeypatch.setattr(trained, "expect_model_class", lambda *args: None)  # a hand-built model: accuracy only
    model = MirrorModel() if task == 6 else MirrorModel(seq_len=32)
    expect_fast(task, lambda: getattr(checkers, f"check_task_{task}")(model), limit=10.0)


def _failing(check, student_objects):
    def run():
        with pytest.raises(CheckFailure):
            check(*student_objects)
    return run


@pytest.mark.parametrize("task, student_objects, words", UNNAMED,
                         ids=lambda value: value[0].__name__ if isinstance(value, tuple) else None)
def test_diagnosing_an_unnamed_mistake_takes_under_a_second(task, student_objects, words):
    """The property probes run only after a mismatch; with them a failing check stays within the limit."""
    expect_fast(task, _failing(getattr(checkers, f"check_task_{task}"), student_objects), limit=1.0)
