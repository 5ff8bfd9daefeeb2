"""What tests/test_trained_needs.py needs of the llm assignment: a planted mistake of a class its trained model is made
of (Task 3's RMSNorm: the first task course.toml says Task 7 needs), a model of a namespace's classes with the weights
the notebook's recipe trains, the trained check's own measure and bound, and what the check cell and the grader read
besides the model (notebook_objects: the tokenizer and its merges). Bits per byte are kept low where the test asks
for an accuracy of at least its target: check_accuracy gives both negated.
"""
from course_lib import llm as llm_defaults
from course_lib.llm import bits_per_byte, split_topics, utf8_size

from checkers.llm.trained import TARGET_BPB
from .trained_models import reference_merges, reference_tokenizer, trained_reference

WRONG_CLASS = "eps outside the square root"  # a planted mistake (course/llm/mistakes.py) of the model's RMSNorm
__all__ = ["WRONG_CLASS", "check_accuracy", "notebook_objects", "trained_on"]


def trained_on(namespace, code):
    """The namespace's Llama holding the reference's weights as the notebook trains them (seed 0, once per test run:
    trained_models.trained_reference). For the reference that is its own training. The wrong class's RMSNorm puts
    eps outside the square root, a change of about eps in every normalised value, so the same weights reach the bound
    in it too (the test asserts that through check_accuracy) without a second 80 s training."""
    model = namespace["Llama"](**llm_defaults.MODEL)
    model.load_state_dict(trained_reference().state_dict())
    return model.eval()


def check_accuracy(model):
    """(minus the model's bits per byte on the trained check's own text, minus the check's bound)."""
    text = split_topics()[1][:llm_defaults.EVAL_CHARS]
    ids = reference_tokenizer().encode(text)
    return -bits_per_byte(model, ids, utf8_size(text), llm_defaults.MODEL["max_len"]), -TARGET_BPB


def notebook_objects(namespace):
    """What the notebook binds besides the model for Task 7's check cell and its grading: the tokenizer and merges
    (the reference's: the class under test is the model's)."""
    return {"tokenizer": reference_tokenizer(), "merges": reference_merges()}
