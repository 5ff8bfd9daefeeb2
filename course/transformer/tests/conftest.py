"""The transformer's test fixtures: its reference implementation, loaded from the solution notebook (never a copy)."""
import pytest

from course.reference import load_reference, reference_source
from course.registry import assignment


@pytest.fixture(scope="session")
def reference():
    """Namespace with the reference classes and functions of the transformer assignment's definition tasks."""
    return load_reference(reference_source(assignment("transformer")))


@pytest.fixture(scope="session")
def load_variant():
    """load_variant(edit) -> namespace of the reference source after edit(source) -> source."""
    source = reference_source(assignment("transformer"))
    return lambda edit: load_reference(edit(source))
