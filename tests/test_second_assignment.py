"""A second assignment is a plug-in: its own slice and a registry entry take it through release, fixtures, checks,
collect and grade, with no change anywhere else.

The throwaway assignment `toy` (one task: `double(x)` returns 2x) exists only here: the test writes its slice into a
scratch copy of the checkout, registers it, and runs the course's own commands on it. Select it alone with
`pytest -m grading tests/test_second_assignment.py`.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course.slices import PARTS

ROOT = Path(__file__).resolve().parent.parent
NAME = "toy"
TASK = 1  # its one task (course.toml below registers it)

ANSWER = ('def double(x):\n    """Twice x, elementwise."""\n'
          "    ### BEGIN SOLUTION\n    return torch.mul(x, 2)\n    ### END SOLUTION")
CHECKS = '''"""Instant checks of the toy assignment."""
import torch

from .._compare import diagnose, expect_close, expect_tensor, signatures
from .._core import check_function, expect_callable, load_fixture

DOUBLED = "double(x) should return 2 * x."


@check_function(1)
def check_task_1(task, double):
    """Check double(x) -> 2x."""
    expect_callable(task, double, "double")
    case = load_fixture(__package__, 1)["random"]
    got = expect_tensor(task, "double(x)", task.call("double(x)", double, case["x"]), case["x"].shape)
    diagnose(task, "double(x)", got, signatures(case, "res"), 1e-6, 1e-6)
    expect_close(task, "double(x)", got, case["res"], 1e-6, 1e-6)
    task.passed("double(x) is 2x.")
'''
FIXTURES = '''"""How the toy assignment's fixture is built."""
import torch

OUTPUT_KEYS = ("res",)


def double_fixture(ref, generator):
    x = torch.randn(3, 4, generator=generator)
    return {"random": {"x": x, "res": ref["double"](x)}}


BUILDERS = {1: double_fixture}
'''
BENCH = '''"""The toy assignment's bench: double(x) against torch.mul, outputs checked equal, then timed."""
import torch

from tools.bench.goals import Goal
from tools.bench.timing import compare_speed, output_difference

SETTINGS = {"full": dict(size=4096, rounds=15), "quick": dict(size=64, rounds=3)}


class Apply(torch.nn.Module):
    """A function as a module (output_difference differentiates modules)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def double_section(ref, settings, device):
    x = torch.randn(settings["size"], device=device)  # (N,)
    ours, native = Apply(ref["double"]), Apply(lambda x: torch.mul(x, 2))
    check = output_difference(ours, native, x)
    speed = compare_speed(lambda: ours(x), lambda: native(x), device, settings["rounds"])
    return dict(**check, **speed)


def goals(report, settings):
    row = report["double"]
    return [Goal("double", "double vs torch.mul", f"ratio {row['ratio']:.2f}", "allclose", row["match"])]


SECTIONS = {"double": double_section}
'''
MISTAKES = '''"""Known mistakes of the toy assignment."""
from course.mutant import Mutant

MUTANTS = (Mutant(1, "tripled", (("torch.mul(x, 2)", "torch.mul(x, 3)"),), "you return 3x: the factor is 2."),)
'''
SLICE_TEST = '''"""The toy check, both ways."""
import checkers.toy as checkers
from checkers import CheckFailure
from course.toy.mistakes import MUTANTS
from course.reference import load_reference, reference_source
from course.registry import assignment

import pytest


def test_the_reference_passes():
    checkers.check_task_1(load_reference(reference_source(assignment("toy")))["double"])


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_a_known_mistake_is_named(mutant):
    with pytest.raises(CheckFailure, match=mutant.diagnosis.split(":")[0]):
        checkers.check_task_1(load_reference(mutant.apply(reference_source(assignment("toy"))))["double"])
'''
CASES = '''"""The toy assignment's grading cases: the visible check's case and hidden ones of other shapes."""
import torch

from checkers._core import load_fixture

from grading.cases.parts import called, recipe


def build_cases(reference, assignment):
    generator = torch.Generator().manual_seed(5)
    visible = recipe(1, "check: random", True, call=called(load_fixture("checkers.toy", 1)["random"]["x"]))
    hidden = [recipe(1, f"hidden: shape {shape}", False, call=called(torch.randn(shape, generator=generator)))
              for shape in ((7,), (2, 3, 5))]
    return {1: [visible, *hidden]}
'''
REGISTRY_ENTRY = f"""
[[assignments]]
name = "{NAME}"
title = "A throwaway assignment with one trivial task"

