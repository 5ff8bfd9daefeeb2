"""Find the submissions under submitted/ and the notebook to grade in each."""
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .naming import pick


@dataclass
class Submission:
    """One student's folder submitted/<student>/<assignment>/ and the notebook graded from it."""

    student: str
    folder: Path
    notebook: Path = None  # None: the folder holds no notebook
    notes: list = field(default_factory=list)  # what needs the instructor
    info: list = field(default_factory=list)  # what collect did that needs no one (a renamed or extra file)


def chosen_notebook(folder, assignment):
    """(notebook path or None, notes, info): <assignment>.ipynb, else the best other notebook in the folder."""
    expected = folder / f"{assignment}.ipynb"
    if expected.is_file():
        return expected, [], []
    others = [path for path in folder.glob("*.ipynb") if path.is_file()]
    if not others:
        return None, ["no notebook in the submission folder"], []
    name, _ = pick([(path.name, datetime.fromtimestamp(path.stat().st_mtime)) for path in others], assignment)
    return folder / name, [], [f"notebook `{name}` graded as {assignment}.ipynb"]


def collected_notes(folder):
    """(notes, info) `make collect` left in collected.json (skipped or late files; renamed or extra ones), if any."""
    try:
        record = json.loads((folder / "collected.json").read_text())
        return list(record.get("notes", [])), list(record.get("info", []))
    except (OSError, ValueError, AttributeError, TypeError):
        return [], []


def discover(submitted, assignment):
    """Every submission folder submitted/<student>/<assignment>/, by student id."""
    found = []
    for folder in sorted(submitted.glob(f"*/{assignment}")):
        if folder.is_dir():
            notebook, notes, info = chosen_notebook(folder, assignment)
            collect_notes, collect_info = collected_notes(folder)
            found.append(Submission(folder.parent.name, folder, notebook, collect_notes + notes, collect_info + info))
    return found
