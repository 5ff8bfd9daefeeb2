"""grading/'s stages and its multi-assignment bookkeeping: layout, collect for any assignment, merged CSVs,
two assignments in one gradebook, a one-student regrade, progress lines and the LMS exports.

The end-to-end part (marked `grading`) drives nbgrader through grading.publish with verdicts set by hand, so it
needs no probe and no training: two assignments, then a regrade of one student.
"""
import ast
import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from course.registry import assignments
from course_paths import NAME, POINTS, RELEASE, ROOT, course_folder
from submissions import csv_rows, scratch_course
from grading.publish.exports import rows, write_exports
from grading.publish.report import write_task_scores
from grading.jobs import Progress

STAGES = ("collect", "match", "sandbox", "judge", "publish")  # in the order a submission passes them
SHARED = ("folders", "records", "recipes", "text")  # modules every stage may use; they import no stage
DRIVER = ("grade", "jobs", "shards")  # the pipeline: it calls the stages' entry points (shards: split and merged)


def relative_imports(path):
    """[(module, names)] of the `from .x import y` statements of a module."""
    tree = ast.parse(path.read_text())
    return [(node.module or "", [alias.name for alias in node.names]) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1]


def grading_imports(path):
    """The top-level parts of grading/ a module of grading/ imports: {'match', 'records', ...} (its own folder's
    modules and the standard library aside)."""
    package = path.relative_to(ROOT / "grading").parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            parts = [*package[:len(package) - node.level + 1], *(node.module or "").split(".")]
            parts = [part for part in parts if part] or [alias.name for alias in node.names]
            found.add(parts[0] if parts[0] != (package or ("",))[0] else package[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("grading."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("grading.")}
    return found - set(package[:1])


@pytest.mark.fast
def test_each_stage_imports_only_earlier_stages_and_the_shared_modules():
    """collect -> match -> sandbox -> judge -> publish: no stage imports a later one or the probe, and none imports
    the sandbox (what it hands on is a record of grading.records); shared modules import no stage; cases (each
    assignment's test cases, which any stage may read) import only the shared modules."""
    allowed = {stage: set(STAGES[:index]) - {"sandbox"} | set(SHARED) | {"cases"} for index, stage in enumerate(STAGES)}
    allowed |= {"cases": set(SHARED), **{name: set() for name in SHARED}}
    for part, may in allowed.items():
        paths = [ROOT / "grading" / f"{part}.py"] if part in SHARED else sorted((ROOT / "grading" / part).rglob("*.py"))
        for path in paths:
            wrong = grading_imports(path) - may - {part}
            assert not wrong, f"{path.relative_to(ROOT)} imports grading.{wrong}: not before {part} in the pipeline"


@pytest.mark.fast
def test_the_probe_imports_no_stage_only_what_the_sandbox_holds():
    """grading/probe/ runs inside the sandbox: it imports torch, IPython, the student bundle and the plain modules
    copied beside it (recipes.py, provenance.py), never grading/; and nothing but the sandbox's runtime names it."""
    beside = {"recipes", "provenance", "checkers", "course_lib", "torch", "IPython", "traitlets"}
    for path in [*(ROOT / "grading" / "probe").glob("*.py"), ROOT / "grading" / "recipes.py"]:
        tree = ast.parse(path.read_text())
        assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree)), path
        assert not top_imports(tree) - beside - set(sys.stdlib_module_names), f"{path.name}: {top_imports(tree)}"
    for path in (ROOT / "grading").rglob("*.py"):
        assert "probe" not in grading_imports(path), f"{path.relative_to(ROOT)} imports the probe's code"


def top_imports(tree):
    """The top-level names of the modules a module's absolute imports name."""
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    return {name.split(".")[0] for name in names}


@pytest.mark.fast
def test_the_import_rules_find_a_later_stage():
    """The rule above is not vacuous: a judge module that imports the sandbox, or the probe, is found."""
    assert grading_imports(ROOT / "grading" / "judge" / "__init__.py") >= {"records"}
    assert grading_imports(ROOT / "grading" / "sandbox" / "supervise.py") >= {"match", "records"}
    planted = ROOT / "grading" / "judge" / "_planted_test_module.py"
    try:
        planted.write_text("from ..sandbox.supervise import MAX_CELL\nfrom ..probe import probe\n")
        assert grading_imports(planted) == {"sandbox", "probe"}
    finally:
        planted.unlink()


