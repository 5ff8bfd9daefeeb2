"""A failure shows the student's own lines and one sentence in a notebook, never the frames of checkers/, course_lib/
or torch: a failed check of the transformer's, an error the student's code raised inside a check or inside train(), a
wrong keyword (the same in process, for any assignment: tests/test_check_traceback.py)."""
import re
import subprocess
import sys
import textwrap

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.full  # each test runs the notebook in a kernel or Python in a subprocess

STUDENT_LINE = "check_task_1(my_attention)  # the student's call"
CELLS = [
    "from checkers.transformer import check_task_1, check_task_4",
    "def my_attention(query, key, value, mask=None):\n    return query, query",
    f"x = 1\n{STUDENT_LINE}",
    "class PositionalEncoding:\n    pass\ncheck_task_4(PositionalEncoding)",
]
# A PositionalEncoding whose table is right and whose forward raises two helper calls deep, in the student's code.
DEEP = textwrap.dedent('''\
    import torch
    import torch.nn as nn

    class DeepPositionalEncoding(nn.Module):
        def __init__(self, embed_dim, max_len=5000):
            super().__init__()
            angle = torch.arange(max_len)[:, None] * 10000.0 ** (-torch.arange(0, embed_dim, 2) / embed_dim)
            pe = torch.zeros(max_len, embed_dim)
            pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle[:, : embed_dim // 2])
            self.register_buffer("pe", pe[None], persistent=False)

        def forward(self, x):
            return x + self.rows(x.shape)  # the forward's line

        def rows(self, shape):
            return self.first(shape)  # the helper's line

        def first(self, shape):
            return self.pe[:, : shape.size(1)]  # the line that raises
''')
DEEP_LINES = ["return x + self.rows(x.shape)  # the forward's line", "return self.first(shape)  # the helper's line",
              "return self.pe[:, : shape.size(1)]  # the line that raises"]
MODEL = textwrap.dedent('''\
    from course_lib import train
    from course_lib.seq2seq import teacher_forcing_loss

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 2)

        def forward(self, x):
            return self.head(x)  # the model's forward

        def head(self, x):
            return self.linear(x.T)  # the model's wrong line

    batches = [(torch.randn(8, 4), torch.randint(0, 2, (8,)))] * 2
''')
STUDENT_CELLS = [
    DEEP,
    "check_task_4(DeepPositionalEncoding)  # the deep call",
    MODEL,
    "history = train(Classifier(), batches, batches, 1, 1e-3)  # the train call",
    "history = train(Classifier(), batches, None, 1, 1e-3, loss_fn=teacher_forcing_loss)  # the loss_fn call",
    "history = train(Classifier(), batches, batches, 1, 1e-3, los_fn=None)  # the misspelt call",
    "def stuck(query, key, value, mask=None):\n    return stuck(query, key, value)\ncheck_task_1(stuck)",
]
OURS = ("checkers/", "checkers\\", "course_lib/", "course_lib\\", "torch/", "torch\\", "site-packages", "_core",
        "Drop the checker", "Traceback", "wrapper")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def notebook(cells=CELLS):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells],
                                    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                             "language": "python"}})


@pytest.fixture(scope="module")
def executed():
    executed = notebook(CELLS + STUDENT_CELLS)
    NotebookClient(executed, timeout=120, kernel_name="python3", allow_errors=True).execute()
    return executed


def error_of(cell):
    (error,) = [output for output in cell.outputs if output["output_type"] == "error"]
    return error, ANSI.sub("", "\n".join(error["traceback"]))


def student_cell(executed, source):
    return executed.cells[len(CELLS) + STUDENT_CELLS.index(source)]


def assert_none_of_ours(text):
    for ours in OURS:
        assert ours not in text, f"{ours!r} shown to the student:\n{text}"


@pytest.mark.parametrize("index, task, line", [(2, 1, STUDENT_LINE), (3, 4, "check_task_4(PositionalEncoding)")])
def test_failure_shows_the_students_line_and_one_sentence(executed, index, task, line):
    error, text = error_of(executed.cells[index])
    assert error["ename"] == "CheckFailure" and error["evalue"].startswith(f"Task {task}")
    assert line in text and f"CheckFailure: Task {task}" in text
    assert "line 2" in text if index == 2 else "line 3" in text  # the line of the cell that called the check
    assert_none_of_ours(text)
    assert len(text.strip().splitlines()) <= 4, text


def test_failure_is_coloured_like_ipythons_errors(executed):
    error, _ = error_of(executed.cells[2])
    assert any("\x1b[" in line for line in error["traceback"])


