"""conftest.py's rules: a skip for want of a system package fails where the packages must be there (CI); nbval's cells
wait for their outputs as long as a loaded machine needs."""
from types import SimpleNamespace

import pytest

import conftest

pytestmark = pytest.mark.fast


def reported(reason, skipped=True):
    """The report of a test skipped (or failed) with reason, after conftest's hook."""
    report = SimpleNamespace(skipped=skipped, outcome="skipped" if skipped else "failed",
                             longrepr=("test_x.py", 3, f"Skipped: {reason}") if skipped else "AssertionError")
    hook = conftest.pytest_runtest_makereport(SimpleNamespace(nodeid="tests/test_x.py::test_y"), None)
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(SimpleNamespace(get_result=lambda: report))
    return report


def test_a_missing_system_package_fails_only_where_it_is_required(monkeypatch):
    monkeypatch.delenv(conftest.REQUIRE_SYSTEM_PACKAGES, raising=False)
    assert reported("needs Slurm (apt-get install slurmd)").outcome == "skipped"
    monkeypatch.setenv(conftest.REQUIRE_SYSTEM_PACKAGES, "1")
    failed = reported("needs Slurm (apt-get install slurmd)")
    assert failed.outcome == "failed" and "test_y" in failed.longrepr and "apt-get install slurmd" in failed.longrepr
    assert reported("needs a GPU").outcome == "skipped"  # no package installs a GPU
    assert reported("x", skipped=False).longrepr == "AssertionError"


def test_a_notebook_cell_may_wait_for_its_outputs_on_a_loaded_machine():
    cell = SimpleNamespace(output_timeout=5)  # nbval's own, hard-coded
    conftest.pytest_runtest_setup(cell)
    assert cell.output_timeout == conftest.NBVAL_OUTPUT_SECONDS >= 60
