"""pytest's set-up for the whole checkout: the instructor-side packages (course, grading, tools) and the shared test
helpers of tests/ import by name from any test, the course-wide ones in tests/ and each assignment's own in
course/<name>/tests/."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
for folder in (ROOT / "tests", ROOT):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
