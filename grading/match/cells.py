"""Tell each code cell of a submission what it is: an answer, a check, a provided cell, or the student's own.

nbgrader metadata (grade_id) decides first. Without it (stripped by an editor, or Colab) the
content decides: a `check_task_N(` call marks a check cell; a cell that defines a name an answer
cell defines (`class Attention`), or keeps most of an answer cell's provided lines, is that
answer; a cell that keeps most lines of a provided cell is that cell; anything else is the student's.
"""
import re
from dataclasses import dataclass

from .notebook import CHECK_CALL, nbgrader_meta, source

STUB_LINES = {"# YOUR CODE HERE", "raise NotImplementedError()", "raise NotImplementedError"}
DEFINES = re.compile(r"^(?:class|def)\s+(\w+)", re.M)
ANSWER_SIMILARITY, GIVEN_SIMILARITY = 0.5, 0.6


@dataclass
class StudentCell:
    """One code cell of the submission and the release cell it stands for (None: the student's own)."""

    position: int  # index among the submission's cells
    source: str
    kind: str  # "answer", "check", "given" or "extra"
    release: object = None  # the ReleaseCell it matches
    by_content: bool = False  # matched without nbgrader metadata


def lines(text):
    return {line.strip() for line in text.splitlines() if line.strip()} - STUB_LINES


def overlap(release_text, text):
    """Share of the release cell's lines (stubs aside) that the student's cell still holds."""
    wanted = lines(release_text)
    return len(wanted & lines(text)) / len(wanted) if wanted else 0.0


def by_grade_id(cell, layout):
    grade_id = nbgrader_meta(cell).get("grade_id")
    return next((release for release in layout if grade_id and release.grade_id == grade_id), None)


def by_content(text, layout):
    """The release cell this text stands for, judged by content alone, or None."""
    call = CHECK_CALL.search(text)
    if call:
        return next((r for r in layout if r.kind == "check" and r.task == int(call.group(1))), None)
    defined = set(DEFINES.findall(text))
    answers = [r for r in layout if r.kind == "answer"]
    named = [r for r in answers if defined & set(DEFINES.findall(r.source))]
    if named:
        return named[0]
    best = max(layout, key=lambda r: overlap(r.source, text), default=None)
    threshold = ANSWER_SIMILARITY if best is not None and best.kind == "answer" else GIVEN_SIMILARITY
    return best if best is not None and overlap(best.source, text) >= threshold else None


def classify(notebook, layout):
    """[StudentCell] for every non-empty code cell of the submission, in its order."""
    cells = []
    for position, cell in enumerate(notebook["cells"]):
        text = source(cell)
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or not text.strip():
            continue
        release = by_grade_id(cell, layout)
        content = release is None
        if content:
            release = by_content(text, layout)
        kind = release.kind if release is not None else "extra"
        cells.append(StudentCell(position, text, kind, release, content and release is not None))
    return cells
