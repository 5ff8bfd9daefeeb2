"""The assignment the course-wide tests use as a vehicle, its notebooks, and its own test module `vehicle`.

The vehicle is the first assignment of the registry (course.toml): the tests of checkers/ and grading/ that only need
some assignment to exercise shared machinery take it from here, and anything of its own (a cell's answer, a class)
from course/<name>/tests/vehicle.py, so they run for whichever assignment is registered first.
"""
import importlib
import shutil
from pathlib import Path

from course.registry import assignments  # the checkout is on sys.path through conftest.py

ROOT = Path(__file__).resolve().parent.parent

VEHICLE = assignments()[0]
NAME = VEHICLE.name
SOURCE = VEHICLE.source_notebook
RELEASE = VEHICLE.release_notebook
POINTS = VEHICLE.points
DEFINITION_TASKS = VEHICLE.definition_tasks  # answered by class and function definitions; the others train


def vehicle_parts():
    """The vehicle's own pieces for the course-wide tests: the module course/<name>/tests/vehicle.py."""
    return importlib.import_module(f"course.{NAME}.tests.vehicle")


def course_folder(folder):
    """Make folder a course folder as far as `collect` needs: it holds the registry (a copy of course.toml)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "course.toml", folder)
    return folder
