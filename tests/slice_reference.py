"""An assignment's reference answers for its slice tests: the source, the namespace, a mutant's namespace.

Each slice binds them once in its own checks.py: `source, reference, variant = reference_helpers(<its name>)`.
"""
import functools

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
