"""The held-out lists of mistakes after the first (course/<name>/tests/heldout_round<N>.py, written from the notebook
alone, without reading the checks): every mistake applies to its reference, fails its task's check with a sentence that
starts "Task N:" (no false pass), and the grader's cases score it 0 (a check and the grade agree).

How well the checks *name* these mistakes is measured, not asserted here: `python -m tools.heldout_messages`
prints each mistake beside what its check said, for a reader who judges whether the sentence names it (the note of
issue 43 has the table).
"""
import pytest

from tools.heldout import check_said, held_out_lists
from course.reference import load_reference
from course.registry import assignments
from grading.judge.expected import reference_namespace
from in_process_grading import graded_cases_of, verdict_of

pytestmark = pytest.mark.fast


LISTS = held_out_lists()  # {(assignment, round): module}
ITEMS = [(key, item) for key, module in LISTS.items() for item in module.MISTAKES]


def cases(known):
    """ITEMS as pytest params; those a list declares in its `known` dict (KNOWN_FALSE_PASSES or KNOWN_GRADE_PAYS:
    {mistake: why}, what it found when it was written and is still open) are expected failures that must keep
    failing (strict): once mended, the line goes from the list."""
    params = []
    for key, item in ITEMS:
        why = getattr(LISTS[key], known, {}).get(item["name"])
        marks = pytest.mark.xfail(strict=True, reason=f"open: {why}") if why else ()
        params.append(pytest.param(key, item, id=f"{key[0]}-{key[1]}-{item['name']}", marks=marks))
    return params


@pytest.mark.parametrize("key, item", cases("KNOWN_FALSE_PASSES"))
def test_each_held_out_mistake_fails_its_check(key, item):
    name = key[0]
    passed, message = check_said(name, LISTS[key].LIST, item)
    assert not passed, f"a false pass: {name} {item['name']} ({item['what']}): {message}"
    assert message.startswith(f"Task {item['task']}:"), message


@pytest.fixture(scope="module")
def graded():
    return {}


@pytest.mark.parametrize("key, item", cases("KNOWN_GRADE_PAYS"))
def test_the_grader_scores_each_held_out_mistake_zero(key, item, graded):
    name = key[0]
    if name not in graded:
        registered = next(entry for entry in assignments() if entry.name == name)
        graded[name] = graded_cases_of(registered, reference_namespace(registered))
    graded_cases, held_out = graded[name], LISTS[key].LIST
    namespace = dict(graded_cases[4], **load_reference(held_out.source(item)))
    namespace.update(zip(graded_cases[2][item["task"]], held_out.arguments(item)))  # by the names the cell uses
    verdict = verdict_of(item["task"], namespace, graded_cases)
    assert verdict.score == 0, f"{name} {item['name']}: the grader paid {verdict.score}: {verdict.message}"
