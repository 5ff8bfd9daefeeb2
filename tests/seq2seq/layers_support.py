"""The seq2seq reference namespace, planted variants of it, and which objects Tasks 1-4's checks take."""
import functools

import checkers.seq2seq as checkers
from course.reference import load_reference, reference_source
from course.registry import assignment

LAYER_OBJECTS = {1: ("LayerNorm",), 2: ("causal_mask", "padding_mask"), 3: ("MultiheadAttention",),
                 4: ("DecoderBlock",)}


@functools.lru_cache(maxsize=1)
def source():
    return reference_source(assignment("seq2seq"))


@functools.lru_cache(maxsize=1)
def reference():
    """The namespace of the seq2seq reference answers (loaded once per test session)."""
    return load_reference(source())


def variant(edit):
    """The namespace of the reference source after edit(source) -> source."""
    return load_reference(edit(source()))


def run_layer_check(task, namespace):
    """check_task_<task> on the objects it takes, looked up by name in namespace."""
    return getattr(checkers, f"check_task_{task}")(*(namespace[name] for name in LAYER_OBJECTS[task]))
