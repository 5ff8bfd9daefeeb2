"""Shared fixtures: the reference implementation, loaded from the solution notebook (never a copy)."""
import importlib.util
from pathlib import Path

import sys

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))  # the planted mistakes live with the instructor tools


def _load_tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def reference():
    """Namespace with the reference classes and functions of tasks 1-5 and 7."""
    return _load_tool("make_fixtures").load_reference()


@pytest.fixture(scope="session")
def load_variant():
    """load_variant(edit) -> namespace of the reference source after edit(source) -> source."""
    tool = _load_tool("make_fixtures")
    return lambda edit: tool.load_reference(edit(tool.reference_source()))
