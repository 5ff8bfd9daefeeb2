"""The held-out llm mistakes (unnamed_mistakes.py, written from the notebook without reading the checks): each one's
edits apply to the reference source, each fails its task's check with a sentence that starts "Task N:", within a
second of CPU time, and the grader's cases (course/llm/cases) score it 0.

Run with -s to see each check's sentence (the held-out report judges whether it names the mistake).
"""
import contextlib
import io

import pytest

import checkers.llm as checkers
from check_timing import cpu_seconds
from course.registry import assignment
from course.reference import load_reference, reference_source
from grading.judge.expected import reference_namespace
from in_process_grading import graded_cases_of, verdict_of

from . import unnamed_mistakes as heldout


def _verdict(item):
    """(passed, what the check printed or raised) for the mistake's object."""
    check = getattr(checkers, f"check_task_{item['task']}")
    obj = heldout.mistake_object(item)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            check(obj)
    except checkers.CheckFailure as failure:
        return False, str(failure)
    return True, printed.getvalue().strip()


@pytest.mark.fast
def test_every_task_has_six_held_out_mistakes():
    names = [item["name"] for item in heldout.MISTAKES]
    assert len(names) == len(set(names))
    for task in heldout.CHECKED:
        assert sum(item["task"] == task for item in heldout.MISTAKES) >= 6, task


@pytest.mark.fast
@pytest.mark.parametrize("item", heldout.MISTAKES, ids=lambda item: item["name"])
def test_each_edit_applies_exactly_once(item):
    """Mutant.apply replaces every occurrence: an old text found twice would plant a different mistake."""
    source = reference_source(assignment("llm"))
    for old, new in item["edits"]:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    assert source == heldout.mistake_source(item)


@pytest.mark.fast
@pytest.mark.parametrize("item", heldout.MISTAKES, ids=lambda item: item["name"])
def test_held_out_mistake_fails_its_check(item):
    passed, message = _verdict(item)
    print(f"\n[{item['name']}] {item['what']}\n  -> {message}")
    assert not passed, f"GAP: the check passed {item['name']} ({item['what']}): {message}"
    assert message.startswith(f"Task {item['task']}:"), message


@pytest.mark.full
@pytest.mark.parametrize("item", heldout.MISTAKES, ids=lambda item: item["name"])
def test_held_out_check_stays_within_a_second(item):
    check = getattr(checkers, f"check_task_{item['task']}")
    obj = heldout.mistake_object(item)

    def run():
        try:
            check(obj)
        except checkers.CheckFailure:
            pass
    assert cpu_seconds(run, runs=3) <= 1.0


@pytest.fixture(scope="module")
def graded_cases():
    """(cases, expected, names, points, reference) as the grader builds them (tests/in_process_grading.py)."""
    return graded_cases_of(assignment("llm"), reference_namespace(assignment("llm")))


# The full tier: the fast agreement matrix (tests/test_check_grade_agreement.py) asserts the same of each mistake
@pytest.mark.full
@pytest.mark.parametrize("item", heldout.MISTAKES, ids=lambda item: item["name"])
def test_the_grader_scores_the_mistake_zero(item, graded_cases):
    """A ✓ from a check means the grader pays; a held-out mistake should be paid nothing."""
    namespace = dict(graded_cases[4], **load_reference(heldout.mistake_source(item)))
    verdict = verdict_of(item["task"], namespace, graded_cases)
    print(f"\n[{item['name']}] grader: {verdict.score} -> {verdict.message}")
    assert verdict.score == 0, verdict.message
