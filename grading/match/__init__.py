"""Stage 2, matching: a submission's notebook -> the program the probe runs, its cells matched to the release.

Entry points: `prepare_release` (once per grading run), then for each submission `bounded` (its notebook cut to the
bounds of an honest one, before any other stage sees it: bound.py) and `match_submission`: each code cell is told
what it is (notebook.py, cells.py) and the program is built from the pristine given and check cells and the
student's answers (program.py). Nothing here runs student code: the program goes to grading.sandbox.
"""
from dataclasses import dataclass

from .bound import bounded
from .notebook import UnreadableNotebook, check_cells, read, release_layout
from .program import build_program

__all__ = ["Release", "UnreadableNotebook", "bounded", "match_submission", "prepare_release", "read",
           "release_program"]


@dataclass
class Release:
    """The release notebook every submission is matched to: its layout, its check cells, the cells' time limits."""

    notebook: dict
    layout: list
    checks: dict  # {task: the release's check cell (names, points)}
    limit_for: object  # seconds a cell with this source may run (Course.limit_for)


def prepare_release(course):
    """The assignment's release notebook, its layout and check cells."""
    notebook = read(course.release_notebook)
    layout = release_layout(notebook)
    return Release(notebook, layout, check_cells(layout), course.limit_for)


def release_program(release):
    """The release's own program: what feedback shows for a submission that could not be run."""
    return build_program(release.notebook, release.layout, release.limit_for)[0]


def match_submission(notebook, release):
    """(the program to run: [ProgramCell], deviations from the release) of a readable submission notebook."""
    return build_program(notebook, release.layout, release.limit_for)
