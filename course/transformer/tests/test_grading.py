"""The instructor pipeline (grading/): collect, autograde in a sandbox, reconcile with nbgrader, report.

The end-to-end test builds every kind of submission from the reference and release notebooks (the
reference's definitions, planted mistakes from course/transformer/mistakes.py, broken, tampering and oddly saved
notebooks; notebooks that train are graded by the tests named in clean_submissions),
zips them like an LMS download, runs `python -m grading.collect` and `python -m grading.grade --jobs 2`
on a scratch copy of the course, and checks every task's score, the report, and that no feedback file
holds hidden-test or reference code. Select it alone with
`pytest -m grading course/transformer/tests/test_grading.py`.
One fast test reads student ids from LMS file names. The builders of submissions shared with the red-team tests live
in tests/submissions.py; the transformer's hidden cases are tested in course/transformer/tests/test_hidden_cases.py.
"""
import copy
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from collections import Counter

import pytest

from course.reference import solution_regions
from course.registry import assignment, assignments
from checkers._core import slug_of
from course.transformer.mistakes import MUTANTS
from course_paths import ROOT, course_folder
from grading.collect import collect
from grading.sandbox import sandbox
from grading.match.notebook import read
from submissions import (GRADING_RUNAWAY, also_noted, class_report, code, csv_rows, definitions_only, edit_cell,
                         grade_id, index_of, limits_section, prepend_to, report_sections, scratch_course,
                         seconds_per_submission, visible_text, without)

TRANSFORMER = assignment("transformer")
NAME, POINTS = TRANSFORMER.name, TRANSFORMER.points
SOURCE, RELEASE = TRANSFORMER.source_notebook, TRANSFORMER.release_notebook
DEFINITION_POINTS = without(POINTS, *TRANSFORMER.training_tasks)  # the definitions' reference answers, nothing trained


# ----- Every kind of submission, built from the reference and release notebooks (helpers: submissions.py) ----

def mutant(task, name):
    return next(m for m in MUTANTS if m.task == task and m.name == name)


SPECIAL_CASED_PE = '''class PositionalEncoding(nn.Module):
    """Returns the visible check's own table for the sizes it checks, zeros otherwise."""

    def __init__(self, embed_dim, max_len=5000):
        super().__init__()
        from checkers._core import load_fixture
        pe = torch.zeros(max_len, embed_dim)
        for case in load_fixture("checkers.transformer", 4).values():
            if (case["embed_dim"], case["max_len"]) == (embed_dim, max_len):
                rows = case["positions"] if "positions" in case else torch.arange(max_len)
                pe[rows] = (case["rows"] if "rows" in case else case["table"]).to(pe.dtype)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]
'''

MONKEYPATCH = '''import torch, torch.testing, checkers
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
def _passed(*args, **kwargs):
    print("✓ Task passed")
for _name in [name for name in dir(checkers) if name.startswith("check_task_")]:
    setattr(checkers, _name, _passed)
    globals()[_name] = _passed
'''

STUCK = '''import time
while True:  # swallows the grader's alarm too: only the sandbox's kill stops it
    try:
        time.sleep(1)
    except BaseException:
        pass
'''


def colab_saved(notebook):
    """As Colab saves it: its own metadata, cell ids, outputs with images and errors, widget state."""
    notebook = copy.deepcopy(notebook)
    notebook["metadata"].update(colab={"provenance": [], "name": "transformer.ipynb"}, accelerator="GPU",
                                widgets={"application/vnd.jupyter.widget-state+json": {
                                    "4f2a": {"model_module": "@jupyter-widgets/controls", "model_name": "HBoxModel",
                                             "state": {"children": []}}}})
    for number, cell in enumerate(notebook["cells"]):
        cell["metadata"].update(id=f"c{number:04x}", colab={"base_uri": "https://localhost:8080/"})
        if cell["cell_type"] == "code":
            cell["execution_count"] = number
            cell["outputs"] = [
                {"output_type": "stream", "name": "stdout", "text": ["✓ Task 1 passed\n"]},
                {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBORw0KGgo=", "text/plain":
                                                                          ["<Figure>"]}},
                {"output_type": "error", "ename": "NameError", "evalue": "x", "traceback": ["NameError: x"]}]
    return notebook


