"""Each assignment's student notebook is generated from its reference, current, free of solutions, stored clean."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course.reference import solution_regions
from course.registry import assignments
from submissions import code
from tools.student_leaks import distinctive, secret_mistakes, squeeze

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = assignments()  # in release order
NAMES = [assignment.name for assignment in ASSIGNMENTS]
NOTEBOOKS = [(assignment, kind) for assignment in ASSIGNMENTS for kind in ("solutions", "notebooks")]


def notebook(assignment, kind):
    return assignment.source_notebook if kind == "solutions" else assignment.release_notebook


def cells(path):
    return json.loads(path.read_text())["cells"]


def comparable(notebook):
    """Cells' sources, types and nbgrader metadata: what `make release` decides."""
    return [(cell["cell_type"], code(cell), cell["metadata"].get("nbgrader")) for cell in notebook["cells"]]


@pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=NAMES)
def test_release_is_current(tmp_path, assignment):
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    shutil.copy(ROOT / "course.toml", tmp_path)  # the config reads its time limits from the registry beside it
    name = assignment.name
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", name, "--no-db", "--force",
                    "--log-level=ERROR"], cwd=tmp_path, check=True, capture_output=True)
    fresh = json.loads((tmp_path / "notebooks" / name / f"{name}.ipynb").read_text())
    committed = json.loads(assignment.release_notebook.read_text())
    assert comparable(fresh) == comparable(committed), "notebooks/ is stale: run `make release` and commit"


def solution_lines(assignment):
    """Every substantive line inside a BEGIN/END SOLUTION region of the assignment's reference, but those its given
    code holds too (a decoder block's answer repeats lines of the encoder block handed out beside it)."""
    answers, given = solution_regions(assignment.source_notebook)
    given = "\n".join(given)
    return [line.strip() for line in answers if len(line.strip()) > 12 and line.strip() not in given]


def student_code(assignment):
    return "\n".join(code(cell) for cell in cells(assignment.release_notebook) if cell["cell_type"] == "code")


@pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=NAMES)
def test_student_notebook_holds_no_solution_code(assignment):
    """No solution line in any code cell (the task descriptions may quote the pinned API, e.g. the FFN layout)."""
    student = student_code(assignment)
    assert not re.search(r"(BEGIN|END) (SOLUTION|HIDDEN TESTS)", student)
    leaked = [line for line in solution_lines(assignment) if line in student]
    assert not leaked, f"solution lines in the student notebook: {leaked[:5]}"
    assert solution_lines(assignment)  # the scan above is not vacuous


@pytest.mark.parametrize("earlier, later", [(a, b) for i, a in enumerate(ASSIGNMENTS) for b in ASSIGNMENTS[i + 1:]],
                         ids=lambda assignment: assignment.name)
def test_no_student_notebook_gives_away_a_later_assignment(earlier, later):
    """Release order: an assignment may hand out an earlier one's answers as provided code, never a later one's."""
    answers, given = ("\n".join(lines) for lines in solution_regions(later.source_notebook))
    earlier_code = squeeze(student_code(earlier))
    leaked = [line for squeezed, line in distinctive(answers, given).items() if squeezed in earlier_code]
    assert not leaked, f"{earlier.name}'s student notebook holds answers of {later.name}: {leaked[:5]}"


def test_an_attribute_a_bullet_dictates_is_no_answer_line():
    """"`dropout`: `nn.Dropout(dropout)`" in a task's text gives `self.dropout = nn.Dropout(dropout)` away (and the
    first line of a wrapped assignment); an attribute the text does not dictate stays an answer line."""
    text = ("- `dropout`: `nn.Dropout(dropout)`; `feedforward`: `nn.Sequential(nn.Linear(embed_dim, feedforward_dim), "
            "activation(), nn.Linear(feedforward_dim, embed_dim))`")
    answers = ("self.dropout = nn.Dropout(dropout)\n"
               "self.feedforward = nn.Sequential(nn.Linear(embed_dim, feedforward_dim), activation(),\n"
               "self.attention_dropout = nn.Dropout(dropout)")
    assert list(distinctive(answers, text).values()) == ["self.attention_dropout = nn.Dropout(dropout)"]


def test_a_mistake_that_another_notebook_teaches_is_no_leak():
    """A planted mistake that is another assignment's lesson (a post-norm block) is public text; a mistake found in
    no notebook stays a needle."""
    mistakes = "x = self.norm1(x + self.dropout(attended))\nreturn self.head(self.final_norm(x.mean(dim=1)))"
    course_code = "attended = self.attention(x)\n        x = self.norm1(x + self.dropout(attended))"
    assert list(secret_mistakes(mistakes, course_code).values()) == ["return self.head(self.final_norm(x.mean(dim=1)))"]
    assert len(secret_mistakes(mistakes, "")) == 2


@pytest.mark.parametrize("assignment, kind", NOTEBOOKS, ids=lambda value: getattr(value, "name", value))
def test_notebooks_are_stored_without_outputs(assignment, kind):
    for cell in cells(notebook(assignment, kind)):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


@pytest.mark.parametrize("assignment, kind", NOTEBOOKS, ids=lambda value: getattr(value, "name", value))
def test_every_task_has_one_locked_check_cell_with_its_points(assignment, kind):
    checks = {}
    for cell in cells(notebook(assignment, kind)):
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade"):
            task = int(re.fullmatch(r"check_task_(\d+)", meta["grade_id"]).group(1))
            assert meta["locked"] and code(cell).startswith(f"check_task_{task}(")
            checks[task] = meta["points"]
    assert checks == assignment.points


@pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=NAMES)
def test_every_assignment_is_worth_a_whole_number_of_at_least_ten_points(assignment):
    """10 for most assignments; a larger one may be worth more (README's table)."""
    total = sum(assignment.points.values())
    assert total >= 10 and total == int(total), total


@pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=NAMES)
def test_notebook_asks_colab_for_a_gpu(assignment):
    metadata = json.loads(assignment.release_notebook.read_text())["metadata"]
    assert metadata["accelerator"] == "GPU" and metadata["kernelspec"]["name"] == "python3"
