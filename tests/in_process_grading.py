"""An assignment's grading cases scored in-process, as the grader scores them but without a probe or a sandbox.

Used by each assignment's hidden-case tests (tests/<assignment>/test_hidden_cases.py).
"""
from grading.cases import build_cases
from grading.judge.expected import expected_records
from grading.judge.score import score_submission
from grading.match.notebook import check_cells, read, release_layout
from grading.recipes import run


def graded_cases_of(assignment, reference):
    """(cases, expected, names, points, reference) as the grader builds them for the assignment."""
    checks = check_cells(release_layout(read(assignment.release_notebook)))
    names = {task: cell.names for task, cell in checks.items()}
    cases = build_cases(reference, assignment)
    return cases, expected_records(cases, reference, names), names, {t: c.points for t, c in checks.items()}, reference


def verdict_of(task, namespace, graded_cases):
    """Score one task on a namespace of objects (what the probe does, without a sandbox)."""
    cases, expected, names, points, reference = graded_cases
    records = []
    for recipe in cases[task]:
        try:
            records.append(run(recipe, [namespace[name] for name in names[task]], namespace))
        except Exception as error:  # noqa: BLE001 -- a failing case is a record too
            records.append({"error": f"{type(error).__name__}: {error}"})
    return score_submission({task: cases[task]}, expected, {task: records}, points, reference)[task]


def verdicts_of(tasks, namespace, graded_cases, needs):
    """{task: Verdict} of several tasks scored together, as the grader scores a notebook, with course.toml's needs
    (a trained task needs the task of its model's class)."""
    cases, expected, names, points, reference = graded_cases
    records = {}
    for task in tasks:
        records[task] = []
        for recipe in cases[task]:
            try:
                records[task].append(run(recipe, [namespace[name] for name in names[task]], namespace))
            except Exception as error:  # noqa: BLE001 -- a failing case is a record too
                records[task].append({"error": f"{type(error).__name__}: {error}"})
    return score_submission({task: cases[task] for task in tasks}, expected, records, points, reference, needs)
