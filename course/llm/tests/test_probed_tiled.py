"""Task 6's probe of a running max gone wrong (checkers/llm/tiled.py): rows near -150 that are not finite beside rows
near +150 are run by themselves; finite there, the max was taken over every row at once, not started at 0. Both
mistakes are edits of the reference outside the planted list's words."""
import pytest

from checkers.llm import CheckFailure, check_task_6
from checkers.llm.tiled import MAX_FROM_ZERO, MAX_OVER_BLOCK
from course.reference import load_reference, reference_source
from course.registry import assignment

pytestmark = pytest.mark.fast

PER_ROW = "scores.amax(dim=-1, keepdim=True)"
START = 'row_max = query.new_full(query.shape[:-1] + (1,), float("-inf"))'


def edited(old, new):
    source = reference_source(assignment("llm"))
    assert source.count(old) == 1
    return load_reference(source.replace(old, new))["tiled_attention"]


@pytest.mark.parametrize("old, new, expected", [
    (PER_ROW, "scores.amax(dim=(-2, -1), keepdim=True)", MAX_OVER_BLOCK),
    (PER_ROW, "scores.amax().expand(scores.shape[:-1]).unsqueeze(-1)", MAX_OVER_BLOCK),
    (START, START.replace('float("-inf")', "-1.0"), MAX_FROM_ZERO)],
    ids=["max over the block", "max over everything", "max from -1"])
def test_the_running_max_s_mistake_is_told_by_the_rows_alone(old, new, expected):
    with pytest.raises(CheckFailure) as failure:
        check_task_6(edited(old, new))
    assert failure.value.diagnosis == f"llm.6.{expected.slug}", str(failure.value)
