"""Grade the submissions of one assignment under submitted/: `make grade [ASSIGNMENT=name] [STUDENT=id] [JOBS=N]`.

`--assignment NAME` grades that assignment of course.toml; without it, every registered assignment that has
submissions, in release order, saying which have none (nothing at all to grade is an error).
`--student ID` regrades that one submission (without --assignment: that student's submission of each assignment)
and leaves everyone else's results as they were.

The stages, in order, each a package of grading/ with its entry point:
    collect.discover        the submission folders under submitted/ (put there by `make collect`)
    match.bounded           its notebook cut to what an honest one holds (bounds from the release): flagged if cut
    match.match_submission  its cells matched to the release: the program the probe runs
    sandbox.run_submission  the program run by the probe (grading/probe/) in the sandbox: its records
    judge.judge             the records compared with the reference's: one verdict per task, notes
    publish.write_graded    the graded notebook; then publish.publish, once: nbgrader's gradebook, feedback,
                            grades.csv, grades_by_task.csv, grading_report_<assignment>.md, exports/
One record per submission (grading.records.SubmissionRecord) is passed along, each stage filling its part.
One submission's trouble never stops the others; a line per finished submission shows the progress.

`--shard I/N --results DIR` grades the I-th of N shards of the submissions and saves their results in DIR instead of
publishing; `--merge DIR` publishes what the shards saved, as one run would have (grading/shards.py).
"""
import argparse
import shutil
import sys
import time
import traceback
from pathlib import Path

from course.registry import RegistryError, assignments

from .cases import build_cases, stand_ins
from .collect import discover
from .folders import Course
from .jobs import LoadSampler, Progress, grade_all, load_warning
from .judge import Result, judge, not_graded, prepare_judging, reference_namespace
from .match import UnreadableNotebook, bounded, match_submission, prepare_release, read, release_program
from .publish import LAYOUTS, grader_error, publish, write_graded
from .records import ProbeRun, SubmissionRecord
from .sandbox import SandboxUnavailable, choose_sandbox, prepare_runtime, run_submission
from .shards import (ShardError, merged_students, partition, read_manifests, restore, save_manifest, save_result,
                     shard_spec)


class UnpackFailed(UnreadableNotebook):
    """collect skipped every notebook the student sent (encrypted, corrupt, too large): a person must look."""


class Grading:
    """What every submission of one assignment is graded with, prepared once per run."""

    def __init__(self, course, box):
        self.course, self.box = course, box
        reference = reference_namespace(course.registered, course.source_notebook)
        cases = build_cases(reference, course.registered)
        self.release = prepare_release(course)
        checks = [task.check for task in course.registered.tasks.values()]
        hidden = stand_ins(course.registered.name, course.build / "stand-ins")
        self.runtime = prepare_runtime(course.build / "runtime", cases, checks, hidden)
        self.judging = prepare_judging(course, self.release.checks, reference, cases)
        self.caveats = [hidden.note] if hidden.covers and box.mode == "bwrap" else []  # in every student's feedback
        if hidden.covers and box.mode != "bwrap":
            print(f"WARNING: --sandbox none: {course.registered.name}'s scored data is not hidden from the notebooks "
                  "(only the bubblewrap sandbox covers it with stand-ins): a notebook can train on what it is scored "
                  "on.", file=sys.stderr)


def submission_notebook(submission):
    """The submission's notebook, read; raises UnreadableNotebook (UnpackFailed when collect skipped it)."""
    if submission.notebook:
        return read(submission.notebook)
    if any("was skipped:" in note for note in submission.notes):
        raise UnpackFailed("the notebook sent could not be unpacked (see the notes): ask the student for it, "
                           "or grade it by hand")
    raise UnreadableNotebook("no notebook was submitted")


def grade_one(submission, grading, slot):
    """Grade one submission and write its graded notebook; never raises."""
    started, record = time.monotonic(), SubmissionRecord(submission)
    try:
        notebook, record.cut = bounded(submission_notebook(submission), grading.release.notebook)  # before any other
        record.program, record.deviations = match_submission(notebook, grading.release)
        record.caveats = grading.caveats
        scratch = grading.course.build / "scratch" / submission.student
        record.run = run_submission(record.program, grading.runtime, scratch, grading.box, slot,
                                    grading.course.registered.limits.idle_seconds)
        verdicts, attention = judge(record.program, record.run, grading.judging, grading.release.layout)
    except Exception as failure:  # noqa: BLE001 -- unreadable, or a grader bug: the other submissions go on
        record.error, flag = failed(failure)
        record.program, record.run = release_program(grading.release), ProbeRun()  # feedback shows the release
        verdicts, attention = not_graded(grading.judging, record.error, flag), []
    record.result = Result(submission.student, verdicts, submission.notes + record.student_notes + attention,
                           error=record.error, limits=record.run.limits, info=submission.info)
    if record.cut:
        record.result.flag_all(record.cut)
    write_graded(grading.course, grading.release, record)
    record.result.seconds = time.monotonic() - started
    return record.result


