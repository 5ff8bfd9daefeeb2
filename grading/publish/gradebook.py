"""nbgrader's part: register the assignment, autograde the rendered notebooks, feedback, export.

Nothing here executes student code: `autograde --no-execute` takes the rendered notebooks (whose
check cells already hold the verdicts) as they are, and each grade's auto_score is then set to
the authoritative score through nbgrader's Gradebook API, so `nbgrader export`, the formgrader
and the feedback all show the same numbers.

The nbgrader commands run in this process, as nbgrader's own tests run them (its application, given the command
line `nbgrader` would get): importing nbgrader takes about 2 s, once per grading run instead of once per command.
A new gradebook.db is stamped with nbgrader's newest migration, read here from its migration scripts: nbgrader itself
starts `alembic heads` for it, a second Python process that took 1.9 s (the same answer: tests/test_grading_stages.py).
"""
import contextlib
import io
import os
import sys
import warnings

from alembic.script import ScriptDirectory
from jupyter_core.application import NoStart
from nbgrader import api as nbgrader_api
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.apps import NbGraderApp
from nbgrader.dbutil import ALEMBIC_DIR


def newest_migration():
    """The revision nbgrader stamps a new gradebook.db with: the head of its own alembic migrations."""
    (head,) = ScriptDirectory(ALEMBIC_DIR).get_heads()
    return head


nbgrader_api.get_alembic_version = newest_migration  # what nbgrader.api's Gradebook calls for a new database


class NbgraderFailed(Exception):
    """An nbgrader command failed; the message holds its last lines of output."""


def nbgrader(course, *arguments, check=True):
    """Run one nbgrader command in the course folder, as `nbgrader` started there would (it reads the folder's
    nbgrader_config.py; relative paths are the folder's). Publishing runs once every submission's job has ended.

    check=False returns (ok, last lines of output) instead of raising: nbgrader processes every
    student and fails at the end if any one failed, so the caller finds out who and goes on.
    """
    output, ok = io.StringIO(), False
    app = NbGraderApp.instance()
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output), in_course(course), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes on every autograde: not ours to fix
            app.initialize([*arguments, "--log-level=WARN"])
            app.start()
    except NoStart:  # what the application raises once its subcommand has run
        ok = True
    except SystemExit as exit:  # a command that failed exits 1 after logging why
        ok = exit.code in (0, None)
    except Exception as error:  # noqa: BLE001 -- nbgrader's own bug: the caller reports it like a failed command
        output.write(f"{type(error).__name__}: {error}")
    finally:
        app.reset()
        NbGraderApp.clear_instance()
    tail = "\n".join(output.getvalue().strip().splitlines()[-8:])
    if not check:
        return ok, tail
    if not ok:
        raise NbgraderFailed(f"`nbgrader {' '.join(arguments)}` failed:\n{tail}")
    return ok, tail


@contextlib.contextmanager
def in_course(course):
    """The course folder as the working directory, and this environment's scripts first on PATH (nbgrader's database
    commands run `alembic` from PATH), for one command; sys.path as it was after it (nbgrader adds the working
    directory)."""
    folder, path, search = os.getcwd(), os.environ.get("PATH", ""), list(sys.path)
    os.chdir(course.root)
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), path])
    try:
        yield
    finally:
        os.chdir(folder)
        os.environ["PATH"] = path
        sys.path[:] = search


def register_assignment(course):
    """Put the assignment, its notebook and grade cells in gradebook.db (the release goes to build/, not notebooks/)."""
    release = course.build / "release"
    nbgrader(course, "generate_assignment", course.assignment, "--force",
             f"--CourseDirectory.release_directory={release.relative_to(course.root)}")


def autograde(course, rendered, student=None):
    """Autograde the rendered notebooks (or one student's) without executing them; (ok, output tail)."""
    only = [f"--student={student}"] if student else []
    return nbgrader(course, "autograde", course.assignment, "--no-execute", "--force", *only,
                    f"--CourseDirectory.submitted_directory={rendered.relative_to(course.root)}", check=False)


def graded_students(course, students):
    """The students autograde went through for: their autograded notebook exists (nbgrader removes a failed one)
    and the gradebook holds its grades."""
    found = set()
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gradebook:
        for student in students:
            if not (course.autograded / student / course.assignment / f"{course.assignment}.ipynb").is_file():
                continue
            try:
                first = min(course.registered.tasks)
                gradebook.find_grade(f"check_task_{first}", course.assignment, course.assignment, student)
            except MissingEntry:
                continue
            found.add(student)
    return found


def set_scores(course, verdicts_by_student):
    """Each check cell's auto_score := the grader's score, flagged for manual grading when the grader says so.

    Returns the students not in the gradebook.
    """
    missing = []
    notebook = course.assignment
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gradebook:
        for student, verdicts in verdicts_by_student.items():
            for task, verdict in verdicts.items():
                try:
                    grade = gradebook.find_grade(f"check_task_{task}", notebook, course.assignment, student)
                except MissingEntry:
                    missing.append(student)
                    break
                grade.auto_score, grade.needs_manual_grade = verdict.score, bool(verdict.flag)
        gradebook.db.commit()
    return missing


def task_scores(course, students):
    """[(student, task, score, max_score)] as the gradebook now holds them."""
    rows = []
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gradebook:
        for student in students:
            try:
                submission = gradebook.find_submission_notebook(course.assignment, course.assignment, student)
            except MissingEntry:
                continue
            for grade in sorted(submission.grades, key=lambda grade: grade.name):
                rows.append((student, int(grade.name.rsplit("_", 1)[1]), grade.score, grade.max_score))
    return rows


def all_scores(course):
    """{student: {assignment: score}} of every assignment the gradebook holds (what the LMS exports show)."""
    scores = {}
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gradebook:
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                scores.setdefault(submission.student.id, {})[assignment.name] = submission.score
    return scores


def feedback(course, student=None):
    """Feedback HTML for every autograded notebook (or one student's); (ok, output tail)."""
    only = [f"--student={student}"] if student else []
    return nbgrader(course, "generate_feedback", course.assignment, "--force", *only, check=False)


def feedback_page(course, student):
    return course.feedback / student / course.assignment / f"{course.assignment}.html"


def export(course, path):
    """nbgrader's own CSV of every assignment in the gradebook (one row per student and assignment)."""
    nbgrader(course, "export", f"--to={path}")  # relative to the course folder, as the command's working directory
