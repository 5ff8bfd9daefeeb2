"""Each assignment's untouched student notebook runs top to bottom with only clean, expected failures."""
import importlib

import nbformat
import pytest
from nbclient import NotebookClient

from course.registry import assignments
from notebook_runs import errors, not_implemented_tasks, todo_failures


@pytest.fixture(scope="module", params=assignments(), ids=lambda assignment: assignment.name)
def executed(request, tmp_path_factory):
    """(assignment, its student notebook executed in an empty folder, errors allowed)."""
    notebook = nbformat.read(request.param.release_notebook, as_version=4)
    workdir = tmp_path_factory.mktemp("student")  # like a student's folder: no repository files beside it
    NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(workdir)}}).execute()
    return request.param, notebook


def test_every_check_cell_says_its_task_is_not_implemented(executed):
    assignment, notebook = executed
    assert not_implemented_tasks(notebook) == list(assignment.tasks)


def test_other_cells_fail_only_with_not_implemented_error(executed):
    assert todo_failures(executed[1]), "the untouched notebook should fail where the TODOs are"


def test_cells_without_todos_run(executed):
    """Set-up, data and plotting cells that use no student code must succeed: the ones the assignment's own tests name
    (course/<a>/tests/student_notebook.py, GIVEN_CELLS), each found in the notebook."""
    assignment, notebook = executed
    given = importlib.import_module(f"course.{assignment.name}.tests.student_notebook").GIVEN_CELLS
    for needle in given:
        found = [cell for cell in notebook.cells if cell.cell_type == "code" and needle in cell.source]
        assert found, f"no code cell of the student notebook holds {needle!r}"
        for cell in found:
            assert not errors(cell), cell.source[:80]



def failed_cell(source, ename, name=None):
    """A code cell whose output is the error ename (a NameError's message naming name)."""
    evalue = f"name '{name}' is not defined" if name else ""
    return nbformat.v4.new_code_cell(source, outputs=[nbformat.v4.new_output("error", ename=ename, evalue=evalue,
                                                                             traceback=[])])


def test_a_name_error_passes_only_for_a_name_a_failed_cell_binds():
    """todo_failures: a cell may fail with NameError of what an earlier failed cell binds, of nothing else."""
    notebook = nbformat.v4.new_notebook(cells=[
        failed_cell("merges = train_bpe(text)\n\n\ndef scores(model):\n    return 0", "NotImplementedError"),
        failed_cell("tokens(merges)", "NameError", "merges"), failed_cell("scores(1)", "NameError", "scores")])
    assert todo_failures(notebook) == [0, 1, 2]
    notebook.cells.append(failed_cell("print(undefined)", "NameError", "undefined"))
    with pytest.raises(AssertionError, match="undefined"):
        todo_failures(notebook)
