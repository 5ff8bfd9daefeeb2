"""Red team: submissions that try to buy themselves grading time, each held to a budget.

- 100,000 added cells: cut before any stage sees the notebook (grading/match/bound.py) to the bounds derived from the
  release (its cells x 4 + 50: 270 for the transformer release), and flagged for manual grading with the reason.
  Budget: what an honest notebook of 270 cells costs.
- A thread and an atexit handler left running after the last cell: the sandbox is torn down at the probe's "done"
  event (grading/sandbox/supervise.py), not at the last cell's deadline. Budget: what the same notebook costs
  without them.
- A trained model's settings far above the task's defaults: refused before anything is built
  (judge/trained_models.py within_defaults), flagged with the reason. Budget: the judge at its task's defaults x 4.

No test here measures time: each asserts the mechanism (the cut, the flag and its reason in the report, how the probe
ended). The end-to-end test (marker `grading`, needs root and bubblewrap) prints the seconds per submission.
"""
import copy
import json
import re
import subprocess
import sys
import time

import pytest
import torch

from course.registry import assignment
from course_paths import NAME, RELEASE, ROOT, SOURCE
from grading.cases import cases_of
from grading.judge import trained_models as judge_trained_module
from grading.judge.score import case_problem
from grading.match import bounded
from grading.sandbox import sandbox, supervise
from grading.match.bound import Bounds
from grading.match.notebook import read, release_layout
from grading.match.program import ProgramCell, build_program
from submissions import (DEFINITION_POINTS, csv_rows, definitions_only, edit_cell, index_of, report_sections,
                         scratch_course, seconds_per_submission)

ADDED_CELLS = 100_000


def many_cells(notebook, count=ADDED_CELLS):
    """count one-line cells added after check_task_7, before Task 8's answer and check."""
    notebook = copy.deepcopy(notebook)
    at = index_of(notebook, "check_task_7") + 1
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
    at = index_of(notebook, "task_1_attention")
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

TRAINED_TASKS = [(name, task) for name in ("transformer", "seq2seq", "gpt", "vit")
                 for task in assignment(name).training_tasks]


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


def test_large_valid_settings_are_refused_before_building_and_flagged(monkeypatch):
    """seq2seq with embed_dim 512 (the old bound was 1024): 0 points, the reason, a flag, and nothing built."""
    from course_lib import seq2seq_defaults
    from course.seq2seq.cases.trained import evaluation_data
    from grading.recipes import run
    from grading.judge.expected import reference_namespace
    reference = reference_namespace(assignment("seq2seq"))
    recipe = cases_of("seq2seq").trained_case(7)
    torch.manual_seed(0)
    model = reference["Seq2SeqTransformer"](**seq2seq_defaults.MODEL)
    record = run(recipe, [model], {"Seq2SeqTransformer": type(model)})
    # What the probe adds for a notebook that took no optimizer step, its hook intact (grading/probe/provenance.py)
    record["provenance"] = {"hooked": True, "steps": 0, "failures": 0, "stepped": 0, "norms": {}}
    wide = {role: torch.zeros(*[512 if size == 32 else size for size in value.shape])
            for role, value in record["weights"].items()}
    built, build = [], judge_trained_module.build
    monkeypatch.setattr(judge_trained_module, "build", lambda *args, **kwargs: built.append(args) or build(*args,
                                                                                                           **kwargs))
    expected = dict(recipe["trained"], **evaluation_data(recipe["trained"]))
    problem, _, flag = case_problem(7, recipe, dict(record, weights=wide), expected, {"reference": reference})
    assert "embed_dim = 512 is above 128, 4 x the task's default 32" in problem and built == []
    assert flag.startswith("model settings beyond the task's defaults, not evaluated: embed_dim = 512")
    honest, _, honest_flag = case_problem(7, recipe, record, expected, {"reference": reference})
    assert honest.startswith("accuracy") and honest_flag == "" and built  # the defaults: built and measured


# ----- End to end: the three attacks graded beside an honest notebook ---------------------------------------------

LINGER = '''import atexit, threading, time
threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: Python's exit waits for it
atexit.register(time.sleep, 3600)  # and then for this
print("ATTACK RAN linger")
'''

BIG_MODEL = '''from course_lib.data import VOCAB_SIZE

model = TransformerForSequenceClassification(input_dim=VOCAB_SIZE, embed_dim=256, num_classes=1, num_heads=2,
                                             feedforward_dim=1024, num_layers=4)  # 16 x, 32 x, 2 x the defaults
'''


def budget_class():
    """{student: notebook}: an honest one and the three attacks, each on the reference answers of tasks 1-5 and 7."""
    honest = definitions_only()
    linger = copy.deepcopy(honest)
    linger["cells"].insert(index_of(linger, "task_1_attention"), {"cell_type": "code", "metadata": {},
                           "source": LINGER, "outputs": [], "execution_count": None})
    big = edit_cell(copy.deepcopy(honest), "task_6_training", lambda _: BIG_MODEL)
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
    for task in DEFINITION_POINTS:
        assert f"**manycells**, task {task}: the notebook holds more than an honest one (270 cells" in flagged
    assert "left out" in flagged
    assert "**bigmodel**, task 6: model settings beyond the task's defaults, not evaluated: embed_dim = 256 is " \
           "above 64" in flagged
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