def test_an_error_deep_in_the_students_code_shows_each_of_their_frames(executed):
    error, text = error_of(student_cell(executed, STUDENT_CELLS[1]))
    assert error["evalue"] == ("Task 4: PositionalEncoding.forward raised AttributeError: "
                               "'torch.Size' object has no attribute 'size'"), error["evalue"]
    cell = f"In[{len(CELLS) + 1}]"  # the cell that defines the class
    shown = [f"{cell}, line 13, in DeepPositionalEncoding.forward", DEEP_LINES[0],
             f"{cell}, line 16, in DeepPositionalEncoding.rows", DEEP_LINES[1],
             f"{cell}, line 19, in DeepPositionalEncoding.first", DEEP_LINES[2],
             f"CheckFailure: {error['evalue']}"]
    positions = [text.find(part) for part in ["check_task_4(DeepPositionalEncoding)  # the deep call", *shown]]
    assert -1 not in positions and positions == sorted(positions), text  # the call, each frame in order, the sentence
    assert_none_of_ours(text)


def test_an_error_of_the_students_model_inside_train_shows_their_frames_only(executed):
    error, text = error_of(student_cell(executed, STUDENT_CELLS[3]))
    assert error["ename"] == "RuntimeError" and "mat1 and mat2" in error["evalue"]
    parts = ["# the train call", "in Classifier.forward", "return self.head(x)  # the model's forward",
             "in Classifier.head", "return self.linear(x.T)  # the model's wrong line", "RuntimeError: mat1 and mat2"]
    positions = [text.find(part) for part in parts]
    assert -1 not in positions and positions == sorted(positions), text
    assert_none_of_ours(text)
    assert len(text.strip().splitlines()) <= 12, text


@pytest.mark.parametrize("index, sentence", [
    (4, "train() takes teacher_forcing_loss(model, sources, targets) as batch_loss=…, not loss_fn=: it calls "
        "loss_fn(logits, labels) and batch_loss(model, inputs, labels)."),
    (5, "train() takes loss_fn=…, not los_fn=; it takes model, train_loader, val_loader, num_epochs, lr, "),
])
def test_a_wrong_keyword_answers_in_one_sentence_at_the_students_line(executed, index, sentence):
    error, text = error_of(student_cell(executed, STUDENT_CELLS[index]))
    assert error["ename"] == "ArgumentError" and error["evalue"].startswith(sentence), error["evalue"]
    if index == 5:  # an unknown keyword: every accepted one is named
        assert error["evalue"].endswith("callbacks=…, loss_fn=…, threads=…, batch_loss=…, evaluate_fn=….")
    assert STUDENT_CELLS[index] in text and text.strip().endswith(error["evalue"]), text
    assert len([line for line in text.splitlines() if line.strip()]) == 3, text  # the cell and line, its source,
    # the sentence
    assert_none_of_ours(text)


def test_a_runaway_recursion_stays_short(executed):
    error, text = error_of(student_cell(executed, STUDENT_CELLS[6]))
    assert "raised RecursionError" in error["evalue"] and "return stuck(query, key, value)" in text
    assert re.search(r"skipping similar frames: stuck at line 2 \(\d{3,} times\)", text), text
    assert len(text.strip().splitlines()) <= 10, text
    assert_none_of_ours(text)


def test_nbval_failure_shows_no_checker_frames(tmp_path):
    path = tmp_path / "student.ipynb"
    nbformat.write(notebook(CELLS + STUDENT_CELLS[:4]), path)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax", "-p", "no:cacheprovider", str(path)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    report = ANSI.sub("", run.stdout)
    assert run.returncode == 1 and "4 failed" in report, report[-2000:]
    assert STUDENT_LINE in report and "CheckFailure: Task 1:" in report and "CheckFailure: Task 4:" in report
    assert all(line in report for line in DEEP_LINES) and "return self.linear(x.T)  # the model's wrong line" in report
    for ours in ("checkers/", "course_lib/", "torch/", "_core", "Drop the checker", "wrapper"):
        assert ours not in report, f"{ours!r} in nbval's report:\n{report}"


def test_plain_python_shows_the_sentence_and_the_students_lines(tmp_path):
    script = tmp_path / "student.py"
    script.write_text(f"from checkers.transformer import check_task_4\n{DEEP}\ncheck_task_4(DeepPositionalEncoding)\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 1
    assert ("CheckFailure: Task 4: PositionalEncoding.forward raised AttributeError: "
            "'torch.Size' object has no attribute 'size'") in run.stderr, run.stderr
    assert "Your code raised AttributeError here" in run.stderr and all(line in run.stderr for line in DEEP_LINES)


def test_plain_python_names_the_accepted_keywords(tmp_path):
    script = tmp_path / "student.py"
    script.write_text("from course_lib import train\ntrain(None, [], None, 1, 1e-3, batch_loss_fn=None)\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 1 and "ArgumentError: train() takes batch_loss=…, not batch_loss_fn=; it takes model, " \
        in run.stderr, run.stderr
