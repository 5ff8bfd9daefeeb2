"""Every ✓ is worth its points: for every definition task of every assignment (course.toml), the instant check and
the grader's hidden cases agree on every known answer, right or wrong.

Each case is a student's answer to one task: the reference, a planted mistake (course/<a>/mistakes.py), a mistake of
the assignment's tests' unnamed lists, a correct alternative of its tests' variants, or a mistake written for this
test alone. It runs through the check cell's function (check ✓ or ✗) and through the grader's cases in process
(tests/in_process_grading.py: full points or 0), with the answer put in a fresh reference namespace under the check
cell's names, so the later classes use it as they would in the student's notebook. The test asserts: check ✓ <=> the
task's full points.

Where the cases come from is the assignment's own: course/<a>/tests/agreement.py, found by name, lists SOURCES
((label, reference namespace -> [Case])), WRITTEN_HERE (Mutant) and, where a check cell passes objects no definition
task defines, stand_ins(namespace); a module course/<a>/tests/unnamed_mistakes.py with a MISTAKES or VARIANTS list of
dict(task=, name=, objects={name: obj} or edits=, what=) is picked up too (tests/agreement_cases.py). Run this file as a
script to print the agreement matrix per assignment.
"""
import contextlib
import functools
import importlib
import importlib.util
import io

import pytest
import torch

from agreement_cases import Case, dict_entries, mutants
from course.mutant import Mutant
from course.reference import load_reference, reference_source
from course.registry import assignments
from course.slices import slice_of
from in_process_grading import graded_cases_of, verdict_of

pytestmark = pytest.mark.fast

SEED = 0  # the global seed before every call: an answer that draws at random is judged on the same draws each run


def own_module(name, module):
    """The module course/<name>/tests/<module>.py of the assignment's own tests, or None if it has none."""
    if importlib.util.find_spec(f"course.{name}.tests.{module}") is None:
        return None
    return importlib.import_module(f"course.{name}.tests.{module}")


def agreement_of(name):
    """The assignment's course/<name>/tests/agreement.py (its SOURCES, WRITTEN_HERE, stand_ins), if it has one."""
    return own_module(name, "agreement")


def _extra_module(name):
    """course/<name>/tests/unnamed_mistakes.py's MISTAKES and VARIANTS (dict entries), if the module has them."""
    module = own_module(name, "unnamed_mistakes")
    if module is None:
        return []
    return dict_entries(getattr(module, "MISTAKES", []), False) + dict_entries(getattr(module, "VARIANTS", []), True)


COMMON_SOURCES = [
    ("reference", lambda name, ref: [Case(task, "reference", True) for task in ASSIGNMENTS[name].definition_tasks]),
    ("planted", lambda name, ref: mutants(False)(slice_of(name).mistakes.MUTANTS)),
    ("written here", lambda name, ref: mutants(False)(getattr(agreement_of(name), "WRITTEN_HERE", []))),
    ("unnamed_mistakes.py", lambda name, ref: _extra_module(name)),
]

ASSIGNMENTS = {a.name: a for a in assignments()}

# Disagreements known and not yet mended: (assignment, task, case name) -> reason. strict: a fix shows here.
BEING_FIXED = {}


# ----- running a case both ways -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def source_of(name):
    return reference_source(ASSIGNMENTS[name])


@functools.lru_cache(maxsize=None)
def reference_of(name):
    return load_reference(source_of(name))


@functools.lru_cache(maxsize=None)
def graded_cases(name):
    """The grader's cases and the reference's records, built once per assignment."""
    return graded_cases_of(ASSIGNMENTS[name], reference_of(name))


def cases_of(name):
    """Every case of the assignment, its definition tasks only (trained tasks: tests/test_trained_needs.py)."""
    found = [case for _, make in COMMON_SOURCES for case in make(name, reference_of(name))]
    found += [case for _, make in getattr(agreement_of(name), "SOURCES", []) for case in make(reference_of(name))]
    return [case for case in found if case.task in ASSIGNMENTS[name].definition_tasks]


