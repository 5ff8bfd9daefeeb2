"""A shape error in the student's code is said in one sentence (checkers/_shapes.py): the shapes of the tensors on
their failing line, and what torch found wrong, in words; never torch's message alone."""
import pytest
import torch

from checkers._core import CheckFailure, Task
from checkers._shapes import is_shape_error, shape_sentence, translated

pytestmark = pytest.mark.fast


class Norm:
    """A student's norm layer (this file is outside the course's packages: its frames are the student's)."""

    def __init__(self):
        self.weight = torch.ones(6)

    def without_keepdim(self, x):
        rms = x.pow(2).mean(dim=-1).sqrt()
        return x / rms * self.weight

    def wrong_dimension(self, x):
        return x.mean(dim=3)


def raised(fn, *args):
    with pytest.raises(Exception) as caught:
        fn(*args)
    return caught.value


def test_the_sentence_names_the_shapes_on_the_student_s_line_and_what_met():
    sentence = shape_sentence(raised(Norm().without_keepdim, torch.ones(2, 4, 6)))
    assert "`x` (2, 4, 6), `rms` (2, 4), `self.weight` (6,)" in sentence, sentence
    assert "two tensors of sizes 6 and 4 met at dimension 2" in sentence and "The size of tensor" not in sentence


def test_a_dimension_out_of_range_names_the_tensor_and_the_dimension():
    sentence = shape_sentence(raised(Norm().wrong_dimension, torch.ones(2, 4, 6)))
    assert "`x` (2, 4, 6)" in sentence and "dimension 3 was asked of a tensor with dimensions -3 to 2" in sentence


@pytest.mark.parametrize("message, words", [
    ("mat1 and mat2 shapes cannot be multiplied (6x16 and 8x16)", "the first's last size (16) must equal"),
    ("Sizes of tensors must match except in dimension 2. Expected size 4 but got size 2 for tensor number 1 in the "
     "list.", "differ in another dimension: 4 and 2"),
    ("shape '[2, 4, 8]' is invalid for input of size 96", "a reshape to [2, 4, 8] was asked of a tensor of 96"),
    ("index 5 is out of bounds for dimension 0 with size 4", "index 5 was asked of dimension 0, which has size 4")])
def test_torch_s_shape_messages_are_said_in_words(message, words):
    assert words in translated(RuntimeError(message))


def test_other_errors_are_left_as_they_are():
    assert not is_shape_error(TypeError("size of tensor")) and not is_shape_error(RuntimeError("out of memory"))
    assert shape_sentence(ValueError("no shapes here")) == ""


def test_a_check_shows_the_sentence_instead_of_torch_s_message():
    with pytest.raises(CheckFailure) as failure:
        Task(3).call("Norm(6)(x)", Norm().without_keepdim, torch.ones(2, 4, 6))
    assert "raised RuntimeError: shapes do not fit: your line" in str(failure.value), str(failure.value)
