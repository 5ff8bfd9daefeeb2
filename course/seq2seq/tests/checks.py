"""What the seq2seq check tests share: the reference namespace, a mutant's namespace (tests/slice_reference.py),
timing a check (tests/check_timing.py), a planted mistake's failure named (its id too)."""
from check_timing import timings  # noqa: F401 -- the slice's tests import it from here
from slice_reference import diagnosis_id, reference_helpers

source, reference, variant = reference_helpers("seq2seq")


def expect_named(failure, mutant):
    """failure, the CheckFailure of a planted mistake, names it: its sentence in the message, its id recorded."""
    assert mutant.diagnosis and mutant.diagnosis in str(failure), str(failure)
    assert failure.diagnosis == diagnosis_id("seq2seq", mutant, failure), (failure.diagnosis, str(failure))
