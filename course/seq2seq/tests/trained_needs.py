"""What tests/test_trained_needs.py needs of the seq2seq assignment: a planted mistake of the class its trained model
is made of, the notebook's training recipe, and the trained check's own data and target."""
import torch

from checkers.seq2seq.trained import CHECK_SEED, CHECK_SIZE, TARGET_ACCURACY
from course_lib.seq2seq import decoding_accuracy, random_sources, reversal_targets

from .reversal_models import trained_on

WRONG_CLASS = "pre-norm"  # a planted mistake (course/seq2seq/mistakes.py) of the decoder block the model is made of
__all__ = ["WRONG_CLASS", "check_accuracy", "trained_on"]


def check_accuracy(model):
    """(the model's accuracy on the trained check's own data, the check's target)."""
    sources = random_sources(CHECK_SIZE, torch.Generator().manual_seed(CHECK_SEED))
    return decoding_accuracy(model, sources, reversal_targets(sources))[1], TARGET_ACCURACY