def failed(failure):
    """(why the submission was not graded, why a person must look: '' if no one need) for an exception of its run."""
    if isinstance(failure, UnpackFailed):
        return str(failure), str(failure)
    if isinstance(failure, UnreadableNotebook):
        return str(failure), ""
    traceback.print_exc()
    return grader_error(failure), grader_error(failure)


def parse(argv):
    """The command line: --assignment, --student, --jobs, --course, --sandbox, --memory, --scratch, --exports."""
    parser = argparse.ArgumentParser(description="Grade the submissions of one assignment under submitted/.")
    parser.add_argument("--assignment", help="assignment of course.toml (default: the only one registered)")
    parser.add_argument("--student", help="regrade only this student's submission; the others' results stay")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    parser.add_argument("--course", default=".", help="course folder (default: here)")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto",
                        help="isolation of student code: bubblewrap (auto, bwrap; the default), or none "
                             "(student code runs unisolated: trusted notebooks only)")
    parser.add_argument("--memory", type=float, default=4.0, help="GiB of memory per submission (default 4)")
    parser.add_argument("--scratch", type=float, default=1.0, help="GiB of scratch disk per submission (default 1)")
    parser.add_argument("--exports", default=",".join(LAYOUTS),
                        help=f"LMS layouts written to exports/ (comma-separated of {', '.join(LAYOUTS)}; '' none)")
    parser.add_argument("--shard", help="grade only shard I of N (0-based) and save its results (--results): I/N, "
                                        "or /N with I from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX")
    parser.add_argument("--results", help="folder where --shard saves its results, for --merge")
    parser.add_argument("--merge", metavar="RESULTS", help="publish the results the shards saved in this folder")
    args = parser.parse_args(argv)
    try:
        args.shard = shard_spec(args.shard) if args.shard is not None else None
    except ShardError as error:
        parser.error(str(error))
    if args.shard and not args.results or args.results and not args.shard:
        parser.error("--shard and --results go together")
    if (args.shard or args.merge) and args.student or args.shard and args.merge:
        parser.error("--shard, --merge and --student each take a run of their own")
    return args


def setting_up(args):
    """([Course] to grade: the one named, else every registered one; sandbox; export layouts), or exit with why not."""
    if not (Path(args.course) / "nbgrader_config.py").is_file():
        sys.exit(f"grade: {Path(args.course).resolve()} has no nbgrader_config.py; run from the course folder")
    layouts = [layout for layout in args.exports.split(",") if layout]
    if set(layouts) - set(LAYOUTS):
        sys.exit(f"grade: --exports takes {', '.join(LAYOUTS)} (got {args.exports})")
    try:
        names = [args.assignment] if args.assignment else [entry.name for entry in assignments(args.course)]
        courses = [Course(args.course, name) for name in names]
        if args.merge:  # runs no student code: needs no sandbox
            return [course for course in courses if (Path(args.merge) / course.assignment).is_dir()], None, layouts
        box = choose_sandbox(args.sandbox, args.memory, args.scratch)
    except (RegistryError, SandboxUnavailable) as error:
        sys.exit(f"grade: {error}")
    print("\n".join(box.found), flush=True)
    if box.warning:
        print(f"\n{'!' * 100}\n{box.warning}\n{'!' * 100}\n", file=sys.stderr, flush=True)
    return courses, box, layouts


def waiting(course, student):
    """The submissions of the course's assignment to grade: every one, or the one of `student` ([] if none)."""
    submissions = discover(course.submitted, course.assignment)
    return [submission for submission in submissions if student is None or submission.student == student]


def nothing_to_grade(courses, student):
    """Why there is nothing to grade, with where submissions were looked for."""
    who = f"{student}/" if student is not None else "<student>/"
    where = ", ".join(f"{course.submitted}/{who}{course.assignment}/" for course in courses)
    return f"grade: no submissions under {where}; run `make collect ZIP=... ASSIGNMENT=...` first"


def clear_rendered(course, submissions, student):
    """Remove graded notebooks from an earlier run of these submissions (all the assignment's, without student)."""
    for submission in submissions:
        clear(course.build / "rendered" / submission.student / course.assignment)
    if student is None:
        for stale in course.build.glob(f"rendered/*/{course.assignment}"):
            clear(stale)


def clear(folder):
    shutil.rmtree(folder, ignore_errors=True)


