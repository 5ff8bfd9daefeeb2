"""Canvas's and Moodle's downloads read as what they are, and plain `grade` grades every assignment collected.

An instructor's report must list only what needs them: a late or empty submission, not every student whose LMS
renamed their notebook. Plain `grade` (and `--student`) grades the assignments that have submissions, says which
registered ones have none, and exits 0 when everything present was graded.
"""
import json
import subprocess
import sys
import zipfile

import pytest

from course.registry import RegistryError, assignment, assignments
from course_paths import ROOT, course_folder
from grading.collect import collect
from grading.collect.naming import file_name, is_assignment_file, late_mark, lms_id, source_of
from grading.sandbox import sandbox
from grading.match.notebook import read
from submissions import GRADING_RUNAWAY, also_noted, csv_rows, definitions_only, report_sections, scratch_course

FIRST, SECOND, LAST = assignments()[0], assignments()[1], assignments()[-1]  # shared machinery: any will do
A, B, C = FIRST.name, SECOND.name, LAST.name
ON_TIME, LATE = (2026, 11, 30, 12, 0, 0), (2026, 12, 2, 9, 30, 0)
DUE = "2026-12-01T23:59:00"


def with_due(course, name, due=DUE):
    """Give course.toml's entry for `name` a due date."""
    registry = (course / "course.toml").read_text()
    entry = f'\nname = "{name}"\n'
    assert entry in registry
    (course / "course.toml").write_text(registry.replace(entry, f"{entry}due = {due}\n"))


def write_zip(path, entries):
    """A zip of (name, text, date_time) entries, dated as an LMS dates them."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, text, when in entries:
            archive.writestr(zipfile.ZipInfo(name, date_time=when), text)
    return path


def canvas_zip(path):
    """The first assignment as Canvas names it: on time, late, re-uploaded (-1), two files from one student, and an
    empty one."""
    honest, empty = json.dumps(definitions_only(FIRST)), json.dumps(read(FIRST.release_notebook))
    return write_zip(path, [(f"smithalice_1234_5678_{A}.ipynb", honest, ON_TIME),
                            (f"jonesbob_late_2345_6789_{A}.ipynb", honest, LATE),
                            (f"leecarol_3456_7890_{A}-1.ipynb", honest, ON_TIME),
                            (f"kimdan_4567_8901_{A}.ipynb", honest, ON_TIME),
                            ("kimdan_4567_8902_scratch.ipynb", honest, (2026, 11, 29, 8, 0, 0)),
                            (f"parkeve_5678_9012_{A}.ipynb", empty, ON_TIME)])


def moodle_zip(path):
    """The second assignment as Moodle names it, with folders and without: on time, after the due date, two files, an
    empty file."""
    honest = json.dumps(definitions_only(SECOND))
    return write_zip(path, [(f"Alice Smith_101_assignsubmission_file_/{B}.ipynb", honest, ON_TIME),
                            (f"Bob Jones_102_assignsubmission_file_{B}.ipynb", honest, LATE),
                            (f"Dan Kim_104_assignsubmission_file_/{B}.ipynb", honest, ON_TIME),
                            ("Dan Kim_104_assignsubmission_file_/notes.ipynb", honest, (2026, 11, 29, 8, 0, 0)),
                            (f"Eve Park_105_assignsubmission_file_{B}.ipynb", "", ON_TIME)])


def recorded(course, name):
    """{student: (notes, info)} of collected.json under course/submitted/*/name/."""
    return {folder.parent.name: (record["notes"], record["info"])
            for folder in (course / "submitted").glob(f"*/{name}")
            for record in [json.loads((folder / "collected.json").read_text())]}


# ----- Fast: names and what collect records ---------------------------------------------------------------------

