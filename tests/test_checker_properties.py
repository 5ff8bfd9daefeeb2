"""Mistakes named nowhere in the catalogue fail with the property they violate, not only 'differs'.

The mistakes live in tests/unnamed_mistakes.py; each test names the words its message must hold, and, where
a wrong hint was once given, the words it must not hold.
"""
import pytest

import checkers
from checkers import CheckFailure
from checkers.attention import BATCHED
import unnamed_mistakes as wrong


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


def test_wrong_divisor_is_measured():
    message = failure_of(1, wrong.attention_scale_by_value_width)
    assert "divided by √6 instead of √query.size(-1) = √4" in message, message
