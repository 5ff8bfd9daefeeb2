"""A trained task's ✓ and its points need the task of the model's class (course.toml's `needs`).

For each assignment whose own tests say how (course/<a>/tests/trained_needs.py: WRONG_CLASS, a planted mistake of
the class its trained model is made of; trained_on, the namespace's model trained by the notebook's recipe once per
run, or given the reference's trained weights where they carry over to the wrong class; check_accuracy, on the trained
check's own data; notebook_objects, if the trained check cell passes more than the model), a model of the wrong class
that reaches the check's target fails the trained check with "fix Task N first" (N: the task it needs) and scores 0
for the trained task when the grader scores the notebook (tests/in_process_grading.verdicts_of); the reference trained
the same way passes both. The check is called with the objects its check cell names. At most one short training per
model, once per run and shared with the slice's own tests (tests/trained_cache.py).
"""
import functools
import importlib
import importlib.util
import time

import pytest

from checkers._core import CheckFailure
from course.reference import load_reference
from course.registry import assignment, assignments
from course.slices import slice_of
from in_process_grading import graded_cases_of, verdicts_of
from slice_reference import reference_helpers

pytestmark = pytest.mark.full


def own_module(name):
    """course/<name>/tests/trained_needs.py, or None for an assignment whose tests have none."""
    if importlib.util.find_spec(f"course.{name}.tests.trained_needs") is None:
        return None
    return importlib.import_module(f"course.{name}.tests.trained_needs")


NAMES = [a.name for a in assignments() if own_module(a.name) is not None]


def trained_task(name):
    """(the trained task that needs a definition task, the task it needs)."""
    needs = assignment(name).needs
    task = min(needs)
    return task, needs[task][0]


@functools.lru_cache(maxsize=None)
def student(name, kind):
    """(the notebook's namespace, its trained model, seconds the training took): kind "reference" or "wrong class"."""
    mutant = next(m for m in slice_of(name).mistakes.MUTANTS if m.name == own_module(name).WRONG_CLASS)
    code = reference_helpers(name)[0]()
    code = mutant.apply(code) if kind == "wrong class" else code
    namespace = load_reference(code)
    start = time.perf_counter()
    model = own_module(name).trained_on(namespace, code)  # the reference: the one its own tests train, shared
    seconds = time.perf_counter() - start
    print(f"{name}, {kind}: trained in {seconds:.1f} s")
    others = getattr(own_module(name), "notebook_objects", lambda namespace: {})(namespace)  # e.g. its tokenizer
    return dict(namespace, **others, model=model), model, seconds


@functools.lru_cache(maxsize=None)
def graded(name):
    return graded_cases_of(assignment(name), reference_helpers(name)[1]())


def check_of(name):
    task = assignment(name).tasks[trained_task(name)[0]]
    return getattr(importlib.import_module(task.check_module), task.check_function)


def run_check(name, namespace):
    """The trained check called as its check cell calls it: with the objects the cell names, from the namespace."""
    return check_of(name)(*[namespace[key] for key in graded(name)[2][trained_task(name)[0]]])


def grade(name, namespace):
    """The grader's verdicts of the trained task and of the tasks it needs, scored together."""
    needs = assignment(name).needs
    task = trained_task(name)[0]
    return verdicts_of([*needs[task], task], namespace, graded(name), needs)


@pytest.mark.parametrize("name", NAMES)
def test_a_model_of_a_wrong_class_trained_to_the_target_fails_the_check_and_scores_0(name):
    namespace, model, _ = student(name, "wrong class")
    accuracy, target = own_module(name).check_accuracy(model)
    assert accuracy >= target, f"the {own_module(name).WRONG_CLASS} model did not reach the target ({accuracy:.1%})"
    task, needed = trained_task(name)
    with pytest.raises(CheckFailure) as failure:
        run_check(name, namespace)
    message = str(failure.value)
    assert message.startswith(f"Task {task}: the model's class does not pass check_task_{needed}: fix Task {needed} "
                              f"first, then train again (check_task_{needed}: "), message
    verdicts = grade(name, namespace)
    assert verdicts[needed].score == 0, verdicts[needed].message
    assert verdicts[task].score == 0 and f"fix Task {needed} first" in verdicts[task].message, verdicts[task].message


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_trained_the_same_way_passes_the_check_and_earns_the_points(name, capsys):
    namespace, model, _ = student(name, "reference")
    capsys.readouterr()  # what training printed, if it trained here
    task = trained_task(name)[0]
    run_check(name, namespace)
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")
    verdicts = grade(name, namespace)
    assert all(verdict.score == verdict.points for verdict in verdicts.values()), \
        [verdict.message for verdict in verdicts.values()]


def test_a_needed_task_that_fails_takes_the_trained_task_s_points_and_says_why():
    """grading.judge.score.apply_needs on its own: a paid trained task whose needed task scored 0 scores 0."""
    from grading.judge.score import Verdict, apply_needs
    needed, trained = 1, 2  # a toy's tasks
    verdicts = {needed: Verdict(needed, 2, 0.0, f"Task {needed}: wrong"),
                trained: Verdict(trained, 2, 2.0, f"✓ Task {trained} passed the grader")}
    apply_needs(verdicts, {trained: (needed,)})
    assert verdicts[trained].score == 0 and verdicts[trained].message.startswith(f"Task {trained}: ") and \
        f"fix Task {needed} first" in verdicts[trained].message
    paid = {needed: Verdict(needed, 2, 2.0, "✓"), trained: Verdict(trained, 2, 2.0, "✓")}
    apply_needs(paid, {trained: (needed,)})
    assert paid[trained].score == 2


def test_the_assignments_tests_say_how_to_train_a_model_of_a_wrong_class():
    """The tests above are not vacuous: some assignment's own tests hold trained_needs.py, and each such assignment
    has a trained task that needs a definition task."""
    assert NAMES
    for name in NAMES:
        task, needed = trained_task(name)
        assert task in assignment(name).training_tasks and needed in assignment(name).definition_tasks