[assignments.tasks]
{TASK} = {{ points = 10, check = "checkers.{NAME}:check_task_{TASK}", trains = false }}
"""


def toy_notebook():
    """The toy reference notebook: a set-up cell, the task, its answer cell and its locked check cell."""
    grader = dict(schema_version=3, task=False)
    cells = [new_markdown_cell("# Toy\n\nOne task, to show that an assignment is a plug-in."),
             new_code_cell("import torch\n\nfrom checkers.toy import check_task_1"),
             new_markdown_cell("## 1. Double\n\n- return `2 * x`"),
             new_code_cell(ANSWER, metadata={"nbgrader": dict(grader, grade=False, grade_id=f"task_{TASK}_double",
                                                              locked=False, solution=True)}),
             new_code_cell("check_task_1(double)", metadata={"nbgrader": dict(grader, grade=True,
                           grade_id="check_task_1", locked=True, points=10, solution=False)}),
             new_code_cell("double(torch.arange(3.0))")]
    notebook = new_notebook(cells=cells)
    notebook.metadata.update(accelerator="GPU", kernelspec={"display_name": "Python 3", "language": "python",
                                                            "name": "python3"})
    return nbformat.writes(notebook)


def slice_files():
    """{path relative to the checkout: text} of the toy's slice, every one of them inside a part of course/slices.py."""
    files = {f"solutions/{NAME}/{NAME}.ipynb": toy_notebook(), f"checkers/{NAME}/__init__.py": CHECKS,
             f"course/{NAME}/__init__.py": "", f"course/{NAME}/fixtures.py": FIXTURES,
             f"course/{NAME}/mistakes.py": MISTAKES, f"course/{NAME}/cases/__init__.py": CASES,
             f"course/{NAME}/tests/__init__.py": "", f"course/{NAME}/tests/test_{NAME}.py": SLICE_TEST,
             f"course/{NAME}/bench.py": BENCH,
             # the given cell of its student notebook that uses no student code (tests/test_student_notebook.py)
             f"course/{NAME}/tests/student_notebook.py": 'GIVEN_CELLS = ("import torch",)\n'}
    return files


def in_the_slice(path):
    """Whether a path lies inside one of the slice's parts (a part's file, or below a part's folder)."""
    for _, pattern, _ in PARTS:
        part = Path(pattern.format(name=NAME))
        folder = part.parent if part.suffix else part
        if Path(path) == part or folder in Path(path).parents and folder.parts[-1] == NAME:
            return True
    return False


def scratch_checkout(folder):
    """A copy of the checkout's tracked files (its commands use this checkout's .venv: see make)."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in filter(None, tracked.stdout.split("\0")):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, folder / name)
    return folder


def scratch_env(folder):
    """The environment of a command in the scratch checkout: its packages before the .venv's editable install of
    this checkout (kernels started by the command inherit it, as a student's kernel finds the installed package)."""
    return dict(os.environ, PYTHONPATH=str(folder))


def make(folder, *arguments, timeout=600):
    """Run a Makefile target in folder with this checkout's .venv (the sandbox binds a real folder, not a link);
    `-o` keeps make from rebuilding it."""
    venv = ROOT / ".venv"
    run = subprocess.run(["make", f"VENV={venv}", "-o", f"{venv}/.installed", *arguments], cwd=folder,
                         capture_output=True, text=True, timeout=timeout, env=scratch_env(folder))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The scratch checkout with the toy slice written and registered."""
    folder = scratch_checkout(tmp_path_factory.mktemp("checkout"))
    for path, text in slice_files().items():
        assert in_the_slice(path), f"{path} is outside the toy's slice"
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    with open(folder / "course.toml", "a") as registry:
        registry.write(REGISTRY_ENTRY)
    return folder


@pytest.fixture(scope="module")
def released(course):
    """The scratch course after `make release` and `make fixtures` for the toy alone."""
    make(course, "release", f"ASSIGNMENT={NAME}")
    make(course, "fixtures", f"ASSIGNMENT={NAME}")
    return course


@pytest.mark.grading
def test_release_and_fixtures_make_the_slice_whole(released):
    assert (released / "notebooks" / NAME / f"{NAME}.ipynb").is_file()
    assert (released / "checkers" / NAME / "fixtures" / f"task_{TASK}.pt").is_file()
    found = subprocess.run([sys.executable, "-c", "from course.registry import assignment; "
                            "from course.slices import missing_parts; print(missing_parts(assignment('toy')))"],
                           cwd=released, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


@pytest.mark.grading
def test_the_bench_runs_the_new_assignment(course):
    run = subprocess.run([sys.executable, "-m", "tools.bench", "--assignment", NAME, "--quick"], cwd=course,
                         capture_output=True, text=True, timeout=120, env=scratch_env(course))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert json.loads((course / "results" / NAME / "bench.json").read_text())["goals"][0]["verdict"] == "PASS"


@pytest.mark.grading
def test_the_course_s_own_tests_take_the_new_assignment_in(released):
    """Its slice's tests (the check both ways) and the course-wide tests that iterate over the registry."""
    selected = ["course/toy/tests", "tests/test_release.py", "tests/test_student_notebook.py", "tests/test_registry.py",
                "tests/test_packaging.py::test_fixtures_are_current"]
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "pytest"), "-v", "-p", "no:cacheprovider", *selected,
                          "-k", NAME], cwd=released, capture_output=True, text=True, timeout=600,
                         env=scratch_env(released))
    assert run.returncode == 0, run.stdout[-4000:]
    for test in ("test_toy.py::test_the_reference_passes", "test_toy.py::test_a_known_mistake_is_named[tripled]",
                 "test_release_is_current[toy]", "test_every_check_cell_says_its_task_is_not_implemented[toy]",
                 "test_fixtures_are_current[toy]", "test_every_assignment_matches_its_notebooks_and_checkers[toy]"):
        assert f"{test} PASSED" in run.stdout, f"{test} did not run and pass:\n{run.stdout[-3000:]}"


