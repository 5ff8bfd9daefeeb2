"""A second assignment is a plug-in: its own slice and a registry entry take it through release, fixtures, checks,
collect and grade, with no change anywhere else.

The throwaway assignment `toy` (tests/toy_slice.py: a function, a module class with a fixture, a known mistake and a
hidden case, and a trained task judged from the weights) exists only here: the test writes its slice into a scratch
copy of the checkout, registers it, and runs the course's own commands on it. Select it alone with
`pytest -m grading tests/test_second_assignment.py`.
"""
import csv
import html
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from course.slices import PARTS
from toy_slice import CLASSIFIER, DOUBLE, NAME, TASKS, TRAINED, answer_id, registry_entry, slice_files

pytestmark = pytest.mark.full

ROOT = Path(__file__).resolve().parent.parent
DEFINITIONS = [task for task, (_, _, trains) in TASKS.items() if not trains]


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
    """Run a Makefile target in folder with this checkout's .venv, resolved (the sandbox binds a real folder, not a
    link: a worktree's .venv may be one); `-o` keeps make from rebuilding or compiling it."""
    venv = (ROOT / ".venv").resolve()
    run = subprocess.run(["make", f"VENV={venv}", "-o", f"{venv}/.installed", "-o", f"{venv}/.compiled", *arguments],
                         cwd=folder, capture_output=True, text=True, timeout=timeout, env=scratch_env(folder))
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
        registry.write(registry_entry())
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
    fixtures = released / "checkers" / NAME / "fixtures"
    assert sorted(path.name for path in fixtures.iterdir()) == [f"task_{task}.pt" for task in DEFINITIONS]
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
    """Its slice's tests (the checks both ways) and the course-wide tests that iterate over the registry."""
    selected = ["course/toy/tests", "tests/test_release.py", "tests/test_student_dist.py", "tests/test_registry.py",
                "tests/test_packaging.py::test_fixtures_are_current", "tests/test_check_grade_agreement.py"]
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "pytest"), "-v", "-p", "no:cacheprovider", *selected,
                          "-k", NAME], cwd=released, capture_output=True, text=True, timeout=600,
                         env=scratch_env(released))
    assert run.returncode == 0, run.stdout[-4000:]
    slice_tests = [*(f"test_the_reference_passes[{task}]" for task in DEFINITIONS), "test_a_trained_reference_passes",
                   "test_a_known_mistake_is_named[tripled]", "test_a_known_mistake_is_named[softmax]",
                   "test_an_untrained_model_fails_with_its_accuracy",
                   "test_a_trained_model_of_a_wrong_class_fails_naming_the_class_task"]
    agreement = [f"{NAME}-task{DOUBLE}-right-reference", f"{NAME}-task{CLASSIFIER}-right-reference",
                 f"{NAME}-task{DOUBLE}-wrong-tripled", f"{NAME}-task{CLASSIFIER}-wrong-softmax"]  # the check and grade
    for test in (*(f"test_{NAME}.py::{test}" for test in slice_tests), "test_release_is_current[toy]",
                 "test_every_check_cell_says_its_task_is_not_implemented[toy]", "test_fixtures_are_current[toy]",
                 "test_every_assignment_matches_its_notebooks_and_checkers[toy]",
                 *(f"test_check_and_grader_agree[{case}]" for case in agreement)):
        assert f"{test} PASSED" in run.stdout, f"{test} did not run and pass:\n{run.stdout[-3000:]}"


# The students' answers: right ones (other valid ways than the reference's), and one mistake each
RIGHT = {DOUBLE: "def double(x):\n    return x + x",
         CLASSIFIER: ("class LinearClassifier(nn.Module):\n    def __init__(self, input_dim, num_classes):\n"
                      "        super().__init__()\n        self.linear = nn.Linear(input_dim, num_classes)\n\n"
                      "    def forward(self, x):\n        return F.linear(x, self.linear.weight, self.linear.bias)"),
         TRAINED: ("optimizer = torch.optim.Adam(model.parameters(), lr=0.1)\nfor step in range(50):\n"
                   "    optimizer.zero_grad()\n    F.cross_entropy(model(train_x), train_y).backward()\n"
                   "    optimizer.step()")}
TRIPLED = {DOUBLE: "def double(x):\n    return 3 * x"}
SOFTMAX = {CLASSIFIER: RIGHT[CLASSIFIER].replace("self.linear.bias)", "self.linear.bias).softmax(-1)")}
ONE_SMALL_STEP = {TRAINED: RIGHT[TRAINED].replace("Adam(model.parameters(), lr=0.1)", "SGD(model.parameters(), "
                                                  "lr=0.01)").replace("range(50)", "range(1)")}
STUDENTS = {"ada": {}, "ben": TRIPLED, "cy": SOFTMAX, "dee": ONE_SMALL_STEP}  # each: its answers that differ


