"""Submissions built from the reference and release notebooks, a scratch course to grade them in, and readers of
what grading writes (progress lines, CSVs, the report, feedback pages): shared by the tests of grading/."""
import copy
import csv
import html
import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from course_paths import POINTS, ROOT, SOURCE, VEHICLE
from grading.sandbox import sandbox
from grading.match.notebook import read


# ----- Submissions, built from the reference and release notebooks -------------------------------------------

def code(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")


def reference_answers(source=SOURCE):
    """{grade_id: the reference answer as a student would write it (solution markers dropped)}."""
    answers = {}
    for cell in json.loads(Path(source).read_text())["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            lines = [line for line in code(cell).split("\n") if "### BEGIN SOLUTION" not in line
                     and "### END SOLUTION" not in line]
            answers[grade_id(cell)] = "\n".join(lines)
    return answers


def with_answers(notebook, answers):
    """A copy of notebook whose answer cells hold answers[grade_id] where given."""
    notebook = copy.deepcopy(notebook)
    for cell in notebook["cells"]:
        if grade_id(cell) in answers:
            cell["source"] = answers[grade_id(cell)]
    return notebook


def edit_cell(notebook, wanted, edit):
    """Apply edit(source) -> source to the cell with grade_id wanted; the edit must change it."""
    for cell in notebook["cells"]:
        if grade_id(cell) == wanted:
            edited = edit(code(cell))
            assert edited != code(cell), f"edit of {wanted} changed nothing"
            cell["source"] = edited
            return notebook
    raise AssertionError(f"no cell {wanted}")


def index_of(notebook, wanted):
    return next(i for i, cell in enumerate(notebook["cells"]) if grade_id(cell) == wanted)


def answer_id(notebook, task):
    """The grade_id of task's (first) answer cell in notebook: `task_<N>_<what it answers>`."""
    return next(grade_id(cell) for cell in notebook["cells"] if grade_id(cell).startswith(f"task_{task}_"))


def definitions_only(registered=VEHICLE):
    """An assignment's release with the reference answers of its definition tasks and nothing trained: fast to
    grade."""
    answers = {key: value for key, value in reference_answers(registered.source_notebook).items()
               if int(re.match(r"task_(\d+)", key).group(1)) in registered.definition_tasks}
    return with_answers(read(registered.release_notebook), answers)


def prepend_to(source, lines):
    return lines + "\n" + source


def without(points, *tasks):
    return {task: (0 if task in tasks else score) for task, score in points.items()}


DEFINITION_POINTS = without(POINTS, *VEHICLE.training_tasks)  # the definitions' reference answers, nothing trained


# ----- A scratch copy of the course to grade them in ---------------------------------------------------------

# A scratch course's CPU limit for ordinary cells, instead of the registry's 60 s: an honest one uses under 2 s (the
# reference's check cells under 1 s on a busy machine), and what the tests stop at the limit costs less.
SCRATCH_CELL_SECONDS = 10


def scratch_course(folder, idle_seconds=None):
    """A copy of the course's grading inputs, with SCRATCH_CELL_SECONDS as the limit of ordinary cells (its registry's,
    read by its nbgrader_config.py), and idle_seconds (when given) as its allowance of wall-clock seconds without CPU
    use."""
    for name in ("solutions", "notebooks"):
        shutil.copytree(ROOT / name, folder / name)
    shutil.copy(ROOT / "nbgrader_config.py", folder)
    registry = (ROOT / "course.toml").read_text()
    assert "\ncell_seconds = 60\n" in registry
    registry = registry.replace("\ncell_seconds = 60\n", f"\ncell_seconds = {SCRATCH_CELL_SECONDS}\n")
    if idle_seconds is not None:
        assert "\nidle_seconds = 300\n" in registry
        registry = registry.replace("\nidle_seconds = 300\n", f"\nidle_seconds = {idle_seconds}\n")
    (folder / "course.toml").write_text(registry)
    return folder


# Seconds after which a test's grading run counts as stuck: a runaway bound, not a speed requirement. Limits count
# CPU time, so a busy machine changes no score, only the time: 17 submissions of the first assignment take several
# minutes on an idle 2-core machine, and a load of 8 on 2 cores makes that about four times as long.
GRADING_RUNAWAY = 3 * 3600


def collect_and_grade(course, name, submissions, timeout=GRADING_RUNAWAY):
    """Zip submissions ({student: (file name, notebook, expected)}) as an LMS download, then `grading.collect` and
    `grading.grade --jobs 2` them in course for the assignment name; returns (seconds grading took, its output)."""
    with zipfile.ZipFile(course / "download.zip", "w") as archive:
        for file_name, notebook, _ in submissions.values():
            archive.writestr(file_name, json.dumps(notebook))
    collect_run = subprocess.run([sys.executable, "-m", "grading.collect", str(course / "download.zip"),
                                  "--assignment", name, "--course", str(course)], cwd=ROOT, capture_output=True,
                                 text=True)
    assert collect_run.returncode == 0, collect_run.stdout + collect_run.stderr
    started = time.monotonic()
    unsandboxed = [] if sandbox.bwrap_version() else ["--sandbox", "none"]  # trusted notebooks: ours
    grade_run = subprocess.run([sys.executable, "-m", "grading.grade", "--assignment", name, "--jobs", "2",
                                "--course", str(course), *unsandboxed], cwd=ROOT, capture_output=True, text=True,
                               timeout=timeout)
    assert grade_run.returncode == 0, grade_run.stdout + grade_run.stderr
    return time.monotonic() - started, grade_run.stdout


def wrong_scores(course, name, submissions):
    """{(student, task): (graded, expected)} wherever grades_by_task.csv differs from the submissions' expectations."""
    got = {(row["student_id"], int(row["task"])): float(row["score"])
           for row in csv_rows(course / "grades_by_task.csv") if row.get("assignment", name) == name}
    return {(student, task): (got.get((student, task)), score) for student, (_, _, expected) in submissions.items()
            for task, score in expected.items() if got.get((student, task)) != score}


# ----- Reading what grading wrote: progress lines, CSVs, the report, feedback pages ------------------------------

PROGRESS = re.compile(r"^\[\d+/\d+\] graded (.+): \S+ in (\d+) s; ")  # grade's line per finished submission


def seconds_per_submission(output):
    """{student: seconds} from the progress lines `grade` prints."""
    return {found.group(1): float(found.group(2)) for line in output.splitlines() if (found := PROGRESS.match(line))}


def csv_rows(path):
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def make_report(course, name):
    """Run `python -m grading.classreport` (what `make report` runs) on a course; its output."""
    done = subprocess.run([sys.executable, "-m", "grading.classreport", "--course", str(course), "--assignment", name],
                          cwd=ROOT, capture_output=True, text=True, timeout=GRADING_RUNAWAY)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def class_report(course, name):
    """(diagnoses.csv as {id: students}, grades_by_task.csv's named mistakes as {(student, task): id}) after
    make_report on a graded course; only failed tasks may name one."""
    make_report(course, name)
    counted = {row["diagnosis"]: int(row["students"]) for row in csv_rows(course / "reports" / name / "diagnoses.csv")}
    rows = [row for row in csv_rows(course / "grades_by_task.csv") if row["assignment"] == name and row["diagnosis"]]
    assert all(float(row["score"]) < float(row["max_score"]) for row in rows), rows
    return counted, {(row["student_id"], int(row["task"])): row["diagnosis"] for row in rows}


def report_sections(text):
    """{student: their notes} from grading_report_<assignment>.md's 'Needs attention' part."""
    part = text.split("## Needs attention", 1)[1].split("\n## ", 1)[0]
    return {unescaped(chunk.split(" (", 1)[0].strip()): chunk for chunk in part.split("### ")[1:]}


def unescaped(student):
    """A student id as collect wrote it, from the report's Markdown-escaped one ("Bob-Jones\\_102")."""
    return student.replace("\\", "")


def also_noted(text):
    """{student: their lines} from grading_report_<assignment>.md's 'Also noted (no action needed)' part."""
    part = text.split("## Also noted (no action needed)", 1)[1].split("\n## ", 1)[0] if "## Also noted" in text else ""
    found = {}
    for line in part.splitlines():
        if line.startswith("- **"):
            student, note = line[4:].split("**: ", 1)
            found[unescaped(student)] = found.get(unescaped(student), "") + note + "\n"
    return found


def flagged_section(text):
    """The 'Flagged for manual grading' part of grading_report_<assignment>.md ('' when nothing was flagged)."""
    return text.split("## Flagged for manual grading", 1)[1].split("\n## ", 1)[0] if "## Flagged for" in text else ""


def limits_section(text):
    """The 'Time limits reached' part of grading_report_<assignment>.md ('' when no limit was reached)."""
    return text.split("## Time limits reached", 1)[1].split("\n## ", 1)[0] if "## Time limits reached" in text else ""


def visible_text(path):
    """The text a reader of an HTML file sees (tags dropped, entities decoded), whitespace-normalised."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", path.read_text(errors="replace"))))


def hidden_case_lines(name):
    """The code lines of course/<name>/cases/ long enough to be telling (comments, docstrings and imports left out),
    whitespace squeezed: what must never reach a student's feedback page."""
    return [re.sub(r"\s+", " ", line.strip()) for path in (ROOT / "course" / name / "cases").glob("*.py")
            for line in path.read_text().splitlines()
            if len(line.strip()) > 25 and not line.strip().startswith(("#", '"""', "from ", "import "))]


def published(course, name):
    """What a grading run of the assignment published that another way of grading it must equal: the CSVs' rows,
    the report's notes per student, the feedback pages and the export files."""
    rows = {table: sorted(tuple(sorted(row.items())) for row in csv_rows(course / table))
            for table in ("grades.csv", "grades_by_task.csv")}
    report = (course / f"grading_report_{name}.md").read_text()
    pages = sorted(str(path.relative_to(course)) for path in (course / "feedback").rglob("*.html"))
    exports = sorted(str(path.relative_to(course)) for path in (course / "exports").rglob("*") if path.is_file())
    return rows, report_sections(report), pages, exports


def hidden_lines_in_feedback(course, name, students):
    """{student: the hidden-case lines their feedback page shows}, for those whose page shows any."""
    secret = hidden_case_lines(name)
    assert len(secret) > 40, "too few hidden-case lines to look for: the search would prove nothing"
    found = {}
    for student in students:
        (page,) = (course / "feedback" / student / name).glob("*.html")
        text = visible_text(page)
        found |= {student: shown} if (shown := [line for line in secret if line in text]) else {}
    return found
