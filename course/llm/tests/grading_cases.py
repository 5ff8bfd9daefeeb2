"""The llm grading cases scored in process (tests/in_process_grading.py's way) while llm has no release notebook: the
check cells' names and points come from the solutions notebook, which has the same check cells. When llm is registered
and released, tests/in_process_grading.graded_cases_of(assignment("llm"), ...) does the same and this file goes."""
import dataclasses
import functools

from course.registry import assignment
from grading.cases import build_cases
from grading.judge.expected import expected_records
from grading.match.notebook import check_cells, read, release_layout

from .checks import reference


def check_cells_of(assignment):
    """{task: check cell} of the solutions notebook."""
    return check_cells(release_layout(read(assignment.source_notebook)))


def graded_cases_of(assignment, namespace, tasks=None):
    """(cases, expected, names, points, reference) as the grader builds them, for tasks (default: every task)."""
    if tasks is not None:
        assignment = dataclasses.replace(assignment, tasks={n: t for n, t in assignment.tasks.items() if n in tasks})
    checks = check_cells_of(assignment)
    names = {task: cell.names for task, cell in checks.items() if task in assignment.tasks}
    cases = build_cases(namespace, assignment)
    return cases, expected_records(cases, namespace, names), names, {t: c.points for t, c in checks.items()}, namespace


@functools.lru_cache(maxsize=None)
def definition_cases():
    """The graded cases of every definition task, built once per run."""
    return graded_cases_of(assignment("llm"), reference(), assignment("llm").definition_tasks)