def stand_ins(name, namespace):
    """Objects a check cell passes that no definition task defines, built by the assignment's own stand_ins
    (course/<name>/tests/agreement.py) after the global seed is set."""
    build = getattr(agreement_of(name), "stand_ins", None)
    if build is None:
        return {}
    torch.manual_seed(SEED)
    return build(namespace)


def namespace_of(name, case):
    """A fresh reference namespace with the case's answer in it, as the student's notebook would hold it."""
    names = graded_cases(name)[2][case.task]
    namespace = load_reference(Mutant(case.task, case.name, case.edits).apply(source_of(name)))
    objects = case.objects if isinstance(case.objects, dict) else dict(zip(names, case.objects))
    namespace.update(objects)
    namespace.update({key: value for key, value in stand_ins(name, namespace).items() if key not in namespace})
    return namespace


def check_says(name, case, namespace):
    """(passed, what the check printed or raised) of the task's check cell on the namespace's objects."""
    task = ASSIGNMENTS[name].tasks[case.task]
    check = getattr(importlib.import_module(task.check_module), task.check_function)
    printed = io.StringIO()
    torch.manual_seed(SEED)
    try:
        with contextlib.redirect_stdout(printed):
            check(*[namespace[key] for key in graded_cases(name)[2][case.task]])
    except AssertionError as failure:  # CheckFailure: the only exception a check lets out
        return False, str(failure)
    return True, printed.getvalue().strip()


def grader_says(name, case, namespace):
    """(points, verdict message) of the grader's cases on the namespace."""
    torch.manual_seed(SEED)
    verdict = verdict_of(case.task, namespace, graded_cases(name))
    return verdict.score, verdict.message


def outcome(name, case):
    """(check passed, check's words, grader's points, grader's words, the task's points)."""
    namespace = namespace_of(name, case)
    passed, said = check_says(name, case, namespace)
    score, verdict = grader_says(name, case, namespace)
    return passed, said, score, verdict, ASSIGNMENTS[name].tasks[case.task].points


def parameters():
    params = []
    for name in ASSIGNMENTS:
        for case in cases_of(name):
            reason = BEING_FIXED.get((name, case.task, case.name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            kind = "right" if case.right else "wrong"
            params.append(pytest.param(name, case, marks=marks, id=f"{name}-task{case.task}-{kind}-{case.name}"))
    return params


@pytest.mark.parametrize("name, case", parameters())
def test_check_and_grader_agree(name, case):
    passed, said, score, verdict, points = outcome(name, case)
    assert passed == (score == points), f"check {'✓' if passed else '✗'} ({said}) but the grader gave {score} of " \
                                        f"{points} ({verdict})"
    assert score in (0, points), verdict
    assert passed == case.right, f"a {'correct' if case.right else 'wrong'} answer: check said {said}"
    assert case.right or verdict.startswith(f"Task {case.task}"), verdict  # the feedback names the task it failed


def test_every_definition_task_has_mistakes_and_correct_answers():
    """The cases reach every definition task of every assignment, both ways."""
    for name, assignment in ASSIGNMENTS.items():
        cases = cases_of(name)
        for right in (True, False):
            assert {c.task for c in cases if c.right == right} == set(assignment.definition_tasks), (name, right)


def agreement_matrix():
    """{assignment: {(check ✓, grader paid): count}} and the off-diagonal cases, printed."""
    for name in ASSIGNMENTS:
        counts, off = {}, []
        for case in cases_of(name):
            passed, said, score, verdict, points = outcome(name, case)
            key = ("✓" if passed else "✗", "paid" if score == points else "0")
            counts[key] = counts.get(key, 0) + 1
            if passed != (score == points) or passed != case.right:
                off.append(f"  task {case.task} {case.name!r} ({'right' if case.right else 'wrong'}): check "
                           f"{key[0]} {said[:160]!r}; grader {score}/{points} {verdict[:160]!r}")
        print(name, {f"{c}/{g}": n for (c, g), n in sorted(counts.items())}, *off, sep="\n")


if __name__ == "__main__":
    agreement_matrix()
