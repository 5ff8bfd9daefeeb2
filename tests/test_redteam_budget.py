"""Red team: submissions that try to buy themselves grading time, each held to a budget.

- 100,000 added cells: cut before any stage sees the notebook (grading/match/bound.py) to the bounds derived from the
  release (its cells x 4 + 50), and flagged for manual grading with the reason. Budget: what an honest notebook of
  that many cells costs.
- A thread and an atexit handler left running after the last cell: the sandbox is torn down at the probe's "done"
  event (grading/sandbox/supervise.py), not at the last cell's deadline. Budget: what the same notebook costs
  without them.
- A trained model's settings far above the task's defaults: refused before anything is built
  (grading/judge/trained.py within_defaults), flagged with the reason. Budget: the judge at its task's defaults x 4.

No test here measures time: each asserts the mechanism (the cut, the flag and its reason in the report, how the probe
ended). The end-to-end test (marker `grading`, needs root and bubblewrap) prints the seconds per submission. Its
vehicle is the registry's first assignment (course_paths), with that assignment's own attack (course/<name>/tests/
vehicle.py); the size bounds of the trained tasks are tested for every assignment.
"""
import copy
import json
import re
import subprocess
import sys
import time

import pytest

from course.registry import assignments
from course_paths import DEFINITION_TASKS, NAME, RELEASE, ROOT, SOURCE, VEHICLE, vehicle_parts
from grading.cases import cases_of
from grading.judge import trained_models as judge_trained_module
from grading.match import bounded
from grading.sandbox import sandbox, supervise
from grading.match.bound import Bounds
from grading.match.notebook import read, release_layout
from grading.match.program import ProgramCell, build_program
from submissions import (DEFINITION_POINTS, answer_id, csv_rows, definitions_only, edit_cell, index_of,
                         report_sections, scratch_course, seconds_per_submission)

ADDED_CELLS = 100_000


def many_cells(notebook, count=ADDED_CELLS):
    """count one-line cells added after the last definition task's check cell."""
    notebook = copy.deepcopy(notebook)
    at = index_of(notebook, f"check_task_{DEFINITION_TASKS[-1]}") + 1
    notebook["cells"][at:at] = [{"cell_type": "code", "metadata": {}, "source": f"x = {i}", "outputs": [],
                                 "execution_count": None} for i in range(count)]
    return notebook


def program_of(notebook):
    return build_program(notebook, release_layout(read(RELEASE)), lambda source: 60)[0]


# ----- The cut: bounds from the release, before any stage --------------------------------------------------------

def test_a_notebook_of_100000_added_cells_is_cut_to_the_releases_bound_keeping_every_release_cell():
    release, notebook = read(RELEASE), many_cells(definitions_only())
    cut, reason = bounded(notebook, release)
    bounds = Bounds.of(release)
    assert bounds.cells == len(release["cells"]) * 4 + 50 == len(cut["cells"])
    assert f"{ADDED_CELLS + len(release['cells']) - bounds.cells:,} of its" in reason and "left out" in reason
    added = [cell.source for cell in program_of(cut) if cell.kind == "extra"]
    assert added == [f"x = {i}" for i in range(len(added))] and len(added) < bounds.cells  # the first ones, in order
    honest = [(cell.kind, cell.source) for cell in program_of(definitions_only())]
    assert [(cell.kind, cell.source) for cell in program_of(cut) if cell.kind != "extra"] == honest


