"""What the llm check tests share: the reference namespace, a mutant's namespace (tests/slice_reference.py), timing a
check (tests/check_timing.py), a planted mistake's failure named (its id too)."""
import functools

from check_timing import cpu_seconds  # noqa: F401 -- the slice's tests import it from here
from slice_reference import expect_named as expect_named_in, reference_helpers

source, reference, variant = reference_helpers("llm")


expect_named = functools.partial(expect_named_in, "llm")  # (failure, mutant): its sentence and its id
