"""Stage 2, the sandbox run: a submission's notebook -> what the probe recorded of the student's objects.

Entry point: `run_submission` (after `prepare_release`, once per grading run), on a notebook cut to the bounds
of an honest one first (bound.py, called by grade.py before any other stage). The cells are matched to the
release (notebook.py, match.py), the program is built from pristine given and check cells and the student's
answers (program.py), and the probe (probe.py, with recipes.py beside it in the read-only runtime folder,
runtime.py) runs it as an unprivileged user in bubblewrap (sandbox.py, cgroups.py), watched by supervise.py.
Nothing here scores: the records go to grading.judge.
"""
from dataclasses import dataclass
from pathlib import Path

from .bound import bounded
from .notebook import UnreadableNotebook, check_cells, read, release_layout
from .program import build_program
from .runtime import prepare_runtime
from .sandbox import SandboxUnavailable, lease_slots
from .sandbox import choose as choose_sandbox
from .supervise import STOPPED, Job, run_probe

__all__ = ["Release", "STOPPED", "SandboxUnavailable", "UnreadableNotebook", "bounded", "choose_sandbox",
           "lease_slots", "prepare_release", "read", "release_program", "run_submission"]


@dataclass
class Release:
    """The release notebook every submission is matched to, and the runtime folder its probes run from."""

    notebook: dict
    layout: list
    checks: dict  # {task: the release's check cell (names, points)}
    runtime: Path
    limit_for: object  # seconds a cell with this source may run (Course.limit_for)


def prepare_release(course, cases):
    """The assignment's release notebook, its layout and check cells, and a fresh runtime folder with the cases."""
    notebook = read(course.release_notebook)
    layout = release_layout(notebook)
    checks = [task.check for task in course.registered.tasks.values()]
    runtime = prepare_runtime(course.build / "runtime", cases, checks)
    return Release(notebook, layout, check_cells(layout), runtime, course.limit_for)


def release_program(release):
    """The release's own program: what feedback shows for a submission that could not be run."""
    return build_program(release.notebook, release.layout, release.limit_for)[0]


def run_submission(notebook, release, scratch, box, slot):
    """Run a readable submission notebook in the sandbox: (program, the probe's run, deviations from the release).

    Args:
        notebook: the submission, as read by `read`.
        scratch: the submission's own scratch folder (emptied and removed by the supervisor).
        box: the sandbox chosen for this run (sandbox.choose); slot: a leased uid slot (sandbox.lease_slots).
    """
    program, deviations = build_program(notebook, release.layout, release.limit_for)
    run = run_probe(Job(program, scratch, release.runtime, box, slot))
    return program, run, deviations
