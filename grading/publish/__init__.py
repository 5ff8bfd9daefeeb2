"""Stage 4, publishing: verdicts -> the graded notebook, nbgrader's gradebook and feedback, the CSVs and reports.

Entry points: `write_graded` for each submission (its rendered notebook, render.py) and `publish` once per run:
nbgrader registers the assignment, autogrades the rendered notebooks without executing them and takes the
grader's scores (gradebook.py); then feedback, grades.csv, grades_by_task.csv and the report (report.py), the
LMS exports (exports.py) and the class's record for `make report` (class_record.py). With `student`, only that
student's entries are touched (a regrade).
"""
import json
import shutil
import traceback

from course import registry

from ..match import release_program
from ..text import encodable
from .class_record import write_class_record
from .exports import LAYOUTS, write_exports
from .render import render
from .report import report_path, write_report, write_task_scores

__all__ = ["LAYOUTS", "grader_error", "publish", "write_graded"]


def grader_error(error):
    """The sentence a student and the report see for a bug of the grader's own."""
    return (f"GRADER ERROR ({type(error).__name__}: {encodable(str(error))[:300]}): the course staff will grade it "
            "by hand")


def write_graded(course, release, record):
    """Render and write one submission's graded notebook; a notebook that cannot be rendered gets a minimal one.

    Args:
        release: the run's Release (grading.match).
        record: the submission's SubmissionRecord (grading.records), judged: what ran (program), its outputs
            (run.cells; {}: nothing ran), the notes the student sees; its Result's notes grow with what happens here.
    """
    submission, graded = record.submission, record.result
    try:
        notebook = render(release.notebook, record.program, record.run.cells, graded.verdicts,
                          record.student_notes + record.caveats)
        if any(cell.get("id") == "grader-left-out" for cell in notebook["cells"]):
            graded.notes.append("the notebook's code and outputs are too large to show whole: the feedback leaves "
                                "out some of the cells the student added")
        write_rendered(course, submission, notebook)
    except Exception as error:  # noqa: BLE001 -- whatever the outputs hold, this student alone is affected
        traceback.print_exc()
        write_minimal(course, release, submission, graded, f"{grader_error(error)} (rendering the graded notebook)")


def write_minimal(course, release, submission, graded, reason):
    """The release notebook with the verdicts and no student text, for a notebook that could not be rendered."""
    graded.notes.append(reason)
    graded.flag_all(reason)
    notebook = render(release.notebook, release_program(release), {}, graded.verdicts, [reason])
    write_rendered(course, submission, notebook)


# What nbgrader's exchange keeps beside a submission and carries on to its feedback: the time it was submitted, and the
# secret that names the student's feedback page in the exchange (`nbgrader release_feedback` needs both).
CARRIED = ("timestamp.txt", "submission_secret.txt")


def write_rendered(course, submission, notebook):
    """build/grading/rendered/<student>/<assignment>/<assignment>.ipynb, and the submission's CARRIED files."""
    folder = course.build / "rendered" / submission.student / course.assignment
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{course.assignment}.ipynb").write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    for name in CARRIED:
        if (submission.folder / name).is_file():
            shutil.copy(submission.folder / name, folder / name)


def publish(course, release, submissions, results, context, student=None, layouts=LAYOUTS):
    """nbgrader's part, the CSV files, the report and the LMS exports; returns run-level problems.

    nbgrader goes through every student and fails at the end if one failed: a student it could not
    autograde gets a minimal notebook (the release with the verdicts, no student text) graded instead,
    flagged for manual grading, and a missing feedback page is noted; the others are unaffected.

    Args:
        context: "jobs", "sandbox", "seconds" for the report; student: only this student was graded (a regrade).
    """
    from . import gradebook  # here, not above: nbgrader takes 0.8 s to import, and a shard never publishes
    problems = into_gradebook(course, release, submissions, results, student)
    problems += write_tables(course, results, student)
    order = [assignment.name for assignment in registry.assignments(course.root)]
    write_exports(course.root / "exports", gradebook.all_scores(course), course.submitted, layouts, order)
    write_report(report_path(course.root, course.assignment, student), course.assignment, results,
                 dict(context, problems=context.get("problems", []) + problems))
    write_class_record(course.root, course.assignment, results)
    return problems


def into_gradebook(course, release, submissions, results, student):
    """Register, autograde (retrying a failed student with a minimal notebook), set the scores, write feedback."""
    from . import gradebook
    gradebook.register_assignment(course)
    by_student = {submission.student: submission for submission in submissions}
    gradebook.autograde(course, course.build / "rendered", student)
    graded = gradebook.graded_students(course, [result.student for result in results])
    for result in results:
        if result.student not in graded:
            write_minimal(course, release, by_student[result.student], result, "nbgrader could not autograde the "
                          "graded notebook: a minimal one (verdicts only) was used; check the submission by hand")
            gradebook.autograde(course, course.build / "rendered", result.student)
    missing = gradebook.set_scores(course, {result.student: result.verdicts for result in results})
    gradebook.feedback(course, student)
    for result in results:
        if result.student not in missing and not gradebook.feedback_page(course, result.student).is_file():
            result.notes.append("nbgrader could not write the feedback page: send the student their grade by hand")
    return [f"{name} is missing from the gradebook (nbgrader autograde failed for it): grade it by hand"
            for name in missing]


def write_tables(course, results, student):
    """grades.csv (nbgrader's export, every assignment) and this run's rows merged into grades_by_task.csv."""
    from . import gradebook
    problems = []
    try:
        gradebook.export(course, "grades.csv")
    except gradebook.NbgraderFailed as error:
        problems.append(f"grades.csv could not be written: {error}")
    rows = gradebook.task_scores(course, [result.student for result in results])
    diagnoses = {(result.student, task): verdict.diagnosis for result in results
                 for task, verdict in result.verdicts.items() if verdict.diagnosis}
    write_task_scores(course.root / "grades_by_task.csv", course.assignment, rows, {student} if student else None,
                      diagnoses)
    mine = {(result.student, task): verdict.score for result in results for task, verdict in result.verdicts.items()}
    if any(mine.get((name, task)) != score for name, task, score, _ in rows):
        problems.append("the gradebook disagrees with the grader's scores: see grades_by_task.csv")
    return problems
