"""Where a course's files are, read from its nbgrader_config.py, and the time limits set there.

A course folder holds nbgrader_config.py and the registry course.toml (course/registry.py), whose
assignment this Course grades.
"""
from dataclasses import dataclass
from pathlib import Path

from nbformat.v4 import new_code_cell
from traitlets.config.loader import PyFileConfigLoader

from course import registry

CODE_ROOT = Path(__file__).resolve().parent.parent  # the checkout holding grading/, checkers/, course_lib/, tools/


def load_config(root):
    """The course's nbgrader configuration (nbgrader_config.py in root), as nbgrader itself reads it."""
    return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()


@dataclass
class Course:
    """Paths of one course folder (the repository, or a scratch copy of it in the tests) and one assignment.

    assignment: a name in the folder's course.toml; None: the only one registered there.
    """

    root: Path
    assignment: str = None

    def __post_init__(self):
        self.root = Path(self.root).resolve()
        self.registered = registry.assignment(self.assignment, self.root)  # tasks, points, trains flags
        self.assignment = self.registered.name
        self.config = load_config(self.root)
        directories = self.config.CourseDirectory
        self.source_dir = self.root / directories.get("source_directory", "source")
        self.release_dir = self.root / directories.get("release_directory", "release")
        self.submitted = self.root / directories.get("submitted_directory", "submitted")
        self.autograded = self.root / directories.get("autograded_directory", "autograded")
        self.feedback = self.root / directories.get("feedback_directory", "feedback")
        self.build = self.root / "build" / "grading"

    @property
    def source_notebook(self):
        return self.source_dir / self.assignment / f"{self.assignment}.ipynb"

    @property
    def release_notebook(self):
        return self.release_dir / self.assignment / f"{self.assignment}.ipynb"

    def limit_for(self, source):
        """Seconds a cell with this source may run, from Execute.timeout_func / Execute.timeout."""
        execute = self.config.Execute
        function = execute.get("timeout_func")
        seconds = function(new_code_cell(source)) if callable(function) else execute.get("timeout", 30)
        return float(seconds) if seconds and seconds > 0 else 600.0
