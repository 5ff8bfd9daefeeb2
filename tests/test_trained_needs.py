"""A trained task's ✓ and its points need the task of the model's class (course.toml's `needs`).

A seq2seq model whose DecoderBlock is pre-norm and a gpt model whose GPTBlock is post-norm (planted Task 4 mistakes,
course/mistakes/<a>.py), each trained with that class by the notebook's recipe (tests/<a>/*_models.py) to the check's
target, fail the trained check with "fix Task 5 first" and score 0 for the trained task when the grader scores the
notebook (tests/in_process_grading.verdicts_of); the reference trained the same way passes both. One short training
per model, once per session (each about 10-30 s on 2 cores).
"""
import functools
import time

import pytest
import torch

from checkers._core import CheckFailure
from course.reference import load_reference
from course.slices import slice_of
from course.registry import assignment
from course_lib.gpt import addition_sequences, answer_accuracy
from course_lib.seq2seq import decoding_accuracy, random_sources, reversal_targets
from in_process_grading import graded_cases_of, verdicts_of
from slice_reference import reference_helpers

TRAINED_TASK = {"seq2seq": 7, "gpt": 7}
WRONG_CLASS = {"seq2seq": "pre-norm", "gpt": "post-norm"}  # a planted Task 4 mistake of each


def models_module(name):
    if name == "seq2seq":
        from course.seq2seq.tests import reversal_models
        return reversal_models
    from course.gpt.tests import addition_models
    return addition_models


def check_accuracy(name, model):
    """The model's accuracy on the trained check's own data (its target is the bar)."""
    if name == "seq2seq":
        from checkers.seq2seq.trained import CHECK_SEED, CHECK_SIZE, TARGET_ACCURACY
        sources = random_sources(CHECK_SIZE, torch.Generator().manual_seed(CHECK_SEED))
        return decoding_accuracy(model, sources, reversal_targets(sources))[1], TARGET_ACCURACY
    from checkers.gpt.trained import CHECK_SEED, CHECK_SIZE, TARGET_ACCURACY
    return answer_accuracy(model, addition_sequences(CHECK_SIZE, torch.Generator().manual_seed(CHECK_SEED)))[1], \
        TARGET_ACCURACY


@functools.lru_cache(maxsize=None)
def student(name, kind):
    """(the notebook's namespace, its trained model, seconds the training took): kind "reference" or "wrong class"."""
    mutant = next(m for m in slice_of(name).mistakes.MUTANTS if m.name == WRONG_CLASS[name])
    code = reference_helpers(name)[0]()
    code = mutant.apply(code) if kind == "wrong class" else code
    namespace = load_reference(code)
    start = time.perf_counter()
    model = models_module(name).trained_on(namespace, code)  # the reference: the one its slice's tests train
    seconds = time.perf_counter() - start
    print(f"{name}, {kind}: trained in {seconds:.1f} s")
    return dict(namespace, model=model), model, seconds


@functools.lru_cache(maxsize=None)
def graded(name):
    return graded_cases_of(assignment(name), reference_helpers(name)[1]())


def check_of(name):
    import importlib
    return getattr(importlib.import_module(f"checkers.{name}"), f"check_task_{TRAINED_TASK[name]}")


def grade(name, namespace):
    """The grader's verdicts of the trained task and of the tasks it needs, scored together."""
    needs = assignment(name).needs
    task = TRAINED_TASK[name]
    return verdicts_of([*needs[task], task], namespace, graded(name), needs)


@pytest.mark.parametrize("name", TRAINED_TASK)
def test_a_model_of_a_wrong_class_trained_to_the_target_fails_the_check_and_scores_0(name):
    namespace, model, _ = student(name, "wrong class")
    accuracy, target = check_accuracy(name, model)
    assert accuracy >= target, f"the {WRONG_CLASS[name]} model did not reach the target ({accuracy:.1%})"
    task = TRAINED_TASK[name]
    with pytest.raises(CheckFailure) as failure:
        check_of(name)(model)
    message = str(failure.value)
    assert message.startswith(f"Task {task}: the model's class does not pass check_task_5: fix Task 5 first, then "
                              "train again (check_task_5: "), message
    verdicts = grade(name, namespace)
    assert verdicts[5].score == 0, verdicts[5].message
    assert verdicts[task].score == 0 and "fix Task 5 first" in verdicts[task].message, verdicts[task].message


@pytest.mark.parametrize("name", TRAINED_TASK)
def test_the_reference_trained_the_same_way_passes_the_check_and_earns_the_points(name, capsys):
    namespace, model, _ = student(name, "reference")
    capsys.readouterr()  # what training printed, if it trained here
    task = TRAINED_TASK[name]
    check_of(name)(model)
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")
    verdicts = grade(name, namespace)
    assert all(verdict.score == verdict.points for verdict in verdicts.values()), \
        [verdict.message for verdict in verdicts.values()]


def test_a_needed_task_that_fails_takes_the_trained_task_s_points_and_says_why():
    """grading.judge.score.apply_needs on its own: a paid trained task whose needed task scored 0 scores 0."""
    from grading.judge.score import Verdict, apply_needs
    verdicts = {5: Verdict(5, 2, 0.0, "Task 5: wrong"), 7: Verdict(7, 2, 2.0, "✓ Task 7 passed the grader")}
    apply_needs(verdicts, {7: (5,)})
    assert verdicts[7].score == 0 and verdicts[7].message.startswith("Task 7: ") and "fix Task 5 first" in \
        verdicts[7].message
    paid = {5: Verdict(5, 2, 2.0, "✓"), 7: Verdict(7, 2, 2.0, "✓")}
    apply_needs(paid, {7: (5,)})
    assert paid[7].score == 2
