"""pytest's set-up for the whole checkout: the instructor-side packages (course, grading, tools) and the shared test
helpers of tests/ import by name from any test, the course-wide ones in tests/ and each assignment's own in
course/<name>/tests/."""
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
