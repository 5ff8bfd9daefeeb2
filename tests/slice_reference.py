"""An assignment's reference answers for its slice tests: the source, the namespace, a mutant's namespace.

Each slice binds them once in its own checks.py: `source, reference, variant = reference_helpers(<its name>)`;
diagnosis_id(<its name>, mutant, failure) is the id a failure naming a known mistake must record.
"""
import functools

from checkers._core import catalogue, slug_of
from course.reference import load_reference, reference_source
from course.registry import assignment


@functools.lru_cache(maxsize=None)
def _source(name):
    return reference_source(assignment(name))


@functools.lru_cache(maxsize=None)
def _reference(name):
    return load_reference(_source(name))


def reference_helpers(name):
    """(source(), reference(), variant(change)) of the assignment called name.

    source: the reference answers' code (provided cells included); reference: its namespace, loaded once per test
    session; variant(change): the namespace after a change, a known mistake (a Mutant) or an edit(source) -> source.
    """
    def variant(change):
        edit = change.apply if hasattr(change, "apply") else change
        return load_reference(edit(_source(name)))
    return functools.partial(_source, name), functools.partial(_reference, name), variant


def diagnosis_id(name, mutant, failure=None):
    """The id a failure naming mutant's mistake records, "<name>.<task>.<slug>" (checkers._core.Diagnosis).

    name: the assignment; mutant: a Mutant whose diagnosis is a Diagnosis of the assignment's checkers, or a fragment
    that the checkers' messages quote; failure: the CheckFailure raised, whose id names the sentence when the fragment
    is quoted by several (it must be one of theirs).
    """
    slug = slug_of(mutant.diagnosis)
    if not slug:
        quoting = [slug for slug, sentence in catalogue(f"checkers.{name}").items()
                   if str(mutant.diagnosis) in sentence]
        assert quoting, f"mutant {mutant.name!r}: its diagnosis {mutant.diagnosis!r} is in no Diagnosis of the checkers"
        recorded = (getattr(failure, "diagnosis", None) or "").rsplit(".", 1)[-1]
        slug = recorded if recorded in quoting else quoting[0]
    return f"{name}.{mutant.task}.{slug}"


def expect_named(name, failure, mutant):
    """failure, the CheckFailure of a planted mistake of assignment name, names it: its sentence in the message, its id
    recorded (see diagnosis_id)."""
    assert mutant.diagnosis and mutant.diagnosis in str(failure), str(failure)
    assert failure.diagnosis == diagnosis_id(name, mutant, failure), (failure.diagnosis, str(failure))
