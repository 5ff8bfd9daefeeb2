"""The reference answers: the answer cells of an assignment's solutions notebook, executed into a namespace.

Read by tools/ (fixtures, assets, bench) and grading/ (expected values), never copied anywhere a student or a
probe can read. Only the tasks answered by definitions are executed: a training task's answer trains a model.
"""
import json
import linecache
import math
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import registry


PROVIDED = "provided_"  # grade_id prefix of a read-only cell of given code the answers build on (an earlier
#                         assignment's answers handed out, e.g. its encoder block)


def reference_source(assignment=None, notebook=None):
    """The code of the assignment's provided cells and of the answer cells of its definition tasks, in notebook order.

    Provided cells are nbgrader read-only cells (locked, neither solution nor grade) whose grade_id starts with
    PROVIDED; other given cells (set-up, examples, plots, training) are never executed here.

    Args:
        assignment: a registry.Assignment (default: the registry's only assignment).
        notebook: the solutions notebook to read (default: the assignment's, in this checkout).
    Returns:
        the cells' code joined by blank lines.
    """
    assignment = assignment or registry.assignment()
    prefixes = tuple(f"task_{task}_" for task in assignment.definition_tasks)
    cells = json.loads(Path(notebook or assignment.source_notebook).read_text())["cells"]
    chosen = []
    for cell in cells:
        nbgrader = cell["metadata"].get("nbgrader", {})
        grade_id = nbgrader.get("grade_id", "")
        answer = nbgrader.get("solution") and grade_id.startswith(prefixes)
        provided = nbgrader.get("locked") and not nbgrader.get("solution") and not nbgrader.get("grade") \
            and grade_id.startswith(PROVIDED)
        if answer or provided:
            chosen.append("".join(cell["source"]))
    return "\n\n".join(chosen)


def solution_regions(notebook):
    """(answer lines, other lines) of a solutions notebook: the lines inside its BEGIN/END SOLUTION regions, and
    every other line of its cells (the given text and code), markers left out, in notebook order."""
    answers, given = [], []
    for cell in json.loads(Path(notebook).read_text())["cells"]:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        inside = False
        for line in source.splitlines():
            if "### BEGIN SOLUTION" in line or "### END SOLUTION" in line:
                inside = "BEGIN" in line
                continue
            (answers if inside else given).append(line)
    return answers, given


def load_reference(source=None, cell=None):
    """Execute the reference answer cells (or a variant of their source) and return their namespace.

    cell: run them as a notebook cell of that name (`<ipython-input-...>`), whose lines a traceback shows, as a
    student's code is run; by default they are ours ("<reference answer cells>").
    """
    namespace = {"math": math, "torch": torch, "nn": nn, "F": F}
    source = source or reference_source()
    if cell:
        linecache.cache[cell] = (len(source), None, source.splitlines(True), cell)
    exec(compile(source, cell or "<reference answer cells>", "exec"), namespace)
    return namespace


def reference_of(name):
    """The namespace of the reference answers of the assignment called name."""
    return load_reference(reference_source(registry.assignment(name)))
