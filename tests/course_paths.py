"""The assignment these tests exercise and its notebooks, from the course registry (course.toml)."""
import shutil
from pathlib import Path

from course.registry import assignment  # the checkout is on sys.path through conftest.py

ROOT = Path(__file__).resolve().parent.parent

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
