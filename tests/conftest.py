"""Shared fixtures: the reference implementation, loaded from the solution notebook (never a copy)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def reference():
    """Namespace with the reference classes and functions of tasks 1-5 and 7."""
    return _load_tool("make_fixtures").load_reference()
