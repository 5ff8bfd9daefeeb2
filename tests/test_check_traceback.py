"""A failure shows the student's own lines and one sentence, never the frames of checkers/, course_lib/ or torch:
every course_lib callable the reference notebooks import is guarded, and an error inside one shows the caller's frames
(in a notebook, with an assignment's checks: course/<a>/tests/test_check_traceback.py)."""
import importlib
import inspect
import re

import nbformat
import pytest
import torch

from course_lib import train
from course_lib.frames import MAX_FRAMES, frame_lines, student_frames
from course_lib.calls import student_call
from course.registry import assignments
from course_paths import ROOT

pytestmark = pytest.mark.fast

OURS = ("checkers/", "checkers\\", "course_lib/", "course_lib\\", "torch/", "torch\\", "site-packages", "_core",
        "Drop the checker", "Traceback", "wrapper")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def assert_none_of_ours(text):
    for ours in OURS:
        assert ours not in text, f"{ours!r} shown to the student:\n{text}"


# ----- In process: what the notebooks call is guarded, and nothing else about it changes -----------------------------

def notebook_imports():
    """(module, name) of every name the reference notebooks import from course_lib."""
    found = set()
    for path in sorted(ROOT.glob("solutions/*/*.ipynb")):
        code = "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code")
        for module, names in re.findall(r"^from (course_lib[\w.]*) import (\([^)]*\)|.*)$", code, re.M):
            names = re.sub(r"#.*", "", names)  # a comment after the names
            found |= {(module, name.split(" as ")[0].strip()) for name in names.strip().strip("()").split(",")
                      if name.strip()}
    return sorted(found)


@pytest.mark.parametrize("module, name", notebook_imports())
def test_every_course_lib_callable_the_notebooks_import_is_guarded(module, name):
    parent = importlib.import_module(module)
    obj = getattr(parent, name) if hasattr(parent, name) else importlib.import_module(f"{module}.{name}")
    if inspect.ismodule(obj) or not callable(obj):
        return  # a defaults module or a constant
    function = obj.__init__ if inspect.isclass(obj) else obj
    assert getattr(function, "student_call", False), f"{module}.{name} is not decorated with @student_call"
    assert inspect.signature(function) == inspect.signature(inspect.unwrap(function))


def test_the_notebooks_import_what_is_checked():
    """The search above finds the shared package's imports and those of the assignments' own modules."""
    modules = {module for module, _ in notebook_imports()}
    own = {f"course_lib.{a.name}" for a in assignments() if (ROOT / "course_lib" / f"{a.name}.py").is_file()}
    assert ("course_lib", "train") in notebook_imports() and len(own) >= 2 and own & modules == own, modules


class Broken(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(()))

    def forward(self, x):
        return self.helper(x)  # the test's forward

    def helper(self, x):
        return x @ x * self.scale  # (8, 4) @ (8, 4): a shape error


def test_an_error_inside_a_course_lib_function_keeps_its_type_and_shows_only_the_callers_frames():
    batches = [(torch.randn(8, 4), torch.randint(0, 2, (8,)))]
    with pytest.raises(RuntimeError, match="cannot be multiplied") as raised:
        train(Broken(), batches, batches, 1, 1e-3)  # the test's call
    text = ANSI.sub("", "\n".join(raised.value._render_traceback_()))
    parts = ["# the test's call", "in Broken.forward", "# the test's forward", "in Broken.helper",
             "return x @ x * self.scale", "RuntimeError: "]
    positions = [text.find(part) for part in parts]
    assert -1 not in positions and positions == sorted(positions), text
    assert_none_of_ours(text)


class Pairs:
    """A dataset class as course_lib's assignment modules define them: its constructor guarded."""

    @student_call
    def __init__(self, size, seed=0):
        self.size = size

    def __len__(self):
        return self.size


def test_a_wrong_call_is_still_a_type_error_and_a_right_one_runs():
    with pytest.raises(TypeError, match=r"^Pairs\(\) takes seed=…, not sed=; it takes size, seed=…"):
        Pairs(4, sed=1)
    with pytest.raises(TypeError, match=r"^train\(\): missing a required argument: 'lr'; it takes model, "):
        train(Broken(), [], None, 1)
    with pytest.raises(TypeError, match=r"^train\(\) takes CrossEntropyLoss\(input, target\) as loss_fn=…, not "
                                        r"batch_loss=: it calls batch_loss\(model, inputs, labels\) and loss_fn"):
        train(Broken(), [], None, 1, 1e-3, batch_loss=torch.nn.CrossEntropyLoss())
    assert len(Pairs(4, seed=1)) == 4


def mutual(depth):
    return other(depth - 1) if depth else 1 / 0  # the first function of the pair


def other(depth):
    return mutual(depth)  # the second function of the pair


def test_a_deep_traceback_shows_at_most_max_frames_and_says_how_many_are_left_out():
    with pytest.raises(ZeroDivisionError) as raised:
        mutual(30)
    frames = student_frames(raised.value.__traceback__)
    text = ANSI.sub("", "\n".join(frame_lines(frames)))
    assert len(frames) == 62  # this test's frame, then 31 calls of mutual and 30 of other: none merged
    assert text.count("----> ") == MAX_FRAMES and f"[... {62 - MAX_FRAMES} more frames of your code not shown]" in text
    assert text.rstrip().endswith("return other(depth - 1) if depth else 1 / 0  # the first function of the pair")
    assert "mutual(30)" in text.splitlines()[1], text  # the outermost frame is kept


class Interrupted(Broken):
    def forward(self, x):
        raise KeyboardInterrupt  # as when the student stops training with the stop button


def test_an_interrupted_train_shows_the_students_lines():
    batches = [(torch.randn(8, 4), torch.randint(0, 2, (8,)))]
    with pytest.raises(KeyboardInterrupt) as raised:
        train(Interrupted(), batches, batches, 1, 1e-3)  # the interrupted call
    text = ANSI.sub("", "\n".join(raised.value._render_traceback_()))
    assert "# the interrupted call" in text and "in Interrupted.forward" in text, text
    assert_none_of_ours(text)
