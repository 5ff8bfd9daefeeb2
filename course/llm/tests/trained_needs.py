"""What tests/test_trained_needs.py needs of the llm assignment: a planted mistake of a class its trained model is made
of (Task 3's RMSNorm: the first task course.llm.TASKS says Task 7 needs), the notebook's training recipe, and the
trained check's own measure and bound. Bits per byte are kept low where the test asks for an accuracy of at least
its target: check_accuracy gives both negated.

When llm is registered, tests/test_trained_needs.py must call check_task_7 with the tokenizer too (it calls a
trained check with the model alone), and check_task_7 must refuse a model whose classes fail their checks
(checkers/_trained.py: expect_class_passes, as the gpt's Task 7 check does) for its first test to hold."""
from course_lib import llm as llm_defaults
from course_lib.llm import bits_per_byte, split_topics, utf8_size

from checkers.llm.trained import TARGET_BPB
from trained_cache import trained_once

from .trained_models import reference_tokenizer, train_reference

WRONG_CLASS = "eps outside the square root"  # a planted mistake (course/llm/mistakes.py) of the model's RMSNorm
__all__ = ["WRONG_CLASS", "check_accuracy", "trained_on"]


def trained_on(namespace, code):
    """The namespace's Llama trained as the notebook trains it (seed 0), once per test run for each code; the
    reference's is the one trained_models.trained_reference trains (the same label and code)."""
    return trained_once(f"llm seed 0 steps {llm_defaults.STEPS}", code,
                        lambda: namespace["Llama"](**llm_defaults.MODEL), train_reference, namespace,
                        reference_tokenizer())


def check_accuracy(model):
    """(minus the model's bits per byte on the trained check's own text, minus the check's bound)."""
    text = split_topics()[1][:llm_defaults.EVAL_CHARS]
    ids = reference_tokenizer().encode(text)
    return -bits_per_byte(model, ids, utf8_size(text), llm_defaults.MODEL["max_len"]), -TARGET_BPB
