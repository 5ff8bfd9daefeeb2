"""The assignment these tests exercise and its notebooks, from the course registry (course.toml)."""
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the course package lives in the checkout, not in the installed distribution

from course.registry import assignment  # noqa: E402

TRANSFORMER = assignment("transformer")  # the tests of checkers/ and grading/ are about this assignment's tasks
NAME = TRANSFORMER.name
SOURCE = TRANSFORMER.source_notebook
RELEASE = TRANSFORMER.release_notebook
POINTS = TRANSFORMER.points
DEFINITION_TASKS = TRANSFORMER.definition_tasks  # answered by class and function definitions; the others train


def course_folder(folder):
    """Make folder a course folder as far as `collect` needs: it holds the registry (a copy of course.toml)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "course.toml", folder)
    return folder
