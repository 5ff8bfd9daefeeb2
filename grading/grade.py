"""Grade every submission of one assignment under submitted/: `make grade` (JOBS=N grades N submissions at once).

`--assignment NAME` names an assignment of course.toml; without it, the only one registered (with several
registered, grade asks for a name; `make grade` without ASSIGNMENT runs this once per registered assignment).

For each submission: match its cells to the release (grading/program.py), run them in a sandboxed
probe that records what the student's objects produce on fixed inputs (grading/probe.py), score
those records against the reference in this process, which never runs student code
(grading/score.py), and render the graded notebook (grading/render.py). Then nbgrader registers the
assignment, autogrades the rendered notebooks without executing them, takes the authoritative
scores, writes feedback/ and grades.csv (grading/gradebook.py). Also writes grades_by_task.csv and
grading_report.md. One submission's trouble never stops the others.
"""
import argparse
import json
import queue
import shutil
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from course.registry import RegistryError

from . import gradebook, sandbox
from .analysis import attention_notes, first_cells
from .cases import build_cases
from .course import Course
from .expected import expected_records, reference_namespace
from .notebook import UnreadableNotebook, check_cells, read, release_layout
from .program import build_program
from .render import render
from .report import write_report, write_task_scores
from .runtime import prepare_runtime
from .score import Verdict, score_submission
from .submissions import discover
from .supervise import STOPPED, Job, run_probe
from .text import encodable


@dataclass
class Shared:
    """What every submission is graded against, prepared once per run."""

    course: Course
    box: sandbox.Sandbox
    release: dict
    layout: list
    reference: dict
    cases: dict
    expected: dict
    points: dict
    runtime: Path


@dataclass
class Result:
    """One submission's grade."""

    student: str
    verdicts: dict
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def score(self):
        return sum(verdict.score for verdict in self.verdicts.values())

    @property
    def max_score(self):
        return sum(verdict.points for verdict in self.verdicts.values())

    @property
    def flags(self):
        """{task: why a person must look at it} (nbgrader's needs_manual_grade is set for these)."""
        return {task: verdict.flag for task, verdict in self.verdicts.items() if verdict.flag}

    def flag_all(self, reason):
        for verdict in self.verdicts.values():
            verdict.flag = verdict.flag or reason


def prepare(course, box):
    """Reference, cases, expected values and the probes' runtime folder."""
    release = read(course.release_notebook)
    layout = release_layout(release)
    checks = check_cells(layout)
    reference = reference_namespace(course.registered, course.source_notebook)
    cases = build_cases(reference, course.registered)
    expected = expected_records(cases, reference, {task: cell.names for task, cell in checks.items()})
    runtime = prepare_runtime(course.build / "runtime", cases)
    return Shared(course, box, release, layout, reference, cases, expected,
                  {task: cell.points for task, cell in checks.items()}, runtime)


def not_graded(shared, reason, flag=""):
    return {task: Verdict(task, points, 0.0, f"Task {task} was not graded: {reason}.", flag=flag)
            for task, points in shared.points.items()}


UNREADABLE = ("Task {task} could not be judged: its check cell ran, but the records of its tests could not be "
              "read (a tensor subclass, or a file the notebook wrote over).")


def unreadable_records(program, run, verdicts):
    """A task whose check cell ran but whose records did not load scores 0 and is flagged, not 'never reached'."""
    stopped = {ename for ename, _ in STOPPED.values()}
    for index, cell in enumerate(program):
        output = run.cells.get(index)
        failure = (output or {}).get("error") if isinstance(output, dict) else None
        if cell.kind != "check" or output is None or cell.task in run.records:
            continue
        if isinstance(failure, dict) and failure.get("ename") in stopped:
            continue
        verdict = verdicts[cell.task]
        verdict.score, verdict.message = 0.0, UNREADABLE.format(task=cell.task)
        verdict.flag = "its records could not be read: possible tampering (a tensor subclass or a forged file)"


def tampering_flags(program, run, verdicts):
    """Every task checked after a cell that replaced torch's comparisons or the checkers is flagged."""
    replaced = first_cells(program, run.cells, "tampered")
    if not replaced:
        return
    first = min(replaced.values())
    names = ", ".join(sorted(replaced)[:3])
    for index, cell in enumerate(program):
        if cell.kind == "check" and index > first:
            verdicts[cell.task].flag = verdicts[cell.task].flag or f"tampering: the notebook replaced {names}"


