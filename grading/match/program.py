"""The program a probe runs for one submission: the release notebook with the student's code in it.

Provided cells and check cells come from the pristine release, so an edited, deleted or duplicated
check cell, or an edited provided cell, changes nothing. The student's answer cells take the place
of the release's; cells the student added run after the cell they followed. Every deviation is
noted for the report. Provided cells after the last check cell are left out: every record is taken at a check
cell, so nothing graded depends on them (a timing or a plot of the trained model, seconds each); so are provided
cells the release tags "demo" (a measurement or a plot that binds nothing later cells read, and after which the
notebook seeds again before the next graded cell: tests/test_demo_cells.py). The feedback shows them as released,
without outputs.
"""
from dataclasses import dataclass, field

from .cells import classify


@dataclass
class ProgramCell:
    """One cell the probe runs, and where it came from."""

    kind: str  # "given", "answer", "check" or "extra"
    source: str
    limit: float  # seconds it may run
    release_index: int = -1  # position in the release notebook (-1: a cell of the student's own)
    student_position: int = -1  # position in the submission (-1: from the release)
    task: int = 0
    names: list = field(default_factory=list)  # a check cell's arguments


def cell_label(cell):
    """How reports and feedback name a program cell, counting the student's cells from 1."""
    if cell.kind == "check":
        return f"the check cell of task {cell.task}"
    if cell.kind == "answer":
        return f"the answer cell of task {cell.task} (cell {cell.student_position + 1} of the notebook)"
    if cell.kind == "extra":
        return f"an added cell (cell {cell.student_position + 1} of the notebook)"
    return f"the provided cell {cell.release_index + 1} of the release notebook"


def anchored_extras(student_cells):
    """{release index or -1: the student's own cells that follow it}."""
    extras, anchor = {}, -1
    for cell in student_cells:
        if cell.release is not None:
            anchor = cell.release.index
        else:
            extras.setdefault(anchor, []).append(cell)
    return extras


def deviations(layout, student_cells):
    """What differs from the release: missing, duplicated and edited cells, matching without metadata."""
    notes, seen = [], {}
    for cell in student_cells:
        if cell.release is not None:
            seen.setdefault(cell.release.index, []).append(cell)
    for release in layout:
        copies = seen.get(release.index, [])
        label = release.grade_id or f"provided cell {release.index}"
        if not copies and release.kind != "given":
            notes.append(f"{release.kind} cell {label} is missing" + (": re-added" if release.kind == "check" else ""))
        if len(copies) > 1:
            notes.append(f"{release.kind} cell {label} appears {len(copies)} times"
                         + (": run once" if release.kind == "check" else ": all copies run, in order"))
        if release.kind != "answer" and any(c.source.strip() != release.source.strip() for c in copies):
            notes.append(f"{release.kind} cell {label} was edited: the original was run")
    if any(cell.by_content and cell.kind != "given" for cell in student_cells):
        notes.append("cells without nbgrader metadata were matched by their content")
    return notes


def build_program(notebook, layout, limit_for):
    """(cells to run, notes) for a submission.

    Args:
        notebook: the submission as a dict.
        layout: grading.match.notebook.release_layout of the release notebook.
        limit_for: source -> seconds a cell may run (from nbgrader_config.py).
    """
    student_cells = classify(notebook, layout)
    extras = anchored_extras(student_cells)
    program = [ProgramCell("extra", c.source, limit_for(c.source), -1, c.position) for c in extras.get(-1, [])]
    last_check = max((release.index for release in layout if release.kind == "check"), default=-1)
    for release in layout:
        if release.kind == "answer":
            program += [ProgramCell("answer", c.source, limit_for(c.source), release.index, c.position, release.task)
                        for c in student_cells if c.release is release]
        elif release.kind == "check" or release.index < last_check and not release.demo:  # see the docstring above
            program.append(ProgramCell(release.kind, release.source, limit_for(release.source), release.index,
                                       task=release.task, names=release.names))
        program += [ProgramCell("extra", c.source, limit_for(c.source), -1, c.position)
                    for c in extras.get(release.index, [])]
    return program, deviations(layout, student_cells)
