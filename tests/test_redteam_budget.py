"""Red team: submissions that try to buy themselves grading time, each held to a budget.

- 100,000 added cells: cut before any stage sees the notebook (grading/match/bound.py) to the bounds derived from the
  release (its cells x 4 + 50), and flagged for manual grading with the reason. Budget: what an honest notebook of
  that many cells costs.
- A thread and an atexit handler left running after the last cell: the sandbox is torn down at the probe's "done"
  event (grading/sandbox/supervise.py), not at the last cell's deadline. Budget: what the same notebook costs
  without them.
- A trained model's settings far above the task's defaults: refused before anything is built
  (grading/judge/trained.py within_defaults), flagged with the reason. Budget: the judge at its task's defaults x 4.

No test here measures time: each asserts the mechanism (the cut, the flag and its reason, how the probe ended). The
three attacks are graded end to end, beside an honest notebook, by tests/test_redteam_class.py. The size bounds of
the trained tasks are tested for every assignment.
"""
import copy

import pytest

from course.registry import assignments
from course_paths import DEFINITION_TASKS, RELEASE, SOURCE
from grading.cases import cases_of
from grading.judge import trained_models as judge_trained_module
from grading.match import bounded
from grading.sandbox import sandbox, supervise
from grading.match.bound import Bounds
from grading.match.notebook import read, release_layout
from grading.match.program import ProgramCell, build_program
from redteam_builders import ADDED_CELLS, many_cells
from submissions import answer_id, definitions_only, index_of

pytestmark = pytest.mark.fast


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
    assert "embed_dim" in sizes and {"feedforward_dim", "hidden_dim"} & set(sizes)  # a width, a feed-forward width
    judge_trained_module.within_defaults(dict(defaults), spec)
    judge_trained_module.within_defaults({key: max(value, 1) * factor for key, value in sizes.items()}, spec)
    for key, value in sizes.items():
        with pytest.raises(judge_trained_module.BeyondDefaults, match=f"{key} = {max(value, 1) * factor + 1} is above"):
            judge_trained_module.within_defaults(dict(defaults, **{key: max(value, 1) * factor + 1}), spec)