def probe_and_score(submission, notebook, shared, slot):
    """(program, probe run, verdicts, deviations) of a readable submission."""
    program, deviations = build_program(notebook, shared.layout, shared.course.limit_for)
    scratch = shared.course.build / "scratch" / submission.student
    run = run_probe(Job(program, scratch, shared.runtime, shared.box, slot))
    verdicts = score_submission(shared.cases, shared.expected, run.records, shared.points, shared.reference)
    unreadable_records(program, run, verdicts)
    tampering_flags(program, run, verdicts)
    probe_failures(run, verdicts)
    return program, run, verdicts, deviations


class UnpackFailed(UnreadableNotebook):
    """collect skipped every notebook the student sent (encrypted, corrupt, too large): a person must look."""


def probe_failures(run, verdicts):
    """Tasks never reached because the probe itself stopped outside any cell are flagged: nothing judged them."""
    if any(note.startswith("the probe stopped outside any cell") for note in run.notes):
        for task, verdict in verdicts.items():
            if task not in run.records:
                verdict.flag = verdict.flag or "the probe stopped outside any cell before this task: check by hand"


def grader_error(error):
    return (f"GRADER ERROR ({type(error).__name__}: {encodable(str(error))[:300]}): the course staff will grade it "
            "by hand")


def grade_one(submission, shared, slot):
    """Grade one submission and write its rendered notebook; never raises."""
    started, notes = time.monotonic(), list(submission.notes)
    try:
        notebook = read(submission.notebook) if submission.notebook else None
        if notebook is None and any("was skipped:" in note for note in notes):
            raise UnpackFailed("the notebook sent could not be unpacked (see the notes): ask the student for it, "
                               "or grade it by hand")
        if notebook is None:
            raise UnreadableNotebook("no notebook was submitted")
        program, run, verdicts, deviations = probe_and_score(submission, notebook, shared, slot)
        student_notes = deviations + run.notes
        notes += student_notes + attention_notes(program, shared.layout, run.cells, verdicts)
    except Exception as error:  # noqa: BLE001 -- unreadable, or a grader bug: the other submissions go on
        flag = str(error) if isinstance(error, UnpackFailed) else ""
        if not isinstance(error, UnreadableNotebook):
            traceback.print_exc()
            error = flag = grader_error(error)
        program, _ = build_program(shared.release, shared.layout, shared.course.limit_for)
        run, verdicts, student_notes = None, not_graded(shared, str(error), flag), [str(error)]
        notes.append(str(error))
    result = Result(submission.student, verdicts, notes)
    try:
        notebook = render(shared.release, program, run.cells if run else {}, verdicts, student_notes)
        if any(cell.get("id") == "grader-left-out" for cell in notebook["cells"]):
            result.notes.append("the notebook's code and outputs are too large to show whole: the feedback leaves "
                                "out some of the cells the student added")
        write_rendered(shared, submission, notebook)
    except Exception as error:  # noqa: BLE001 -- whatever the outputs hold, this student alone is affected
        traceback.print_exc()
        write_minimal(shared, submission, result, f"{grader_error(error)} (rendering the graded notebook)")
    result.seconds = time.monotonic() - started
    return result


def write_minimal(shared, submission, result, reason):
    """The release notebook with the verdicts and no student text, for a notebook that could not be rendered."""
    result.notes.append(reason)
    result.flag_all(reason)
    program, _ = build_program(shared.release, shared.layout, shared.course.limit_for)
    write_rendered(shared, submission, render(shared.release, program, {}, result.verdicts, [reason]))


def write_rendered(shared, submission, notebook):
    folder = shared.course.build / "rendered" / submission.student / shared.course.assignment
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{shared.course.assignment}.ipynb").write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    if (submission.folder / "timestamp.txt").is_file():
        shutil.copy(submission.folder / "timestamp.txt", folder / "timestamp.txt")


def grade_all(submissions, shared, jobs):
    """Grade submissions jobs at a time, longest (the ones that train) first; results in student order."""
    slots, (leased, locks) = queue.Queue(), sandbox.lease_slots(jobs)
    for slot in leased:  # uids no other grading run on this machine uses while this one runs
        slots.put(slot)

    def task(submission):
        """Grade one submission on a free slot (its probe's uid)."""
        slot = slots.get()
        try:
            result = grade_one(submission, shared, slot)
        finally:
            slots.put(slot)
        print(f"graded {result.student}: {result.score:g}/{result.max_score:g} in {result.seconds:.0f} s", flush=True)
        return result

    ordered = sorted(submissions, key=lambda s: -training_cells(s))
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(task, ordered))
    finally:
        for lock in locks:
            lock.close()
    return sorted(results, key=lambda result: result.student)


def training_cells(submission):
    """How many cells of the submission call train(...): a cheap guess of how long its probe takes."""
    try:
        return submission.notebook.read_text(errors="replace").count("train(") if submission.notebook else 0
    except OSError:
        return 0


