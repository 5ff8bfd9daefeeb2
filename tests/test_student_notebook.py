"""Each assignment's untouched student notebook runs top to bottom with only clean, expected failures."""
import re

import nbformat
import pytest
from nbclient import NotebookClient

from course.registry import assignments


@pytest.fixture(scope="module", params=assignments(), ids=lambda assignment: assignment.name)
def executed(request, tmp_path_factory):
    """(assignment, its student notebook executed in an empty folder, errors allowed)."""
    notebook = nbformat.read(request.param.release_notebook, as_version=4)
    workdir = tmp_path_factory.mktemp("student")  # like a student's folder: no repository files beside it
    NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(workdir)}}).execute()
    return request.param, notebook


def errors(cell):
    return [output for output in cell.get("outputs", []) if output["output_type"] == "error"]


def not_implemented_tasks(executed):
    """The tasks whose check cells failed, each with its "Task N is not implemented yet" and nothing else."""
    checked = []
    for cell in executed.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            task = int(re.search(r"\d+", meta["grade_id"]).group())
            (error,) = errors(cell)
            assert error["ename"] == "NotImplementedYet", (task, error["ename"], error["evalue"])
            assert error["evalue"].startswith(f"Task {task} is not implemented yet"), error["evalue"]
            checked.append(task)
    return checked


def todo_failures(executed):
    """Indices of the other code cells that failed, each with NotImplementedError only (a TODO reached)."""
    failing = []
    for index, cell in enumerate(executed.cells):
        if cell.cell_type != "code" or cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        for error in errors(cell):
            assert error["ename"] == "NotImplementedError", (index, cell.source[:80], error["ename"], error["evalue"])
            failing.append(index)
    return failing


def test_every_check_cell_says_its_task_is_not_implemented(executed):
    assignment, notebook = executed
    assert not_implemented_tasks(notebook) == list(assignment.tasks)


def test_other_cells_fail_only_with_not_implemented_error(executed):
    assert todo_failures(executed[1]), "the untouched notebook should fail where the TODOs are"


def test_cells_without_todos_run(executed):
    """Set-up, data and plotting cells that use no student code must succeed."""
    for cell in executed[1].cells:
        if cell.cell_type == "code" and ("PalindromeDataset(" in cell.source or "plot_lr_schedule" in cell.source):
            assert not errors(cell), cell.source[:80]
