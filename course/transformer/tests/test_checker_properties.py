"""Mistakes named nowhere in the catalogue fail with the property they violate, not only 'differs'.

The mistakes live in unnamed_mistakes.py (UNNAMED lists them by task); each test names the words
its message must hold, and, where a wrong hint was once given, the words it must not hold.
"""
import contextlib
import io

import pytest

import checkers.transformer as checkers
from checkers.transformer import CheckFailure
from checkers.transformer.attention import BATCHED
from . import unnamed_mistakes as wrong
from .unnamed_mistakes import UNNAMED
from course.transformer.mistakes import DIAGNOSES, MUTANTS
from .student_objects import run_check

pytestmark = pytest.mark.fast


def failure_of(task, *student_objects):
    with pytest.raises(CheckFailure, match=f"^Task {task}") as failure:
        getattr(checkers, f"check_task_{task}")(*student_objects)
    message = str(failure.value)
    assert "\n" not in message and "differs from the expected values" not in message, message
    return message


@pytest.mark.parametrize("attention_fn, words", [
    (wrong.attention_softmax_dim_1, "sum to 1 along axis 1"),
    (wrong.attention_scale_shape_1, "divided by √3 = √query.size(1)"),
])
def test_hard_coded_axes_get_no_T_hint(attention_fn, words):
    message = failure_of(1, attention_fn)
    assert "right for 2-D inputs but not for batched ones" in message and "count axes from the end" in message
    assert words in message, message
    assert ".T" not in message and BATCHED not in message, message


def test_T_on_batched_input_gets_the_T_hint():
    assert BATCHED in failure_of(1, wrong.attention_dot_T)


def test_matrix_only_operations_are_named_not_T():
    message = failure_of(1, wrong.attention_torch_mm)
    assert ".t() takes matrices only" in message and BATCHED not in message, message


def test_the_unnamed_base_implementations_pass(capsys):
    """The bases the unnamed mistakes derive from are right: each mistake is the one change it names."""
    for task, student_objects in [(2, (wrong.MultiheadAttentionBase,)), (3, (wrong.EncoderBlockBase,)),
                                  (4, (wrong.PositionalEncodingBase,)), (5, (wrong.ClassifierBase,)),
                                  (7, wrong.LINFORMER)]:
        getattr(checkers, f"check_task_{task}")(*student_objects)
        assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


def test_wrong_divisor_is_measured():
    message = failure_of(1, wrong.attention_scale_by_value_width)
    assert "divided by √6 instead of √query.size(-1) = √4" in message, message


@pytest.mark.parametrize("task, student_objects, words", UNNAMED,
                         ids=lambda value: value[0].__name__ if isinstance(value, tuple) else None)
def test_unnamed_mistake_names_the_property(task, student_objects, words):
    message = failure_of(task, *student_objects)
    assert words in message, message
    # found by a probe, not by matching a planted mistake's stored output: no planted diagnosis is quoted whole
    assert not any(diagnosis in message for diagnosis in DIAGNOSES.values()), message


@pytest.mark.parametrize("task, cls, name", [
    (4, wrong.PositionalEncodingNumPy, "PositionalEncoding.pe"),
    (5, wrong.ClassifierNumPyPositions, "TransformerForSequenceClassification.positional_encoding.pe"),
])
def test_a_numpy_table_is_named_by_its_dtype(task, cls, name):
    """Built with NumPy, the table is float64 in a float32 model: it passed, then training crashed."""
    message = failure_of(task, cls)
    assert f"{name} has dtype torch.float64 in a module built with the default dtype torch.float32" in message, message


@pytest.mark.parametrize("task, cls, words", [
    (2, wrong.MultiheadAttentionCallingTask1, "the scaled_softmax_attention it calls does not pass check_task_1"),
    (3, wrong.EncoderBlockWithInterleavedHeads, "its attention module does not pass check_task_2"),
    (5, wrong.ClassifierWithPositionsAddedTwice, "its positional_encoding does not pass check_task_4"),
], ids=lambda value: value.__name__ if isinstance(value, type) else None)
def test_a_wrong_part_is_named_with_its_task(task, cls, words):
    message = failure_of(task, cls)
    assert words in message and "fix Task" in message, message


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m.task in (1, 2, 3, 4)],
                         ids=lambda m: f"task{m.task}-{m.name}")
def test_a_planted_mistake_is_explained_in_later_tasks(mutant, load_variant):
    """Each earlier task's planted mistake, left in, makes every later check that it breaks say why."""
    namespace = load_variant(mutant.apply)
    for task in (2, 3, 5, 7):
        if task <= mutant.task:
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                run_check(task, namespace)
        except CheckFailure as failure:
            message = str(failure)
            assert "differs from the expected values" not in message and "could not run" not in message, message
