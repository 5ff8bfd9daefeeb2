"""What the llm check tests share: the reference namespace, a mutant's namespace, timing a check, a planted mistake's
failure named (its id too). The assignment is not registered yet, so its reference is read through
course.llm.WORK_IN_PROGRESS instead of tests/slice_reference.py's registry lookup."""
import functools

from check_timing import cpu_seconds  # noqa: F401 -- the slice's tests import it from here
from course.llm import WORK_IN_PROGRESS
from course.reference import load_reference, reference_source
from slice_reference import expect_named as expect_named_in


@functools.lru_cache(maxsize=None)
def source():
    return reference_source(WORK_IN_PROGRESS)


@functools.lru_cache(maxsize=None)
def reference():
    return load_reference(source())


def variant(change):
    """The reference namespace after a change: a known mistake (a Mutant) or an edit(source) -> source."""
    edit = change.apply if hasattr(change, "apply") else change
    return load_reference(edit(source()))


expect_named = functools.partial(expect_named_in, "llm")  # (failure, mutant): its sentence and its id
