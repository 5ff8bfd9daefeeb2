"""What the gpt check tests share: the reference namespace, a mutant's namespace (tests/slice_reference.py), timing a
check (tests/check_timing.py)."""
from check_timing import timings  # noqa: F401 -- the slice's tests import it from here
from slice_reference import reference_helpers

source, reference, variant = reference_helpers("gpt")
