"""What the gpt check tests share: the reference namespace, a mutant's namespace, timing a check
(tests/check_timing.py)."""
import functools

from course.reference import load_reference, reference_source
from course.registry import assignment
from check_timing import timings  # noqa: F401 -- the slice's tests import it from here


@functools.lru_cache(maxsize=1)
def source():
    """The source of the gpt reference answers (provided cells included)."""
    return reference_source(assignment("gpt"))


@functools.lru_cache(maxsize=1)
def reference():
    """The namespace of the gpt reference answers (loaded once per test session)."""
    return load_reference(source())


def variant(change):
    """The namespace of the reference after a change: a known mistake (a Mutant) or an edit(source) -> source."""
    edit = change.apply if hasattr(change, "apply") else change
    return load_reference(edit(source()))