def submission(released, wrong):
    """The released toy notebook with every answer cell holding a right answer but those of `wrong` ({task: answer}),
    as a student would save it."""
    notebook = json.loads((released / "notebooks" / NAME / f"{NAME}.ipynb").read_text())
    answers = {answer_id(task): wrong.get(task, answer) for task, answer in RIGHT.items()}
    for cell in notebook["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        cell["source"] = answers.get(grade_id, cell["source"])
    return json.dumps(notebook)


@pytest.fixture(scope="module")
def graded(released):
    """The scratch course after `make collect` and `make grade` of a four-student LMS download, for the toy only."""
    with zipfile.ZipFile(released / "download.zip", "w") as archive:
        for student, wrong in STUDENTS.items():
            archive.writestr(f"{student}_{NAME}.ipynb", submission(released, wrong))
    make(released, "collect", "ZIP=download.zip", f"ASSIGNMENT={NAME}")
    sandbox = [] if shutil.which("bwrap") else ["SANDBOX=none"]  # our own notebooks: trusted
    output = make(released, "grade", f"ASSIGNMENT={NAME}", *sandbox)
    return released, output


def rows(path):
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def points_of(student):
    """{task: points the student should get}: every task but those answered wrong, and a trained task's only when
    the task of its model's class earns its points too (course.toml's `needs`)."""
    scored = {task: 0 if task in STUDENTS[student] else points for task, (_, points, _) in TASKS.items()}
    if scored[CLASSIFIER] == 0:
        scored[TRAINED] = 0
    return scored


def feedback(course, student):
    return html.unescape((course / "feedback" / student / NAME / f"{NAME}.html").read_text())


@pytest.mark.grading
def test_collect_and_grade_score_the_new_assignment(graded):
    course, output = graded
    assert (course / "submitted" / "ada" / NAME / f"{NAME}.ipynb").is_file()
    expected = {student: points_of(student) for student in STUDENTS}
    assert expected["ada"] == {DOUBLE: 2, CLASSIFIER: 4, TRAINED: 4}  # the registry's points, all earned
    assert expected["cy"][TRAINED] == 0 and expected["dee"] == {DOUBLE: 2, CLASSIFIER: 4, TRAINED: 0}
    scores = {row["student_id"]: float(row["score"]) for row in rows(course / "grades.csv")
              if row["assignment"] == NAME}
    assert scores == {student: sum(tasks.values()) for student, tasks in expected.items()}, output[-2000:]
    by_task = {(row["student_id"], int(row["task"])): float(row["score"])
               for row in rows(course / "grades_by_task.csv") if row["assignment"] == NAME}
    assert by_task == {(student, task): points for student, tasks in expected.items()
                       for task, points in tasks.items()}
    canvas = {row["Student"]: float(row[NAME]) for row in rows(course / "exports" / "canvas.csv")}
    assert canvas == scores


@pytest.mark.grading
def test_the_feedback_names_the_task_and_what_went_wrong(graded):
    course, _ = graded
    assert f"Task {DOUBLE}: check: random: the output differs" in feedback(course, "ben")
    assert f"Task {CLASSIFIER}: check: vectors: the output differs" in feedback(course, "cy")
    assert (f"Task {TRAINED}: the trained model's classes do not pass Task {CLASSIFIER}, so its weights were "
            "trained for another function") in feedback(course, "cy")
    assert (f"Task {TRAINED}: hidden: accuracy on 1000 fresh points: accuracy " in feedback(course, "dee")
            and "at least 90% is needed" in feedback(course, "dee"))
    assert f"✓ Task {TRAINED} passed the grader" in feedback(course, "ada")


# What the commands write as their own (git-ignored) outputs: grading's and the bench's
OUTPUTS = ("submitted", "autograded", "feedback", "exports", "build", "grades.csv", "grades_by_task.csv",
           "gradebook.db", f"grading_report_{NAME}.md", "collect_report.md", "download.zip", "results", "reports")


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
    assert f"checkers/{NAME}/fixtures/task_{DOUBLE}.pt" in changed_files(course)  # it sees what the commands wrote


@pytest.fixture(scope="module")
def regraded(graded):
    """After the tests above: ben's notebook replaced by a right answer, then `make grade STUDENT=ben` alone."""
    course, _ = graded
    before = {"ada": (course / "feedback" / "ada" / NAME / f"{NAME}.html").read_bytes(),
              "rows": [row for row in rows(course / "grades_by_task.csv") if row["student_id"] == "ada"]}
    (course / "submitted" / "ben" / NAME / f"{NAME}.ipynb").write_text(submission(course, {}))
    sandbox = [] if shutil.which("bwrap") else ["SANDBOX=none"]
    make(course, "grade", f"ASSIGNMENT={NAME}", "STUDENT=ben", *sandbox)
    return course, before


@pytest.mark.grading
def test_a_regrade_changes_one_student_only(regraded):
    course, before = regraded
    scores = {row["student_id"]: float(row["score"]) for row in rows(course / "grades.csv")}
    assert scores == {"ada": 10.0, "ben": 10.0, "cy": 2.0, "dee": 6.0}
    assert (course / "feedback" / "ada" / NAME / f"{NAME}.html").read_bytes() == before["ada"]
    assert [row for row in rows(course / "grades_by_task.csv") if row["student_id"] == "ada"] == before["rows"]
