"""Shared fixtures: the reference implementation, loaded from the solution notebook (never a copy)."""
from pathlib import Path

import sys

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the instructor-side packages (course, grading, tools) live in the checkout

from course.reference import load_reference, reference_source  # noqa: E402 -- importable once ROOT is on sys.path
from course.registry import assignment  # noqa: E402 -- importable once ROOT is on sys.path


@pytest.fixture(scope="session")
def reference():
    """Namespace with the reference classes and functions of the transformer assignment's definition tasks."""
    return load_reference(reference_source(assignment("transformer")))


@pytest.fixture(scope="session")
def load_variant():
    """load_variant(edit) -> namespace of the reference source after edit(source) -> source."""
    source = reference_source(assignment("transformer"))
    return lambda edit: load_reference(edit(source))