@pytest.mark.fast
def test_grade_imports_only_the_stages_entry_points():
    """grade.py takes from each stage only what its __init__ exports, never a module inside a stage."""
    imports = relative_imports(ROOT / "grading" / "grade.py")
    assert {module for module, _ in imports} >= {*STAGES, "cases", "records"}
    for module, names in imports:
        assert module in (*STAGES, "cases", *SHARED, *DRIVER), f"grade.py imports grading.{module}: not a stage"
        if module in STAGES:
            exported = __import__(f"grading.{module}", fromlist=["__all__"]).__all__
            assert set(names) <= set(exported), f"grade.py takes {set(names) - set(exported)} from {module}"


@pytest.mark.fast
def test_every_stage_is_a_folder_with_its_entry_points_documented():
    """One folder per stage; its __init__ names its entry point and exports it; no module is left at the top."""
    top = {path.stem for path in (ROOT / "grading").glob("*.py")}
    assert top == {"__init__"} | set(DRIVER) | set(SHARED), top
    for stage in STAGES:
        init = (ROOT / "grading" / stage / "__init__.py").read_text()
        assert "Entry point" in init or stage == "cases", stage
    assert (ROOT / "course" / NAME / "cases" / "__init__.py").is_file()


@pytest.mark.fast
@pytest.mark.parametrize("assignment", assignments(), ids=lambda assignment: assignment.name)
def test_provided_cells_after_the_last_check_cell_are_not_run_but_a_students_cell_is(assignment):
    """Every record is taken at a check cell: the release's cells after the last one are left out of the program,
    every other release cell is in it but the demo cells (tests/test_demo_cells.py), and a cell the student added at
    the end still runs."""
    from grading.match.notebook import read, release_layout
    from grading.match.program import build_program
    release = read(assignment.release_notebook)
    layout = release_layout(release)
    added = dict(release, cells=release["cells"] + [{"cell_type": "code", "metadata": {}, "source": "print('mine')",
                                                      "outputs": [], "execution_count": None}])
    program, _ = build_program(added, layout, lambda source: 60.0)
    run = {cell.release_index for cell in program if cell.release_index >= 0}
    demos = {cell.index for cell in layout if cell.demo}
    assert run == {cell.index for cell in layout} - trailing_provided_cells(layout) - demos
    assert program[-1].kind == "extra" and program[-1].source == "print('mine')"


@pytest.mark.fast
def test_some_release_has_provided_cells_after_its_last_check_cell():
    """The test above leaves something out for at least one assignment (its plots and timings of the trained model)."""
    from grading.match.notebook import read, release_layout
    assert any(trailing_provided_cells(release_layout(read(a.release_notebook))) for a in assignments())


def trailing_provided_cells(layout):
    """Release indices of the provided cells after the last check cell of a release layout."""
    last_check = max(cell.index for cell in layout if cell.kind == "check")
    return {cell.index for cell in layout if cell.kind == "given" and cell.index > last_check}


@pytest.mark.full
def test_a_new_gradebook_gets_the_migration_nbgraders_own_alembic_command_gives():
    """The grader reads nbgrader's newest migration in-process; nbgrader's own way, in a process without the grader,
    runs `alembic heads`."""
    from grading.publish import gradebook
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    own = subprocess.run([sys.executable, "-c", "from nbgrader.api import get_alembic_version as v; print(v())"],
                         capture_output=True, text=True, check=True, env=dict(os.environ, PATH=path))
    assert gradebook.newest_migration() == own.stdout.strip()
    from nbgrader import api
    assert api.get_alembic_version is gradebook.newest_migration  # what a new Gradebook calls