@pytest.mark.parametrize("name", ["release", "reference", "definitions"])
def test_an_honest_notebook_is_not_cut_and_runs_the_same_program(name):
    """With its outputs (a plot in every cell, 20 kB of text) the honest notebook keeps every cell, unflagged."""
    notebook = {"release": read(RELEASE), "reference": read(SOURCE), "definitions": definitions_only()}[name]
    shown = copy.deepcopy(notebook)
    for cell in shown["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "loss 0.1\n" * 2000},
                               {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR" * 4000}}]
    cut, reason = bounded(shown, read(RELEASE))
    assert reason == "" and len(cut["cells"]) == len(notebook["cells"])
    assert [(c.kind, c.source) for c in program_of(cut)] == [(c.kind, c.source) for c in program_of(notebook)]


def test_huge_code_and_outputs_are_cut_and_said():
    """A 3 MB cell is emptied; 30 MB of stored outputs (never read: the probe reruns every cell) are reported."""
    notebook = definitions_only()
    at = index_of(notebook, answer_id(notebook, DEFINITION_TASKS[0]))
    notebook["cells"].insert(at, {"cell_type": "code", "metadata": {}, "source": "# " + "y" * 3_000_000,
                                  "outputs": [{"output_type": "stream", "name": "stdout", "text": "z" * (30 << 20)}],
                                  "execution_count": None})
    cut, reason = bounded(notebook, read(RELEASE))
    assert "30 MB of stored outputs" in reason and "1 code cell(s) longer than" in reason
    assert cut["cells"][at]["source"].startswith("# (cut by the grader: this cell's 3,000,002 characters")
    assert all("outputs" not in cell for cell in cut["cells"])


# ----- The teardown: at the last record, whatever the notebook left running --------------------------------------

LINGERING_PROBE = '''import atexit, json, os, sys, threading, time
out = os.path.join(sys.argv[1], "out")
progress = os.fdopen(int(os.environ["GRADING_PROGRESS_FD"]), "w", buffering=1)
for cell in range(3):
    progress.write(json.dumps({"event": "start", "cell": cell}) + "\\n")
    with open(os.path.join(out, f"cell_{cell}.json"), "w") as file:
        json.dump({"stdout": f"cell {cell}", "stderr": "", "displays": [], "error": None}, file)
    progress.write(json.dumps({"event": "end", "cell": cell}) + "\\n")
threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: the interpreter would wait for it
atexit.register(time.sleep, 3600)
progress.write(json.dumps({"event": "done"}) + "\\n")
'''


def test_the_sandbox_is_torn_down_at_the_done_event_not_at_a_deadline(tmp_path):
    """A probe that leaves a thread and an atexit handler after its last cell: the attempt ends at "done", every
    output is read, and nothing is reported as stopped (without the teardown it ends at the last cell's deadline)."""
    runtime = tmp_path / "runtime"
    (runtime / "mpl").mkdir(parents=True)
    (runtime / "probe.py").write_text(LINGERING_PROBE)
    cells = [ProgramCell("given", "", 5.0) for _ in range(3)]
    job = supervise.Job(cells, tmp_path / "scratch" / "lingering", runtime, sandbox.Sandbox("none"))
    run = supervise.run_probe(job)
    assert run.endings == ["done"], (run.endings, run.notes)
    assert run.notes == [] and [run.cells[i]["stdout"] for i in range(3)] == ["cell 0", "cell 1", "cell 2"]
    assert (tmp_path / "logs" / "lingering.log").read_text().endswith("[grader] attempts ended: done\n")


# ----- The judge: settings within the task's defaults x SIZE_FACTOR, checked before anything is built --------------

TRAINED_TASKS = [(registered.name, task) for registered in assignments() for task in registered.training_tasks]


@pytest.mark.parametrize("name, task", TRAINED_TASKS)
def test_each_trained_task_names_defaults_that_bound_its_sizes(name, task):
    """The spec names the assignment's defaults; every integer size is allowed up to x SIZE_FACTOR, not beyond."""
    spec = cases_of(name).trained_case(task)["trained"]
    module, _, attribute = spec["defaults"].partition(":")
    defaults = getattr(__import__(module, fromlist=[attribute]), attribute)
    sizes = {key: value for key, value in defaults.items() if type(value) is int}
    factor = judge_trained_module.SIZE_FACTOR
    assert "embed_dim" in sizes and "feedforward_dim" in sizes
    judge_trained_module.within_defaults(dict(defaults), spec)
    judge_trained_module.within_defaults({key: max(value, 1) * factor for key, value in sizes.items()}, spec)
    for key, value in sizes.items():
        with pytest.raises(judge_trained_module.BeyondDefaults, match=f"{key} = {max(value, 1) * factor + 1} is above"):
            judge_trained_module.within_defaults(dict(defaults, **{key: max(value, 1) * factor + 1}), spec)


# ----- End to end: the three attacks graded beside an honest notebook ---------------------------------------------

LINGER = '''import atexit, threading, time
threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: Python's exit waits for it
atexit.register(time.sleep, 3600)  # and then for this
print("ATTACK RAN linger")
'''



def budget_class():
    """{student: notebook}: an honest one and the three attacks, each on the reference answers of the definition
    tasks; the big model answers the first training task."""
    honest = definitions_only()
    linger = copy.deepcopy(honest)
    linger["cells"].insert(index_of(linger, answer_id(linger, DEFINITION_TASKS[0])), {
        "cell_type": "code", "metadata": {}, "source": LINGER, "outputs": [], "execution_count": None})
    big = edit_cell(copy.deepcopy(honest), answer_id(honest, VEHICLE.training_tasks[0]),
                    lambda _: vehicle_parts().BIG_MODEL)
    return {"honest": honest, "manycells": many_cells(honest), "linger": linger, "bigmodel": big}


@pytest.fixture(scope="module")
def budgeted(tmp_path_factory):
    """(course, grade's stdout, seconds) after `grade --jobs 2` of the budget class."""
    if sandbox.bwrap_version() is None:
        pytest.skip("needs root and bubblewrap (`apt-get install bubblewrap`)")
    course = scratch_course(tmp_path_factory.mktemp("budget"))
    for student, notebook in budget_class().items():
        folder = course / "submitted" / student / NAME
        folder.mkdir(parents=True)
        (folder / f"{NAME}.ipynb").write_text(json.dumps(notebook))
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "grading.grade", "--jobs", "2", "--course", str(course),
                          "--assignment", NAME, "--memory", "3", "--scratch", "0.5"],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return course, run.stdout, time.monotonic() - started


@pytest.mark.grading
def test_each_costly_submission_keeps_its_points_and_says_why_it_was_flagged(budgeted):
    course, output, seconds = budgeted
    by_task = {(row["student_id"], int(row["task"])): float(row["score"])
               for row in csv_rows(course / "grades_by_task.csv")}
    for student in budget_class():
        assert {task: by_task[(student, task)] for task in DEFINITION_POINTS} == DEFINITION_POINTS, student
    report = (course / f"grading_report_{NAME}.md").read_text().replace("\\", "")
    flagged = report.split("## Flagged for manual grading", 1)[1].split("## Needs attention", 1)[0]
    assert not re.search(r"\*\*(honest|linger)\*\*", flagged), flagged
    bound = len(read(RELEASE)["cells"]) * 4 + 50
    for task in DEFINITION_POINTS:
        assert f"**manycells**, task {task}: the notebook holds more than an honest one ({bound} cells" in flagged
    assert "left out" in flagged
    assert (f"**bigmodel**, task {VEHICLE.training_tasks[0]}: model settings beyond the task's defaults, not "
            f"evaluated: {vehicle_parts().BIG_MODEL_REFUSED}") in flagged
    print(f"\nbudget class, grade --jobs 2: {seconds:.0f} s; each: {seconds_per_submission(output)}")


@pytest.mark.grading
def test_a_thread_and_atexit_left_running_end_at_the_last_record(budgeted):
    """The lingering notebook's probe was torn down at its done event, in one attempt, with no cell stopped."""
    course, _, _ = budgeted
    log = (course / "build" / "grading" / "logs" / "linger.log").read_text()
    assert log.endswith("[grader] attempts ended: done\n"), log[-500:]
    sections = report_sections((course / f"grading_report_{NAME}.md").read_text())
    assert "ran past" not in sections.get("linger", "") and "outlived" not in sections.get("linger", "")
    rendered = (course / "build" / "grading" / "rendered" / "linger" / NAME / f"{NAME}.ipynb").read_text()
    assert "ATTACK RAN linger" in rendered  # the attack did run