def submission(released, answer):
    """The released toy notebook with the answer cell holding answer, as a student would save it."""
    notebook = json.loads((released / "notebooks" / NAME / f"{NAME}.ipynb").read_text())
    for cell in notebook["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == f"task_{TASK}_double":
            cell["source"] = answer
    return json.dumps(notebook)


@pytest.fixture(scope="module")
def graded(released):
    """The scratch course after `make collect` and `make grade` of a two-student LMS download, for the toy only."""
    with zipfile.ZipFile(released / "download.zip", "w") as archive:
        archive.writestr(f"ada_{NAME}.ipynb", submission(released, "def double(x):\n    return x + x"))
        archive.writestr(f"ben_{NAME}.ipynb", submission(released, "def double(x):\n    return 3 * x"))
    make(released, "collect", "ZIP=download.zip", f"ASSIGNMENT={NAME}")
    sandbox = [] if shutil.which("bwrap") else ["SANDBOX=none"]  # our own two notebooks: trusted
    output = make(released, "grade", f"ASSIGNMENT={NAME}", *sandbox)
    return released, output


def rows(path):
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


@pytest.mark.grading
def test_collect_and_grade_score_the_new_assignment(graded):
    course, output = graded
    assert (course / "submitted" / "ada" / NAME / f"{NAME}.ipynb").is_file()
    scores = {row["student_id"]: float(row["score"]) for row in rows(course / "grades.csv")
              if row["assignment"] == NAME}
    assert scores == {"ada": 10.0, "ben": 0.0}, output[-2000:]
    by_task = {(row["student_id"], row["task"]): row["score"] for row in rows(course / "grades_by_task.csv")
               if row["assignment"] == NAME}
    assert by_task == {("ada", str(TASK)): "10", ("ben", str(TASK)): "0"}
    feedback = (course / "feedback" / "ben" / NAME / f"{NAME}.html").read_text()
    assert f"Task {TASK}: check: random: the output differs" in feedback
    canvas = {row["Student"]: row[NAME] for row in rows(course / "exports" / "canvas.csv")}
    assert canvas == {"ada": "10", "ben": "0"}


# What the commands write as their own (git-ignored) outputs: grading's and the bench's
OUTPUTS = ("submitted", "autograded", "feedback", "exports", "build", "grades.csv", "grades_by_task.csv",
           "gradebook.db", f"grading_report_{NAME}.md", "collect_report.md", "download.zip", "results")


def changed_files(course):
    """Files of the scratch course that are new or differ from this checkout's, the commands' own outputs aside."""
    changed = []
    for path in course.rglob("*"):
        relative = path.relative_to(course)
        if path.is_dir() or relative.parts[0] in OUTPUTS or "__pycache__" in relative.parts:
            continue
        original = ROOT / relative
        if not original.is_file() or original.read_bytes() != path.read_bytes():
            changed.append(relative.as_posix())
    return changed


@pytest.mark.grading
def test_nothing_outside_the_slice_and_the_registry_changed(graded):
    """Release, fixtures, bench, collect and grade of the toy wrote only into its slice (and their own outputs)."""
    course, _ = graded
    outside = [path for path in changed_files(course) if path != "course.toml" and not in_the_slice(path)]
    assert not outside, f"the toy assignment needed changes outside its slice: {outside}"
    assert f"checkers/{NAME}/fixtures/task_{TASK}.pt" in changed_files(course)  # the scan sees what the commands wrote


@pytest.fixture(scope="module")
def regraded(graded):
    """After the tests above: ben's notebook replaced by a right answer, then `make grade STUDENT=ben` alone."""
    course, _ = graded
    before = {"ada": (course / "feedback" / "ada" / NAME / f"{NAME}.html").read_bytes(),
              "rows": [row for row in rows(course / "grades_by_task.csv") if row["student_id"] == "ada"]}
    (course / "submitted" / "ben" / NAME / f"{NAME}.ipynb").write_text(
        submission(course, "def double(x):\n    return 2 * x"))
    sandbox = [] if shutil.which("bwrap") else ["SANDBOX=none"]
    make(course, "grade", f"ASSIGNMENT={NAME}", "STUDENT=ben", *sandbox)
    return course, before


@pytest.mark.grading
def test_a_regrade_changes_one_student_only(regraded):
    course, before = regraded
    scores = {row["student_id"]: float(row["score"]) for row in rows(course / "grades.csv")}
    assert scores == {"ada": 10.0, "ben": 10.0}
    assert (course / "feedback" / "ada" / NAME / f"{NAME}.html").read_bytes() == before["ada"]
    assert [row for row in rows(course / "grades_by_task.csv") if row["student_id"] == "ada"] == before["rows"]
