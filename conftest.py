"""pytest's set-up for the whole checkout: the instructor-side packages (course, grading, tools) and the shared test
helpers of tests/ import by name from any test, the course-wide ones in tests/ and each assignment's own in
course/<name>/tests/."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
for folder in (ROOT / "tests", ROOT):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import pytest  # noqa: E402 -- after the sys.path set-up above, which the test helpers' imports need


@pytest.fixture(scope="session", autouse=True)
def trained_once_per_run(request, tmp_path_factory):
    """Point the trained-model cache (tests/trained_cache.py) at this run's temporary folder, which every
    pytest-xdist worker of the run shares (a worker's own base temp is a popen-gwN folder inside it)."""
    import trained_cache
    base = tmp_path_factory.getbasetemp()
    trained_cache.FOLDER = (base.parent if hasattr(request.config, "workerinput") else base) / "trained"


# The two tiers (docs/maintainers.md, "Running the tests"): every test carries exactly one of these markers, in its
# module's `pytestmark` or on the test; `make test` runs the first, `make test-all` every test (tests/test_tiers.py).
TIERS = ("fast", "full")
COLLECTED = pytest.StashKey[dict]()  # {node id: the tier markers it carries}, every test collected, before -m


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark each reference notebook's cells `full` (nbval executes them; a notebook carries no marker), record every
    collected test's tiers before `-m` deselects any (config.stash[COLLECTED]), then order the tests for xdist."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker("full")
    config.stash[COLLECTED] = {item.nodeid: [tier for tier in TIERS if item.get_closest_marker(tier)]
                               for item in items}
    longest_first(config, items)


def longest_first(config, items):
    """Under pytest-xdist (make test-all), the longest files first: those with end-to-end grading runs (marker
    `grading`), then the notebooks nbval executes, then the rest, each file's tests together and in their order, so
    that what is left for the last minutes is short and neither worker idles long at the end (the Makefile's
    --no-loadscope-reorder keeps this order; xdist's own puts files with more tests first)."""
    if not hasattr(config, "workerinput"):
        return
    graded = {item.path for item in items if item.get_closest_marker("grading")}
    items.sort(key=lambda item: 0 if item.path in graded else 1 if item.path.suffix == ".ipynb" else 2)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Tell tests/trained_cache.py the running test's tier, so that a test of the fast tier which trains fails."""
    import trained_cache
    trained_cache.TIER = next((tier for tier in TIERS if item.get_closest_marker(tier)), None)
    try:
        yield
    finally:
        trained_cache.TIER = None


# nbval waits at most 5 s (hard-coded: its issues #136 and #231) for each output message of a cell after the cell's
# reply; a kernel whose training cell queued dozens of live-curve updates missed that on a loaded machine (make test
# with the Slurm test beside it: load average 8.6 on 2 cores). A runaway bound, far above any honest wait.
NBVAL_OUTPUT_SECONDS = 120


def pytest_runtest_setup(item):
    """Give nbval's cells NBVAL_OUTPUT_SECONDS to deliver each output message."""
    if hasattr(item, "output_timeout"):
        item.output_timeout = NBVAL_OUTPUT_SECONDS


# A test that needs a system package skips naming the apt-get command that installs it; where that package must be
# there (CI, whose .ci/run installs bubblewrap, Slurm and Chromium and sets this variable), the skip is a failure.
REQUIRE_SYSTEM_PACKAGES = "COURSE_REQUIRE_SYSTEM_PACKAGES"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Turn a skip for want of a system package into a failure when REQUIRE_SYSTEM_PACKAGES is set."""
    report = (yield).get_result()
    reason = report.longrepr[-1] if report.skipped and isinstance(report.longrepr, tuple) else ""
    if "apt-get install" in reason and os.environ.get(REQUIRE_SYSTEM_PACKAGES):
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid}: {REQUIRE_SYSTEM_PACKAGES} is set, yet the test was skipped: {reason}"
