"""The reference namespace: an assignment's provided cells and its definition answers, nothing else."""
import pytest
from nbformat import read, write
from nbformat.v4 import new_code_cell, new_notebook

from course.reference import load_reference, reference_source
from course.registry import assignments

pytestmark = pytest.mark.fast

SAMPLE = assignments()[0]  # whose tasks the notebook below answers: one by definitions, one by training
DEFINED, TRAINED = SAMPLE.definition_tasks[0], SAMPLE.training_tasks[0]


def nbgrader(grade_id, **flags):
    """nbgrader metadata: a plain cell's flags, overridden by flags."""
    return {"nbgrader": {**dict(schema_version=3, grade_id=grade_id, grade=False, solution=False, locked=False,
                                task=False), **flags}}


@pytest.fixture
def notebook(tmp_path):
    """A notebook shaped like SAMPLE's: set-up, a provided helper, a definition task's answer using it, a training
    task's answer, the definition task's check."""
    cells = [new_code_cell("raise RuntimeError('set-up cells are not part of the reference')"),
             new_code_cell("def helper(x):\n    return x + 1", metadata=nbgrader("provided_helper", locked=True)),
             new_code_cell("def scaled_softmax_attention(x):\n    return helper(x)",
                           metadata=nbgrader(f"task_{DEFINED}_attention", solution=True)),
             new_code_cell("raise RuntimeError('training answers are not executed')",
                           metadata=nbgrader(f"task_{TRAINED}_train", solution=True)),
             new_code_cell(f"check_task_{DEFINED}(scaled_softmax_attention)",
                           metadata=nbgrader(f"check_task_{DEFINED}", grade=True, locked=True, points=1))]
    path = tmp_path / f"{SAMPLE.name}.ipynb"
    write(new_notebook(cells=cells), str(path))
    return path


def test_provided_cells_and_definition_answers_make_the_reference(notebook):
    namespace = load_reference(reference_source(SAMPLE, notebook))
    assert namespace["scaled_softmax_attention"](1) == 2


@pytest.mark.parametrize("flags", [{"grade_id": "helper"}, {"locked": False}, {"solution": True}],
                         ids=["unmarked", "unlocked", "an answer of no task"])
def test_only_a_locked_read_only_provided_cell_is_provided(notebook, flags):
    edited = read(notebook, as_version=4)
    edited.cells[1].metadata.nbgrader.update(flags)
    write(edited, str(notebook))
    with pytest.raises(NameError, match="helper"):
        load_reference(reference_source(SAMPLE, notebook))["scaled_softmax_attention"](1)
