"""What tests/test_trained_needs.py needs of the gpt assignment: a planted mistake of the class its trained model is
made of, the notebook's training recipe, and the trained check's own data and target."""
import torch

from checkers.gpt.trained import CHECK_SEED, CHECK_SIZE, TARGET_ACCURACY
from course_lib.gpt import addition_sequences, answer_accuracy

from .addition_models import trained_on

WRONG_CLASS = "post-norm"  # a planted mistake (course/gpt/mistakes.py) of the block the model is made of
__all__ = ["WRONG_CLASS", "check_accuracy", "trained_on"]


def check_accuracy(model):
    """(the model's accuracy on the trained check's own data, the check's target)."""
    return answer_accuracy(model, addition_sequences(CHECK_SIZE, torch.Generator().manual_seed(CHECK_SEED)))[1], \
        TARGET_ACCURACY
