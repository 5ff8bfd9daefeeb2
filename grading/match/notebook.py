"""Read notebooks leniently and describe the cells of the released one (answer, check, given)."""
import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

CHECK_CALL = re.compile(r"check_task_(\d+)\s*\(")
MAX_CONTAINERS = 2_000_000  # `{` and `[` in a notebook's text: 100,000 cells with metadata and outputs hold 400,000


class UnreadableNotebook(Exception):
    """The file is not a notebook (not JSON, or no list of cells); the message says why."""


def read(path):
    """The notebook at path as a dict, accepting anything JSON with a list of cells (no schema check).

    A notebook that would hold more than MAX_CONTAINERS objects and lists is refused unparsed: a byte or two each
    in the file, about 70 bytes each in memory, 100 MB of `{},` would take 2.8 GB of the grader's own process.
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        if text.count("{") + text.count("[") > MAX_CONTAINERS:
            raise ValueError("too many JSON objects and lists")
        notebook = json.loads(text)
    except (OSError, ValueError, RecursionError) as error:
        raise UnreadableNotebook(f"{Path(path).name} is not a readable notebook ({type(error).__name__}: "
                                 f"{str(error)[:60]})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise UnreadableNotebook(f"{Path(path).name} has no list of cells")
    return notebook


def source(cell):
    """A cell's source as one string (notebooks store a string or a list of lines)."""
    text = cell.get("source", "") if isinstance(cell, dict) else ""
    return "".join(text) if isinstance(text, list) else str(text)


def nbgrader_meta(cell):
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return meta if isinstance(meta, dict) else {}


def check_call(text):
    """(task, argument names) of a check cell such as `check_task_7(A, B, C)`, else None."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            match = re.fullmatch(r"check_task_(\d+)", node.func.id)
            if match and all(isinstance(arg, ast.Name) for arg in node.args):
                return int(match.group(1)), [arg.id for arg in node.args]
    return None


@dataclass
class ReleaseCell:
    """One code cell of the released notebook and its role in grading."""

    index: int  # position among all cells of the release notebook
    kind: str  # "answer", "check" or "given"
    source: str
    grade_id: str = ""
    task: int = 0
    points: float = 0.0
    names: list = field(default_factory=list)  # a check cell's arguments, e.g. ["model"]
    demo: bool = False  # a provided cell tagged "demo": a plot or a measurement nothing graded depends on


DEMO_TAG = "demo"  # docs/maintainers.md: what a provided cell needs to carry it (tests/test_demo_cells.py)


def release_layout(notebook):
    """The code cells of the released notebook with their roles, in order."""
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if cell.get("cell_type") != "code":
            continue
        meta, text = nbgrader_meta(cell), source(cell)
        grade_id = meta.get("grade_id", "")
        if meta.get("grade"):
            task, names = check_call(text)
            cells.append(ReleaseCell(index, "check", text, grade_id, task, float(meta.get("points", 0)), names))
        elif meta.get("solution"):
            task = re.match(r"task_(\d+)", grade_id)
            cells.append(ReleaseCell(index, "answer", text, grade_id, int(task.group(1)) if task else 0))
        else:
            cells.append(ReleaseCell(index, "given", text, demo=DEMO_TAG in cell.get("metadata", {}).get("tags", [])))
    return cells


def check_cells(layout):
    """{task: the release's check cell} in task order."""
    return {cell.task: cell for cell in layout if cell.kind == "check"}
