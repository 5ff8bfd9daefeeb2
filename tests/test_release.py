"""The student notebook is generated from the reference, current, free of solutions, and stored clean."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_paths import NAME, POINTS, RELEASE, SOURCE

ROOT = Path(__file__).resolve().parent.parent


def cells(path):
    return json.loads(path.read_text())["cells"]


def code(cell):
    return "".join(cell["source"])


def comparable(notebook):
    """Cells' sources, types and nbgrader metadata: what `make release` decides."""
    return [(cell["cell_type"], code(cell), cell["metadata"].get("nbgrader")) for cell in notebook["cells"]]


def test_release_is_current(tmp_path):
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    shutil.copy(ROOT / "course.toml", tmp_path)  # the config reads its time limits from the registry beside it
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", NAME, "--no-db", "--force",
                    "--log-level=ERROR"], cwd=tmp_path, check=True, capture_output=True)
    fresh = json.loads((tmp_path / "notebooks" / NAME / f"{NAME}.ipynb").read_text())
    committed = json.loads(RELEASE.read_text())
    assert comparable(fresh) == comparable(committed), "notebooks/ is stale: run `make release` and commit"


def solution_lines():
    """Every substantive line inside a BEGIN/END SOLUTION region of the reference."""
    lines = []
    for cell in cells(SOURCE):
        inside = False
        for line in code(cell).splitlines():
            if "BEGIN SOLUTION" in line:
                inside = True
            elif "END SOLUTION" in line:
                inside = False
            elif inside and len(line.strip()) > 12:
                lines.append(line.strip())
    return lines


def test_student_notebook_holds_no_solution_code():
    """No solution line in any code cell (the task descriptions may quote the pinned API, e.g. the FFN layout)."""
    student = "\n".join(code(cell) for cell in cells(RELEASE) if cell["cell_type"] == "code")
    assert not re.search(r"(BEGIN|END) (SOLUTION|HIDDEN TESTS)", student)
    leaked = [line for line in solution_lines() if line in student]
    assert not leaked, f"solution lines in the student notebook: {leaked[:5]}"
    assert len(solution_lines()) > 40  # the scan above is not vacuous


@pytest.mark.parametrize("path", [SOURCE, RELEASE], ids=["solutions", "notebooks"])
def test_notebooks_are_stored_without_outputs(path):
    for cell in cells(path):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


@pytest.mark.parametrize("path", [SOURCE, RELEASE], ids=["solutions", "notebooks"])
def test_every_task_has_one_locked_check_cell_with_its_points(path):
    checks = {}
    for cell in cells(path):
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade"):
            task = int(re.fullmatch(r"check_task_(\d)", meta["grade_id"]).group(1))
            assert meta["locked"] and code(cell).startswith(f"check_task_{task}(")
            checks[task] = meta["points"]
    assert checks == POINTS and sum(checks.values()) == 10


def test_notebook_asks_colab_for_a_gpu():
    metadata = json.loads(RELEASE.read_text())["metadata"]
    assert metadata["accelerator"] == "GPU" and metadata["kernelspec"]["name"] == "python3"