def graded(course, submissions, box, args):
    """Grade the submissions and write their graded notebooks: (the release, their Results, the report's context)."""
    started = time.monotonic()
    clear_rendered(course, submissions, args.student)
    grading, jobs = Grading(course, box), max(1, args.jobs)
    if load_warning(jobs):
        print(load_warning(jobs), file=sys.stderr, flush=True)
    with LoadSampler() as load:
        results = grade_all(submissions, lambda submission, slot: grade_one(submission, grading, slot), jobs,
                            Progress(len(submissions)))
    context = {"jobs": jobs, "sandbox": box.warning or "; ".join(box.found), "seconds": time.monotonic() - started,
               "load": load.summary()}
    return grading.release, results, context


def grade_shard(course, submissions, box, args):
    """Grade this run's shard of the submissions in a build folder of its own; save each result, then the manifest."""
    (index, count), started = args.shard, time.monotonic()
    course.build = course.build / f"shard-{index}-of-{count}"  # shards may share the course folder, never a file
    mine, folder = partition(submissions, count)[index], Path(args.results) / course.assignment
    results, context = graded(course, mine, box, args)[1:] if mine else ([], {"jobs": args.jobs, "seconds": 0.0})
    for result in results:
        save_result(folder, result, course.build)
    save_manifest(folder, index, count, [result.student for result in results], context)
    print(f"graded shard {index}/{count} of {course.assignment}: {len(results)} submission(s) in "
          f"{time.monotonic() - started:.0f} s, saved in {folder}/", flush=True)


def merge_shards(course, layouts, args):
    """Publish what every shard saved for the assignment; exit 1 after publishing if a shard is missing."""
    folder = Path(args.merge) / course.assignment
    found, count, problems = read_manifests(folder)
    owners = merged_students(found)
    submissions = [s for s in discover(course.submitted, course.assignment) if s.student in owners]
    if len(submissions) != len(owners):
        raise ShardError(f"{sorted(set(owners) - {s.student for s in submissions})} were graded by a shard but "
                         f"have no folder under {course.submitted}/: merge on the course folder the shards graded")
    clear_rendered(course, [], None)
    results = [restore(folder, student, course.build) for student in sorted(owners)]
    contexts = [manifest["context"] for manifest in found.values()]
    context = {"jobs": sum(c["jobs"] for c in contexts), "sandbox": next((c["sandbox"] for c in contexts
               if "sandbox" in c), ""), "seconds": max(c["seconds"] for c in contexts), "problems": problems}
    problems += publish(course, prepare_release(course), submissions, results, context, None, layouts)
    print(f"merged {len(found)} of {count} shard(s) of {course.assignment}: {len(results)} submission(s)"
          + "".join(f"\nPROBLEM: {p}" for p in problems), flush=True)
    return problems


def grade_assignment(course, submissions, box, layouts, args):
    """Grade one assignment's submissions, then write its gradebook entries, feedback, CSV rows, report and exports."""
    if args.shard:
        return grade_shard(course, submissions, box, args)
    started = time.monotonic()
    release, results, context = graded(course, submissions, box, args)
    problems = publish(course, release, submissions, results, context, args.student, layouts)
    print(f"graded {len(results)} submission(s) of {course.assignment} in {time.monotonic() - started:.0f} s: "
          f"grades.csv, grades_by_task.csv, grading_report_{course.assignment}"
          f"{'_' + args.student if args.student else ''}.md, {course.feedback.name}/, exports/"
          + "".join(f"\nPROBLEM: {p}" for p in problems), flush=True)


def main(argv=None):
    """Grade every chosen assignment that has submissions, one after another; say which have none."""
    args = parse(argv)
    sys.stdout.reconfigure(errors="replace")  # student ids of any script print on any terminal
    courses, box, layouts = setting_up(args)
    if args.merge:
        if not courses:
            sys.exit(f"grade: {args.merge} holds no results of {args.assignment or 'any registered assignment'}")
        try:
            problems = [problem for course in courses for problem in merge_shards(course, layouts, args)]
        except ShardError as error:
            sys.exit(f"grade: {error}")
        sys.exit(1 if problems else 0)
    found = [(course, waiting(course, args.student)) for course in courses]
    if not any(submissions for _, submissions in found):
        sys.exit(nothing_to_grade(courses, args.student))
    for course, submissions in found:
        if submissions:
            grade_assignment(course, submissions, box, layouts, args)
        else:
            print(f"{course.assignment}: nothing to grade (no submissions under {course.submitted}/"
                  f"{args.student or '<student>'}/{course.assignment}/)", flush=True)


if __name__ == "__main__":
    main()