@pytest.mark.fast
def test_the_grader_reads_notebooks_without_the_iri_grammar():
    """grading/__init__.py keeps jsonschema from building rfc3987_syntax's grammar; notebooks still validate."""
    code = ("import sys; import grading.match.notebook; import nbformat; "
            "nbformat.validate(nbformat.read(sys.argv[1], as_version=4)); print(sys.modules['rfc3987_syntax'])")
    done = subprocess.run([sys.executable, "-c", code, str(RELEASE)], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "None"


@pytest.mark.fast
def test_cases_are_found_by_assignment_name():
    """build_cases looks for course/<name>/cases/: an assignment without one is refused with what to add."""
    from grading.cases import NoCases, cases_of
    assert cases_of(NAME).build_cases
    with pytest.raises(NoCases, match="course/decoder/cases/"):
        cases_of("decoder")


@pytest.mark.fast
def test_collect_command_files_another_assignment_and_keeps_lms_ids(tmp_path):
    """`python -m grading.collect --assignment decoder` reads decoder's names; Canvas's and Moodle's numbers stay."""
    second = ('\n[[assignments]]\nname = "decoder"\ntitle = "x"\n[assignments.tasks]\n'
              '1 = { points = 10, check = "checkers:check_task_1", trains = false }\n')
    root = course_folder(tmp_path / "course")
    (root / "course.toml").write_text((root / "course.toml").read_text() + second)
    with zipfile.ZipFile(tmp_path / "download.zip", "w") as archive:
        archive.writestr("smithalice_late_1234_5678_decoder.ipynb", "{}")
        archive.writestr("Bob Jones_77_assignsubmission_file_/Copy of decoder.ipynb", "{}")
        archive.writestr("decoder.ipynb", "{}")
    done = subprocess.run([sys.executable, "-m", "grading.collect", str(tmp_path / "download.zip"), "--course",
                           str(root), "--assignment", "decoder"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lms = {student: json.loads((root / "submitted" / student / "decoder" / "collected.json").read_text())["lms_id"]
           for student in ("smithalice", "Bob-Jones_77")}
    assert lms == {"smithalice": "1234", "Bob-Jones_77": "77"}
    assert (root / "submitted" / "smithalice" / "decoder" / "decoder.ipynb").is_file()
    assert not (root / "submitted" / "decoder").exists()


@pytest.mark.fast
def test_task_scores_merge_by_assignment_and_student(tmp_path):
    """A run replaces its own assignment's rows (a regrade: only its student's); other assignments' rows stay."""
    path = tmp_path / "grades_by_task.csv"
    write_task_scores(path, "first", [("a", 1, 1.0, 1.0), ("b", 1, 0.0, 1.0)])
    write_task_scores(path, "second", [("a", 1, 2.0, 2.0)])
    write_task_scores(path, "first", [("a", 1, 0.0, 1.0)], students={"a"})
    got = [(row["assignment"], row["student_id"], row["score"]) for row in csv_rows(path)]
    assert got == [("first", "a", "0"), ("first", "b", "0"), ("second", "a", "2")]
    write_task_scores(path, "first", [("c", 1, 1.0, 1.0)])
    assert [(row["assignment"], row["student_id"]) for row in csv_rows(path)] == [("first", "c"), ("second", "a")]


class Graded:
    def __init__(self, student, score, error=""):
        self.student, self.score, self.max_score, self.seconds, self.error = student, score, 10, 3.0, error


@pytest.mark.fast
def test_progress_lines_count_done_failed_and_time_left():
    """One line per finished submission: done / total, failures so far, the time left from the pace so far."""
    lines, now = [], iter([0.0, 10.0, 20.0, 30.0])
    progress = Progress(3, clock=lambda: next(now), out=lambda text, flush: lines.append(text))
    progress.finished(Graded("alice", 10))
    progress.finished(Graded("bob", 0, error="no notebook was submitted"))
    progress.finished(Graded("carol", 7))
    assert lines[0].startswith("[1/3] graded alice: 10/10") and "0 failed so far; about 20 s left" in lines[0]
    assert lines[1].startswith("[2/3] graded bob") and "1 failed so far; about 10 s left" in lines[1]
    assert lines[2].startswith("[3/3]") and "1 failed so far; about 0 s left" in lines[2]


SCORES = {"alice": {"encoder": 9.0, "decoder": 4.5}, "bob": {"encoder": 3.0}}


@pytest.mark.fast
def test_canvas_layout_names_students_by_lms_id_with_one_column_per_assignment():
    """Canvas's import columns, then the assignments in release order; a student without an LMS id keeps theirs."""
    header, table = rows(SCORES, {"alice": "1234"}, "canvas", order=["encoder", "decoder"])
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "encoder", "decoder"]
    assert table == [["alice", "1234", "", "", "", "9", "4.5"], ["bob", "bob", "", "", "", "3", ""]]


@pytest.mark.fast
def test_moodle_layout_has_an_identifier_column_and_one_column_per_assignment(tmp_path):
    """`ID number` from collected.json's lms_id, the course's id, then one column per assignment (sorted: no order)."""
    submitted = tmp_path / "submitted"
    (submitted / "alice" / "decoder").mkdir(parents=True)
    (submitted / "alice" / "decoder" / "collected.json").write_text(json.dumps({"notes": [], "lms_id": "77"}))
    write_exports(tmp_path / "exports", SCORES, submitted, ["moodle"])
    with open(tmp_path / "exports" / "moodle.csv", newline="") as file:
        got = list(csv.reader(file))
    assert got == [["ID number", "Student", "decoder", "encoder"], ["77", "alice", "4.5", "9"],
                   ["bob", "bob", "", "3"]]
    assert not (tmp_path / "exports" / "canvas.csv").exists()


def two_assignment_course(folder):
    """A scratch course with the first registered assignment and `sequel` (a copy of it, registered after it)."""
    scratch_course(folder)
    for kind in ("solutions", "notebooks"):
        (folder / kind / "sequel").mkdir()
        shutil.copy(folder / kind / NAME / f"{NAME}.ipynb", folder / kind / "sequel" / "sequel.ipynb")
    registry = (folder / "course.toml").read_text()
    tasks = registry[registry.index("[assignments.tasks]"):].split("\n[[assignments]]")[0]  # the first assignment's
    (folder / "course.toml").write_text(registry + '\n[[assignments]]\nname = "sequel"\ntitle = "x"\n' + tasks)
    return folder


def publish_scores(root, assignment, scores, student=None):
    """grading.publish for an assignment with hand-set scores {student: {task: score}} (no probe runs)."""
    from grading.collect import Submission
    from grading.folders import Course
    from grading.judge import Judging, Result, not_graded
    from grading.publish import publish, write_rendered
    from grading.publish.render import render
    from grading.match import prepare_release
    course = Course(root, assignment)
    release = prepare_release(course)
    judging = Judging(None, {}, {}, {task: cell.points for task, cell in release.checks.items()})
    submissions, results = [], []
    for name, by_task in scores.items():
        folder = course.submitted / name / assignment
        folder.mkdir(parents=True, exist_ok=True)
        submissions.append(Submission(name, folder))
        verdicts = not_graded(judging, "a test")
        for task, score in by_task.items():
            verdicts[task].score = score
        results.append(Result(name, verdicts, []))
        write_rendered(course, submissions[-1], render(release.notebook, [], {}, verdicts, []))
    return publish(course, release, submissions, results, {"jobs": 1, "sandbox": "none", "seconds": 0}, student)


def snapshot(root):
    """What a regrade must leave alone for bob: his rows, his feedback pages, the first assignment's report."""
    feedback = {path.relative_to(root): path.read_bytes() for path in sorted((root / "feedback" / "bob").rglob("*"))
                if path.is_file()}
    rows_of = {(row["student_id"], row["assignment"], row["task"]): row["score"]
               for row in csv_rows(root / "grades_by_task.csv")}
    totals = {(row["student_id"], row["assignment"]): row["score"] for row in csv_rows(root / "grades.csv")}
    return feedback, rows_of, totals


@pytest.mark.full
@pytest.mark.grading
def test_two_assignments_share_one_gradebook_and_a_regrade_touches_one_student(tmp_path):
    """The first assignment then sequel: every file keeps both; then alice's regrade of the first changes only
    alice's."""
    from grading.folders import Course
    from grading.publish import gradebook
    root = two_assignment_course(tmp_path / "course")
    tasks = list(POINTS)  # scores set by hand on seven of the first assignment's tasks (sequel's are the same)
    assert not publish_scores(root, NAME, {"alice": {tasks[0]: 1.0}, "bob": {tasks[1]: 1.0, tasks[4]: 2.0}})
    assert not publish_scores(root, "sequel", {"alice": {tasks[2]: 1.0}, "bob": {tasks[3]: 1.0}})
    scores = gradebook.all_scores(Course(root, NAME))
    assert scores == {"alice": {NAME: 1.0, "sequel": 1.0}, "bob": {NAME: 3.0, "sequel": 1.0}}
    feedback, rows_before, totals = snapshot(root)
    assert {(student, assignment) for student, assignment in totals} == {
        (student, assignment) for student in ("alice", "bob") for assignment in (NAME, "sequel")}
    assert {assignment for _, assignment, _ in rows_before} == {NAME, "sequel"}
    assert (root / f"grading_report_{NAME}.md").is_file() and (root / "grading_report_sequel.md").is_file()
    report = (root / f"grading_report_{NAME}.md").read_bytes()
    assert not publish_scores(root, NAME, {"alice": {tasks[0]: 1.0, tasks[6]: 2.0}}, student="alice")
    feedback_after, rows_after, totals_after = snapshot(root)
    assert feedback_after == feedback and (root / f"grading_report_{NAME}.md").read_bytes() == report
    assert {key: value for key, value in rows_after.items() if key[0] == "bob"} == \
        {key: value for key, value in rows_before.items() if key[0] == "bob"}
    assert rows_after[("alice", NAME, str(tasks[6]))] == "2" and totals_after[("alice", NAME)] == "3.0"
    assert {key: value for key, value in totals_after.items() if key != ("alice", NAME)} == \
        {key: value for key, value in totals.items() if key != ("alice", NAME)}
    assert (root / f"grading_report_{NAME}_alice.md").is_file()
    with open(root / "exports" / "canvas.csv", newline="") as file:
        canvas = list(csv.reader(file))
    assert canvas[0][-2:] == [NAME, "sequel"] and canvas[1][0] == "alice" and canvas[1][-2:] == ["3", "1"]


@pytest.mark.fast
def test_an_assignment_names_its_own_weight_roles_without_editing_the_probe():
    """A recipe's "slots" and "facts" name an assignment's own functions as "module:function" (found in the runtime);
    the shared core keeps no table of short names."""
    from checkers._weights import block_slots, encoder_blocks
    from grading.recipes import facts_of, slots_of
    assert slots_of("checkers._weights:block_slots") is block_slots
    assert facts_of("checkers._weights:encoder_blocks") is encoder_blocks
    with pytest.raises(AttributeError):
        slots_of("checkers._weights:no_such_slots")
    with pytest.raises(ValueError, match="module:function"):
        facts_of("block_slots")


@pytest.mark.fast
def test_a_fact_that_differs_is_told_by_its_assignments_own_sentence():
    """The judge finds a fact's sentence in the FACT_PROBLEMS of the cases package of the assignment whose checkers
    read the fact; a key it has no sentence for, or a fact of the shared checkers, gets "<function>: <key> is wrong"."""
    from course.registry import assignments
    from grading.cases import cases_of, fact_problem
    from grading.recipes import facts_of
    told = 0
    for assignment in assignments():
        problems = getattr(cases_of(assignment.name), "FACT_PROBLEMS", {})
        for (fact, key), sentence in problems.items():
            assert fact.startswith(f"checkers.{assignment.name}.") and callable(facts_of(fact)), fact
            assert fact_problem(fact, key) == sentence
            assert fact_problem(fact, "no_such_key") == f"{fact.partition(':')[2]}: no_such_key is wrong"
            told += 1
    assert told  # some assignment's cases record facts, so the lookup is exercised
    assert fact_problem("checkers._weights:encoder_blocks", "blocks") == "encoder_blocks: blocks is wrong"