def publish(shared, submissions, results):
    """nbgrader's part (gradebook, feedback, grades.csv) and grades_by_task.csv; returns run-level problems.

    nbgrader goes through every student and fails at the end if one failed: a student it could not
    autograde gets a minimal notebook (the release with the verdicts, no student text) graded instead,
    flagged for manual grading, and a missing feedback page is noted; the others are unaffected.
    """
    course, problems = shared.course, []
    gradebook.register_assignment(course)
    students = [result.student for result in results]
    by_student = {submission.student: submission for submission in submissions}
    gradebook.autograde(course, course.build / "rendered")
    graded = gradebook.graded_students(course, students)
    for result in results:
        if result.student not in graded:
            retry_autograde(shared, by_student[result.student], result)
    missing = gradebook.set_scores(course, {result.student: result.verdicts for result in results})
    ok, tail = gradebook.feedback(course)
    for result in results:
        if result.student not in missing and not gradebook.feedback_page(course, result.student).is_file():
            result.notes.append("nbgrader could not write the feedback page: send the student their grade by hand")
    try:
        gradebook.export(course, "grades.csv")
    except gradebook.NbgraderFailed as error:
        problems.append(f"grades.csv could not be written: {error}")
    rows = gradebook.task_scores(course, students)
    write_task_scores(course.root / "grades_by_task.csv", course.assignment, rows)
    problems += [f"{student} is missing from the gradebook (nbgrader autograde failed for it): grade it by hand"
                 for student in missing]
    mine = {(r.student, task): v.score for r in results for task, v in r.verdicts.items()}
    if any(mine.get((student, task)) != score for student, task, score, _ in rows):
        problems.append("the gradebook disagrees with the grader's scores: see grades_by_task.csv")
    return problems


def retry_autograde(shared, submission, result):
    """Autograde a minimal notebook for a student whose rendered notebook nbgrader could not take."""
    write_minimal(shared, submission, result, "nbgrader could not autograde the graded notebook: a minimal one "
                                              "(verdicts only) was used; check the submission by hand")
    gradebook.autograde(shared.course, shared.course.build / "rendered", result.student)


def parse(argv):
    """The command line: --assignment, --jobs, --course, --sandbox, --memory, --scratch."""
    parser = argparse.ArgumentParser(description="Grade every submission of one assignment under submitted/.")
    parser.add_argument("--assignment", help="assignment of course.toml (default: the only one registered)")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    parser.add_argument("--course", default=".", help="course folder (default: here)")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto",
                        help="isolation of student code: bubblewrap (auto, bwrap; the default), or none "
                             "(student code runs unisolated: trusted notebooks only)")
    parser.add_argument("--memory", type=float, default=4.0, help="GiB of memory per submission (default 4)")
    parser.add_argument("--scratch", type=float, default=1.0, help="GiB of scratch disk per submission (default 1)")
    return parser.parse_args(argv)


def main(argv=None):
    """Grade everything under submitted/, then write the gradebook, feedback, CSV files and the report."""
    args = parse(argv)
    sys.stdout.reconfigure(errors="replace")  # student ids of any script print on any terminal
    if not (Path(args.course) / "nbgrader_config.py").is_file():
        sys.exit(f"grade: {Path(args.course).resolve()} has no nbgrader_config.py; run from the course folder")
    try:
        started, course = time.monotonic(), Course(args.course, args.assignment)
    except RegistryError as error:
        sys.exit(f"grade: {error}")
    try:
        box = sandbox.choose(args.sandbox, args.memory, args.scratch)
    except sandbox.SandboxUnavailable as error:
        sys.exit(f"grade: {error}")
    print("\n".join(box.found), flush=True)
    if box.warning:
        print(f"\n{'!' * 100}\n{box.warning}\n{'!' * 100}\n", file=sys.stderr, flush=True)
    submissions = discover(course.submitted, course.assignment)
    if not submissions:
        sys.exit(f"grade: no submissions under {course.submitted}/<student>/{course.assignment}/; "
                 "run `make collect ZIP=...` first")
    shutil.rmtree(course.build / "rendered", ignore_errors=True)
    shared = prepare(course, box)
    results = grade_all(submissions, shared, max(1, args.jobs))
    problems = publish(shared, submissions, results)
    context = {"jobs": max(1, args.jobs), "sandbox": box.warning or "; ".join(box.found),
               "seconds": time.monotonic() - started, "problems": problems}
    write_report(course.root / "grading_report.md", course.assignment, results, context)
    print(f"graded {len(results)} submission(s) in {context['seconds']:.0f} s: grades.csv, grades_by_task.csv, "
          f"grading_report.md, {course.feedback.name}/" + "".join(f"\nPROBLEM: {p}" for p in problems))


if __name__ == "__main__":
    main()