@pytest.mark.fast
@pytest.mark.parametrize("name, sender, user, own, late", [
    (f"smithalice_1234_5678_{C}.ipynb", "smithalice", "1234", f"{C}.ipynb", False),
    (f"smithalice_late_1234_5678_{C}-1.ipynb", "smithalice", "1234", f"{C}-1.ipynb", True),
    (f"smithalice_late_1234_5678_{C}/{C}.ipynb", f"smithalice_late_1234_5678_{C}", "1234", f"{C}.ipynb", True),
    (f"Alice Smith_123_assignsubmission_file_{C}.ipynb", "Alice Smith_123_assignsubmission_file_", "123",
     f"{C}.ipynb", None),
    (f"Alice Smith_123_assignsubmission_file_/Copy of {C}.ipynb", "Alice Smith_123_assignsubmission_file_", "123",
     f"Copy of {C}.ipynb", None),
    (f"alice_{C}.ipynb", "alice", "", f"{C}.ipynb", None)])
def test_lms_names_give_sender_number_own_file_name_and_late_mark(name, sender, user, own, late):
    """Canvas's `lastfirst[_late]_user_submission_file` and Moodle's two layouts are read field by field."""
    assert (source_of(name, C), lms_id(name), file_name(name), late_mark(name)) == (sender, user, own, late)


@pytest.mark.fast
def test_only_the_assignments_own_file_name_counts_as_no_rename():
    """<name>.ipynb and Canvas's <name>-1.ipynb are the assignment's notebook; a copy or another name is not."""
    assert is_assignment_file(f"smithalice_1234_5678_{C}.ipynb", C)
    assert is_assignment_file(f"smithalice_1234_5678_{C}-2.ipynb", C)
    assert not is_assignment_file(f"smithalice_1234_5678_Copy of {C}.ipynb", C)
    assert not is_assignment_file(f"alice_{C}-1.ipynb", C)  # not Canvas's renaming: the student's own name


@pytest.mark.fast
def test_canvas_download_notes_only_the_late_one_and_keeps_the_rest_as_also_noted(tmp_path):
    """Canvas names and its re-upload suffix need no one; its late mark does; a second file is information."""
    course = course_folder(tmp_path / "course")
    collect(canvas_zip(tmp_path / "canvas.zip"), course, A)
    found = recorded(course, A)
    assert sorted(found) == ["jonesbob", "kimdan", "leecarol", "parkeve", "smithalice"]
    assert {student for student, (notes, _) in found.items() if notes} == {"jonesbob"}
    assert "late" in found["jonesbob"][0][0]
    assert found["kimdan"][1] == ["also sent `kimdan_4567_8902_scratch.ipynb`: not graded"]
    assert all(not info for student, (_, info) in found.items() if student != "kimdan")
    lms = {student: json.loads((course / "submitted" / student / A / "collected.json").read_text())
           ["lms_id"] for student in found}
    assert lms["smithalice"] == "1234" and lms["jonesbob"] == "2345"


@pytest.mark.fast
def test_moodle_download_is_late_after_the_registrys_due_date(tmp_path):
    """Moodle's names carry no late mark: a file the zip dates after course.toml's `due` is noted late."""
    course = course_folder(tmp_path / "course")
    with_due(course, B)
    collect(moodle_zip(tmp_path / "moodle.zip"), course, B)
    found = recorded(course, B)
    assert sorted(found) == ["Alice-Smith_101", "Bob-Jones_102", "Dan-Kim_104", "Eve-Park_105"]
    assert {student for student, (notes, _) in found.items() if notes} == {"Bob-Jones_102"}
    assert "after the due date 2026-12-01 23:59" in found["Bob-Jones_102"][0][0]
    assert [info for info in found["Dan-Kim_104"][1]] == ["also sent `Dan Kim_104_assignsubmission_file_/notes.ipynb`: "
                                                          "not graded"]


@pytest.mark.fast
def test_without_a_due_date_nothing_is_late_and_canvas_extensions_are_canvas_own(tmp_path):
    """No `due`: no lateness from dates; a due date never overrides Canvas's own mark (it knows extensions)."""
    course = course_folder(tmp_path / "course")
    collect(moodle_zip(tmp_path / "moodle.zip"), course, B)
    assert not any(notes for notes, _ in recorded(course, B).values())
    with_due(course, A, "2026-11-01T00:00:00")  # every file is dated after it
    collect(canvas_zip(tmp_path / "canvas.zip"), course, A)
    assert {student for student, (notes, _) in recorded(course, A).items() if notes} == {"jonesbob"}


