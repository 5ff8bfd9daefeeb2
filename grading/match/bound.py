"""Cut a submission down to what an honest notebook holds, before any other stage sees it.

The program the probe runs, the graded notebook nbgrader autogrades and the feedback are all built from the notebook
`bounded` returns, so a notebook of 100,000 cells or megabytes of code costs what an honest one does. The bounds come
from the release notebook, each its count times a factor plus a margin (class Bounds). Cells that stand for a release
cell (the first with each of its grade_ids) are always kept; the student's other cells are kept in order while the
bounds allow. Stored outputs, attachments and metadata other than nbgrader's are always dropped, as no stage reads
them (the probe runs every cell afresh); only beyond their bounds does that count as a cut. Whatever was cut is said
in one sentence: grade.py flags the submission for manual grading with it.
"""
import json
from dataclasses import dataclass

from .notebook import nbgrader_meta, source

CELL_FACTOR, CELL_MARGIN = 4, 50  # the release's cells x 4 + 50: 270 for a release of 55
SOURCE_FACTOR = 10  # characters of code: the release's x 10, plus a margin
CELL_SOURCE_MARGIN, SOURCE_MARGIN = 10_000, 50_000  # one cell's; all cells'
OUTPUT_MARGIN, IMAGE_MARGIN = 20 << 20, 100  # bytes of stored outputs and images (a release stores none)
CUT_SOURCE = "# (cut by the grader: this cell's {size:,} characters of code exceed the bound of {bound:,})\n"


@dataclass(frozen=True)
class Bounds:
    """What an honest submission of this release holds at most."""

    cells: int
    cell_source: int  # characters of one code cell
    source: int  # characters of all code cells
    outputs: int  # bytes of stored outputs and attachments
    images: int

    @classmethod
    def of(cls, release):
        """The bounds for submissions of the release notebook (a dict, as read)."""
        code = [len(source(cell)) for cell in release["cells"] if cell.get("cell_type") == "code"] or [0]
        stored = [stored_size(cell) for cell in release["cells"]]
        return cls(len(release["cells"]) * CELL_FACTOR + CELL_MARGIN, max(code) * SOURCE_FACTOR + CELL_SOURCE_MARGIN,
                   sum(code) * SOURCE_FACTOR + SOURCE_MARGIN, sum(size for size, _ in stored) * 4 + OUTPUT_MARGIN,
                   sum(images for _, images in stored) * 4 + IMAGE_MARGIN)

    def describe(self):
        return (f"{self.cells:,} cells, {self.cell_source:,} characters of code per cell, {self.source:,} in all, "
                f"{self.outputs >> 20} MB of stored outputs, {self.images} images")


def stored_size(cell):
    """(bytes, images) of what a cell stores besides its code: outputs and attachments."""
    if not isinstance(cell, dict):
        return len(str(cell)), 0
    stored = [cell.get("outputs") or [], cell.get("attachments") or {}]
    bundles = [output.get("data") for output in stored[0] if isinstance(output, dict)] + \
        (list(stored[1].values()) if isinstance(stored[1], dict) else [])
    images = sum(key.startswith("image/") for bundle in bundles if isinstance(bundle, dict) for key in bundle)
    return len(json.dumps(stored, default=str)), images


def stored_cut(cells, bounds):
    """[what was cut] when the cells' stored outputs and attachments exceed the bounds (they are dropped anyway)."""
    stored = [stored_size(cell) for cell in cells]
    size, images = sum(size for size, _ in stored), sum(images for _, images in stored)
    return [f"{size >> 20} MB of stored outputs with {images} images were dropped"] \
        if size > bounds.outputs or images > bounds.images else []


def slim(cell):
    """The cell as later stages read it: its type, nbgrader's metadata and (a code cell's) source."""
    cell = cell if isinstance(cell, dict) else {}  # not a cell: an empty one, which no stage reads
    meta = nbgrader_meta(cell)
    kept = {"cell_type": cell.get("cell_type"), "metadata": {"nbgrader": meta} if meta else {}}
    return dict(kept, source=source(cell)) if cell.get("cell_type") == "code" else dict(kept, source="")


def protected(cells, release):
    """Positions of the cells that stand for a release code cell: the first with each of its grade_ids."""
    wanted = {nbgrader_meta(cell).get("grade_id") for cell in release["cells"] if cell.get("cell_type") == "code"}
    first = {}
    for position, cell in enumerate(cells):
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id and grade_id in wanted and cell.get("cell_type") == "code":  # nbgrader_meta: cell is a dict
            first.setdefault(grade_id, position)
    return set(first.values())


def bounded(notebook, release):
    """(the notebook every later stage sees, why it was cut: '' when nothing was).

    Args:
        notebook: the submission as read (grading.match.notebook.read); release: the release notebook, as read.
    """
    bounds, cells = Bounds.of(release), notebook["cells"]
    keep, cuts = protected(cells, release), stored_cut(cells, bounds)
    slimmed, spent, dropped, long = [], 0, 0, 0
    room = bounds.cells - len(keep)
    for position, cell in enumerate(cells):
        cell = slim(cell)
        size = len(cell.get("source", ""))
        if size > bounds.cell_source:
            cell["source"] = CUT_SOURCE.format(size=size, bound=bounds.cell_source)
        if position not in keep:
            if room <= 0 or spent + len(cell["source"]) > bounds.source:
                dropped += 1
                continue
            room -= 1
        spent, long = spent + len(cell["source"]), long + (size > bounds.cell_source)
        slimmed.append(cell)
    cuts += [f"{long} code cell(s) longer than {bounds.cell_source:,} characters were emptied"] if long else []
    cuts += [f"{dropped:,} of its {len(cells):,} cells were left out"] if dropped else []
    reason = (f"the notebook holds more than an honest one ({bounds.describe()}, from the release notebook): "
              f"{'; '.join(cuts)}; grade by hand what the grader did not see") if cuts else ""
    kept = {key: notebook[key] for key in ("nbformat", "nbformat_minor") if key in notebook}  # no other metadata
    return dict(kept, cells=slimmed), reason