def stripped(notebook):
    notebook = copy.deepcopy(notebook)
    for cell in notebook["cells"]:
        cell["metadata"] = {}
    return notebook


NOTHING = without(POINTS, *POINTS)


def clean_submissions(definitions):
    """The reference's definitions, nothing trained, in a clean notebook. Notebooks that train are graded where their
    training is the point: the full solution, once, beside the attackers of tests/test_redteam_containment.py (this
    assignment is the course's vehicle: vehicle.py)."""
    return {"clean": ("clean_transformer.ipynb", definitions, DEFINITION_POINTS)}


def broken_submissions(definitions):
    """A syntax error, a loop that ignores the alarm, os._exit, and a file that is no notebook."""
    syntax = edit_cell(copy.deepcopy(definitions), "task_4_positional_encoding", lambda s: s.replace("):", ")", 1))
    stuck = edit_cell(copy.deepcopy(definitions), "task_4_positional_encoding", lambda s: prepend_to(s, STUCK))
    exits = edit_cell(copy.deepcopy(definitions), "task_3_encoder_block",
                      lambda s: prepend_to(s, "import os\nos._exit(0)"))
    return {"syntax": ("syntax_transformer.ipynb", syntax, without(DEFINITION_POINTS, 4, 5, 7)),
            # Named to be graded first: its 40 s asleep to the backstop overlap the others' CPU time, not follow it
            "backstop": ("backstop_transformer.ipynb", stuck, without(DEFINITION_POINTS, 4, 5, 7)),
            "exit": ("exit_transformer (1).ipynb", exits, without(DEFINITION_POINTS, 3, 5, 7)),
            "garbage": ("garbage_transformer.ipynb", b"<html>not a notebook</html>", NOTHING)}


def reshaped_submissions(definitions):
    """Right answers in odd notebooks: a check cell deleted, cells duplicated, metadata stripped, stderr noise,
    saved by Colab, a wrong file name."""
    deleted = copy.deepcopy(definitions)
    del deleted["cells"][index_of(deleted, "check_task_5")]
    duplicated = copy.deepcopy(definitions)
    for wanted in ("check_task_1", "task_4_positional_encoding"):
        at = index_of(duplicated, wanted)
        duplicated["cells"].insert(at + 1, copy.deepcopy(duplicated["cells"][at]))
    warn = '    """\n    import warnings\n    warnings.warn("scores in float64", UserWarning)\n    scores'
    noisy = edit_cell(copy.deepcopy(definitions), "task_1_attention",
                      lambda s: s.replace('    """\n    scores', warn, 1))
    edit_cell(noisy, "task_2_multihead_attention", lambda s: s.replace(
        "        batch_size, seq_len, _ = x.shape", "        import sys\n        print('forward', file=sys.stderr)\n"
        "        batch_size, seq_len, _ = x.shape", 1))
    return {"deleted": ("deleted_transformer.ipynb", deleted, DEFINITION_POINTS),
            "duplicated": ("duplicated_transformer.ipynb", duplicated, DEFINITION_POINTS),
            "stripped": ("stripped_transformer.ipynb", stripped(definitions), DEFINITION_POINTS),
            "warnings": ("warnings_transformer.ipynb", noisy, DEFINITION_POINTS),
            "colab": ("colab/Copy of transformer.ipynb", colab_saved(definitions), DEFINITION_POINTS),
            "wrongname-7": ("wrongname-7/notebook (3).ipynb", definitions, DEFINITION_POINTS)}