@pytest.mark.fast
@pytest.mark.parametrize("due", ['"tomorrow"', "2026-12-01T23:59:00Z", "12"])
def test_a_due_date_that_is_not_a_local_date_time_is_refused(tmp_path, due):
    """A due date in a form the download's clock cannot be compared with is a registry error, said as such."""
    course = course_folder(tmp_path / "course")
    with_due(course, C, due)
    with pytest.raises(RegistryError, match="due must be a local date-time"):
        assignment(C, course)


# ----- End to end: plain grade over the course, Canvas and Moodle downloads -------------------------------------

def run_grade(course, *more):
    unsandboxed = [] if sandbox.bwrap_version() else ["--sandbox", "none"]  # trusted notebooks: ours
    done = subprocess.run([sys.executable, "-m", "grading.grade", "--jobs", "2", "--course", str(course), *unsandboxed,
                           *more], cwd=ROOT, capture_output=True, text=True, timeout=GRADING_RUNAWAY)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture
def course(tmp_path):
    """A scratch course of the registered assignments with nothing collected yet, the second due 2026-12-01."""
    folder = scratch_course(tmp_path / "course")
    with_due(folder, B)
    return folder


@pytest.mark.full
@pytest.mark.grading
def test_plain_grade_with_nothing_collected_says_so_and_fails(course):
    """Nothing under submitted/ at all: an error naming where it looked, not a silent success."""
    code, output = run_grade(course)
    assert code != 0 and "no submissions under" in output and "make collect" in output


@pytest.mark.full
@pytest.mark.grading
def test_an_instructors_term_canvas_then_moodle_then_a_regrade(course, tmp_path):
    """One workflow, in order: the steps share the course's state as an instructor's term does."""
    # 1. One assignment collected (the first, from Canvas): plain grade grades it, names the others, exit 0.
    collect(canvas_zip(tmp_path / "canvas.zip"), course, A)
    code, output = run_grade(course)
    assert code == 0, output
    assert all(f"{name}: nothing to grade" in output for name in (a.name for a in assignments()[1:]))
    assert f"graded 5 submission(s) of {A}" in output
    text = (course / f"grading_report_{A}.md").read_text()
    assert set(report_sections(text)) == {"jonesbob", "parkeve"}, text
    assert "late" in report_sections(text)["jonesbob"] and "empty submission" in report_sections(text)["parkeve"]
    assert "not graded" in also_noted(text)["kimdan"]
    # 2. The second from Moodle: its report holds only the late file and the empty one.
    collect(moodle_zip(tmp_path / "moodle.zip"), course, B)
    code, output = run_grade(course, "--assignment", B)
    assert code == 0, output
    text = (course / f"grading_report_{B}.md").read_text()
    assert set(report_sections(text)) == {"Bob-Jones_102", "Eve-Park_105"}, text
    assert "after the due date" in report_sections(text)["Bob-Jones_102"]
    assert "not graded" in also_noted(text)["Dan-Kim_104"]
    # 3. A regrade with plain grade --student: that student's submissions only; everyone else's rows stay.
    before = csv_rows(course / "grades_by_task.csv")
    code, output = run_grade(course, "--student", "Bob-Jones_102")
    assert code == 0, output
    assert f"graded 1 submission(s) of {B}" in output and f"{A}: nothing to grade" in output
    assert csv_rows(course / "grades_by_task.csv") == before  # the same notebook scores the same
    assert "late" in report_sections((course / f"grading_report_{B}_Bob-Jones_102.md").read_text())["Bob-Jones_102"]
    code, output = run_grade(course, "--student", "nobody")
    assert code != 0 and "no submissions under" in output
