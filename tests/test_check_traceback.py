"""A failed check shows the student's line and one sentence in a notebook, never the checkers' frames."""
import re
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

STUDENT_LINE = "check_task_1(my_attention)  # the student's call"
CELLS = [
    "from checkers.transformer import check_task_1, check_task_4",
    "def my_attention(query, key, value, mask=None):\n    return query, query",
    f"x = 1\n{STUDENT_LINE}",
    "class PositionalEncoding:\n    pass\ncheck_task_4(PositionalEncoding)",
]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def notebook():
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS],
                                    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                             "language": "python"}})


@pytest.fixture(scope="module")
def executed():
    executed = notebook()
    NotebookClient(executed, timeout=120, kernel_name="python3", allow_errors=True).execute()
    return executed


def error_of(cell):
    (error,) = [output for output in cell.outputs if output["output_type"] == "error"]
    return error, ANSI.sub("", "\n".join(error["traceback"]))


@pytest.mark.parametrize("index, task, line", [(2, 1, STUDENT_LINE), (3, 4, "check_task_4(PositionalEncoding)")])
def test_failure_shows_the_students_line_and_one_sentence(executed, index, task, line):
    error, text = error_of(executed.cells[index])
    assert error["ename"] == "CheckFailure" and error["evalue"].startswith(f"Task {task}")
    assert line in text and f"CheckFailure: Task {task}" in text
    assert "line 2" in text if index == 2 else "line 3" in text  # the line of the cell that called the check
    for ours in ("checkers/", "checkers\\", "_core", "Drop the checker", "Traceback", "wrapper"):
        assert ours not in text, f"{ours!r} shown to the student:\n{text}"
    assert len(text.strip().splitlines()) <= 4, text


def test_failure_is_coloured_like_ipythons_errors(executed):
    error, _ = error_of(executed.cells[2])
    assert any("\x1b[" in line for line in error["traceback"])


def test_nbval_failure_shows_no_checker_frames(tmp_path):
    path = tmp_path / "student.ipynb"
    nbformat.write(notebook(), path)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax", "-p", "no:cacheprovider", str(path)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    report = ANSI.sub("", run.stdout)
    assert run.returncode == 1 and "2 failed" in report, report[-2000:]
    assert STUDENT_LINE in report and "CheckFailure: Task 1:" in report and "CheckFailure: Task 4:" in report
    for ours in ("checkers/", "_core", "Drop the checker", "wrapper"):
        assert ours not in report, f"{ours!r} in nbval's report:\n{report}"