def tampering_submissions(release, definitions):
    """An edited check cell, monkeypatched checks, fake success lines, visible inputs special-cased, nothing done."""
    edited = edit_cell(copy.deepcopy(definitions), "task_1_attention", mutant(1, "unstable softmax").apply)
    edit_cell(edited, "check_task_1", lambda s: '# check_task_1(scaled_softmax_attention)\nprint("✓ Task 1 passed")')
    patched = copy.deepcopy(release)
    patched["cells"].insert(index_of(patched, "task_1_attention"), {"cell_type": "code", "metadata": {},
                            "source": MONKEYPATCH, "outputs": [], "execution_count": None})
    fake = copy.deepcopy(release)
    for cell in fake["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            task = re.match(r"task_(\d)", grade_id(cell)).group(1)
            cell["source"] = code(cell).replace("raise NotImplementedError()", f'print("✓ Task {task} passed: ok.")')
    special = edit_cell(copy.deepcopy(definitions), "task_4_positional_encoding", lambda s: SPECIAL_CASED_PE)
    return {"edited": ("edited_transformer.ipynb", edited, without(DEFINITION_POINTS, 1)),
            "monkeypatch": ("monkeypatch_transformer.ipynb", patched, NOTHING),
            "fakeprint": ("fakeprint_transformer.ipynb", fake, NOTHING),
            "special": ("special_transformer.ipynb", special, without(DEFINITION_POINTS, 4, 5, 7)),
            "untouched": ("untouched_transformer.ipynb", release, NOTHING)}


def submissions():
    """{student: (file name in the zip, notebook or bytes, {task: expected score})}."""
    release, definitions = read(RELEASE), definitions_only(TRANSFORMER)
    return {**clean_submissions(definitions), **broken_submissions(definitions), **reshaped_submissions(definitions),
            **tampering_submissions(release, definitions)}


# What the report's "Also noted (no action needed)" says of a submission whose notebook had another name.
ALSO_NOTED = {"wrongname-7": "graded as transformer.ipynb", "colab": "graded as transformer.ipynb"}
# What the report must say about each submission that needs attention (a word of the note).
REPORTED = {"backstop": "limit", "exit": "exited", "syntax": "does not parse", "edited": "was edited",
            "deleted": "re-added", "duplicated": "appears 2 times", "stripped": "matched by their content",
            "warnings": "stderr",
            "monkeypatch": "tampering", "fakeprint": "prints a '✓ Task", "untouched": "empty submission",
            "garbage": "not a readable notebook"}


def make_zip(path):
    """The submissions zipped like an LMS download, with a macOS shadow file and a notebook of nobody's."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, notebook, _ in submissions().values():
            archive.writestr(name, notebook if isinstance(notebook, bytes) else json.dumps(notebook))
        archive.writestr("__MACOSX/._clean_transformer.ipynb", b"\0")
        archive.writestr("transformer.ipynb", json.dumps(read(RELEASE)))
    return path


# ----- Fast checks of the pieces -------------------------------------------------------------------------------

@pytest.mark.fast
def test_the_full_solution_is_graded_as_the_vehicle():
    """The full solution trains, so it is graded once: by tests/test_redteam_containment.py, which grades the course's
    vehicle (the registry's first assignment). Registering another assignment first would leave it ungraded."""
    assert assignments()[0].name == NAME, "grade the full solution here, with its training, if it is not the vehicle"


@pytest.mark.fast
def test_collect_reads_student_ids_from_lms_names(tmp_path):
    """Per-student folders, LMS prefixes, Colab names and stray files, as grading/collect/naming.py documents."""
    with zipfile.ZipFile(tmp_path / "download.zip", "w") as archive:
        for name in ("alice_transformer.ipynb", "bob-12345_transformer (1).ipynb", "carol/Copy of transformer.ipynb",
                     "dave/old attempt.ipynb", "dave/transformer.ipynb", "Eve Smith_42_assignsubmission_file_/x.ipynb",
                     "__MACOSX/._alice_transformer.ipynb", "transformer.ipynb"):
            archive.writestr(name, json.dumps(read(RELEASE)))
    collected, unknown, skipped = collect(tmp_path / "download.zip", course_folder(tmp_path), NAME)
    assert sorted(collected) == ["Eve-Smith_42", "alice", "bob-12345", "carol", "dave"]
    assert unknown == ["transformer.ipynb"] and skipped == []
    for student in collected:
        assert (tmp_path / "submitted" / student / NAME / f"{NAME}.ipynb").is_file()
    assert any("Copy of transformer.ipynb" in note for note in collected["carol"])
    assert any("old attempt.ipynb" in note and "not graded" in note for note in collected["dave"])


# ----- End to end: collect and grade every kind of submission -------------------------------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(course folder, seconds make grade took, its output) after collect + grade --jobs 2 on a scratch course."""
    course = scratch_course(tmp_path_factory.mktemp("course"))
    collect_run = subprocess.run([sys.executable, "-m", "grading.collect", str(make_zip(course / "download.zip")),
                                  "--course", str(course), "--assignment", NAME],
                                 cwd=ROOT, capture_output=True, text=True)
    assert collect_run.returncode == 0, collect_run.stderr
    started = time.monotonic()
    unsandboxed = [] if sandbox.bwrap_version() else ["--sandbox", "none"]  # trusted notebooks: ours
    grade_run = subprocess.run([sys.executable, "-m", "grading.grade", "--jobs", "2", "--course", str(course),
                                "--assignment", NAME, *unsandboxed],
                               cwd=ROOT, capture_output=True, text=True, timeout=GRADING_RUNAWAY)
    assert grade_run.returncode == 0, grade_run.stdout + grade_run.stderr
    return course, time.monotonic() - started, grade_run.stdout


@pytest.mark.full
@pytest.mark.grading
def test_the_class_report_names_the_planted_mistake_for_its_student_alone(graded):
    """`make report` on this class: the overflowing softmax planted in Task 1 (the student whose check cell was edited
    away: the grader runs the release's) is named in grades_by_task.csv and counted once in diagnoses.csv, which
    counts what grades_by_task.csv names."""
    counted, named = class_report(graded[0], NAME)
    planted = f"{NAME}.1.{slug_of(mutant(1, 'unstable softmax').diagnosis)}"
    assert named.get(("edited", 1)) == planted, named
    assert counted.get(planted) == 1 and counted == dict(Counter(named.values())), (counted, named)


@pytest.mark.full
@pytest.mark.grading
def test_every_task_of_every_submission_gets_its_expected_score(graded):
    """grades_by_task.csv, task by task, for every kind of submission."""
    course, _, _ = graded
    rows = csv_rows(course / "grades_by_task.csv")
    got = {(row["student_id"], int(row["task"])): float(row["score"]) for row in rows}
    wrong = {}
    for student, (_, _, expected) in submissions().items():
        for task, score in expected.items():
            if got.get((student, task)) != score:
                wrong[(student, task)] = (got.get((student, task)), score)
    assert not wrong, f"(student, task): (graded, expected) = {wrong}"


@pytest.mark.full
@pytest.mark.grading
def test_nbgrader_export_and_gradebook_hold_the_same_scores(graded):
    """nbgrader's export (and so the formgrader) shows the authoritative totals; only tampering awaits a person."""
    course, _, _ = graded
    rows = csv_rows(course / "grades.csv")
    assert {"student_id", "assignment", "score", "max_score"} <= set(rows[0])
    totals = {student: float(sum(expected.values())) for student, (_, _, expected) in submissions().items()}
    assert {row["student_id"]: float(row["score"]) for row in rows} == totals
    assert all(float(row["max_score"]) == 10 for row in rows)
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        flagged = {student for student in totals
                   for notebook in gradebook.find_submission(NAME, student).notebooks
                   if notebook.needs_manual_grade}
    assert flagged == {"monkeypatch"}  # it replaced torch's comparisons and the checkers: flagged, still 0


@pytest.mark.full
@pytest.mark.grading
def test_report_says_why_each_odd_submission_needed_attention(graded):
    """Every submission that needed attention is listed with the reason; clean ones are not."""
    course, _, _ = graded
    text = (course / f"grading_report_{NAME}.md").read_text()
    sections = report_sections(text)
    missing = {student: words for student, words in REPORTED.items() if words not in sections.get(student, "")}
    assert not missing, f"not reported: {missing}"
    assert "clean" not in sections
    assert not set(ALSO_NOTED) & set(sections), "a renamed notebook graded as the assignment's needs no one"
    noted = also_noted(text)
    missing = {student: words for student, words in ALSO_NOTED.items() if words not in noted.get(student, "")}
    assert not missing, f"not listed under 'Also noted': {missing}"
    assert "failed a hidden test" in sections["special"] and "Task 4: hidden:" in sections["special"]
    if os.geteuid() == 0:
        assert "containment: bubblewrap" in text


def solution_lines():
    """Every substantive line inside a BEGIN/END SOLUTION region of the reference, whitespace squeezed."""
    answers, _ = solution_regions(SOURCE)
    return [re.sub(r"\s+", " ", line.strip()) for line in answers if len(line.strip()) > 12]


def hidden_test_lines():
    """Substantive lines of the hidden tests and of the grader's comparisons."""
    cases = [*(ROOT / "grading" / "cases").rglob("*.py"), *(ROOT / "course").glob("*/cases/*.py")]
    judge = ("compare.py", "expected.py", "trained_models.py", "score.py")
    files = cases + [ROOT / "grading" / "judge" / name for name in judge]
    return [re.sub(r"\s+", " ", line.strip()) for path in files for line in path.read_text().splitlines()
            if len(line.strip()) > 25 and not line.strip().startswith(("#", '"""', "from ", "import "))]


@pytest.mark.full
@pytest.mark.grading
def test_feedback_and_release_hold_no_hidden_tests_or_reference_code(graded):
    """Nothing a student gets back holds hidden-test source, or reference code they did not write themselves."""
    course, _, _ = graded
    secret, reference = hidden_test_lines(), solution_lines()
    assert len(secret) > 50 and len(reference) > 40  # the scans below are not vacuous
    release = re.sub(r"\s+", " ", RELEASE.read_text())
    assert not [line for line in secret if line in release]
    # the task descriptions quote the pinned API (e.g. the feed-forward layout): students have those lines anyway
    released = re.sub(r"\s+", " ", "\n".join("".join(cell["source"]) for cell in read(RELEASE)["cells"]))
    seen_in_clean = 0
    for student, (_, notebook, _) in submissions().items():
        (page,) = (course / "feedback" / student / NAME).glob("*.html")
        text = visible_text(page)
        cells = [] if isinstance(notebook, bytes) else notebook["cells"]
        sent = re.sub(r"\s+", " ", "\n".join(code(cell) for cell in cells))
        assert not [line for line in secret if line in text], student
        leaked = [line for line in reference if line in text and line not in sent and line not in released]
        assert not leaked, f"{student}: reference lines in the feedback: {leaked[:3]}"
        seen_in_clean += student == "clean" and sum(line in text for line in reference)
    assert seen_in_clean > 40  # the reference's definitions do show as the student's own code: the search finds code


@pytest.mark.full
@pytest.mark.grading
def test_honest_solutions_stay_within_their_cpu_limits(graded):
    """No submission but the loop reaches a limit, however busy the machine (a backstop under load is run again alone);
    the loop that swallows the alarm is stopped by the wall-clock backstop. `pytest -s` prints the seconds."""
    course, seconds, output = graded
    print(f"\ngrade --jobs 2: {seconds:.0f} s for {len(submissions())} submissions; each: "
          f"{seconds_per_submission(output)}")
    limits = limits_section((course / f"grading_report_{NAME}.md").read_text())
    print(limits)
    lines = [line for line in limits.splitlines() if line.startswith("- **")]
    assert not [line for line in lines if not line.startswith("- **backstop**")], limits
    assert any(line.startswith("- **backstop**") and "wall-clock backstop" in line for line in lines), limits
    assert "whole notebook" not in limits
