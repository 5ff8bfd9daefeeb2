"""notebook_runs.todo_failures, the rule by which an untouched student notebook fails only where its TODOs are (the
notebooks themselves run in tests/test_student_dist.py, against the installed student wheel)."""

import nbformat
import pytest

from notebook_runs import todo_failures

pytestmark = pytest.mark.fast


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
