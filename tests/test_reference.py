"""The reference namespace: an assignment's provided cells and its definition answers, nothing else."""
import pytest
from nbformat import read, write
from nbformat.v4 import new_code_cell, new_notebook

from course.reference import load_reference, reference_source
from course.registry import assignment


def nbgrader(grade_id, **flags):
    """nbgrader metadata: a plain cell's flags, overridden by flags."""
    return {"nbgrader": {**dict(schema_version=3, grade_id=grade_id, grade=False, solution=False, locked=False,
                                task=False), **flags}}


@pytest.fixture
def notebook(tmp_path):
    """A transformer-shaped notebook: set-up, a provided helper, task 1's answer using it, task 6's training."""
    cells = [new_code_cell("raise RuntimeError('set-up cells are not part of the reference')"),
             new_code_cell("def helper(x):\n    return x + 1", metadata=nbgrader("provided_helper", locked=True)),
             new_code_cell("def scaled_softmax_attention(x):\n    return helper(x)",
                           metadata=nbgrader("task_1_attention", solution=True)),
             new_code_cell("raise RuntimeError('training answers are not executed')",
                           metadata=nbgrader("task_6_train", solution=True)),
             new_code_cell("check_task_1(scaled_softmax_attention)",
                           metadata=nbgrader("check_task_1", grade=True, locked=True, points=1))]
    path = tmp_path / "transformer.ipynb"
    write(new_notebook(cells=cells), str(path))
    return path


def test_provided_cells_and_definition_answers_make_the_reference(notebook):
    namespace = load_reference(reference_source(assignment("transformer"), notebook))
    assert namespace["scaled_softmax_attention"](1) == 2


@pytest.mark.parametrize("flags", [{"grade_id": "helper"}, {"locked": False}, {"solution": True}],
                         ids=["unmarked", "unlocked", "an answer of no task"])
def test_only_a_locked_read_only_provided_cell_is_provided(notebook, flags):
    edited = read(notebook, as_version=4)
    edited.cells[1].metadata.nbgrader.update(flags)
    write(edited, str(notebook))
    with pytest.raises(NameError, match="helper"):
        load_reference(reference_source(assignment("transformer"), notebook))["scaled_softmax_attention"](1)
