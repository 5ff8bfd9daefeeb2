"""What every cluster engine is given: the courses with submissions, each shard's size, a task's limits, the command.

The engines' writers (slurm.py, k8s.py) turn this into their own files; the command a shard runs and its limits are
the same on both, and they are `make grade`'s own.
"""
import math
from pathlib import Path

from course.registry import assignments

from ..collect import discover
from ..folders import Course
from ..sandbox.cpuclock import BACKSTOP
from ..sandbox.supervise import MAX_TOTAL
from ..shards import partition

GRADER_GIB = 1.0  # the grader's own process (judge, publish) beside its probes
SET_UP_SECONDS = 600  # a task's start: the reference's cases, the runtime, before the first submission
PUBLISH_SECONDS = 2  # per submission, for the merge (nbgrader's autograde and feedback: 0.35 s measured)


def common_options(parser):
    """The options every engine's command takes: which submissions, how many shards, each shard's limits."""
    parser.add_argument("--assignment", help="assignment of course.toml (default: every one with submissions)")
    parser.add_argument("--shards", type=int, required=True, help="tasks, each grading one shard")
    parser.add_argument("--course", default=".", help="course folder, on storage every task mounts")
    parser.add_argument("--jobs", type=int, default=1, help="submissions a task grades at once (its CPUs)")
    parser.add_argument("--memory", type=float, default=4.0, help="GiB of memory per submission (default 4)")
    parser.add_argument("--scratch", type=float, default=1.0, help="GiB of scratch disk per submission (default 1)")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto")
    parser.add_argument("--write-only", action="store_true", help="write the files, submit nothing")


def checked(parser, argv):
    args = parser.parse_args(argv)
    if args.shards < 1 or args.jobs < 1:
        parser.error("--shards and --jobs take a whole number of at least 1")
    return args


def courses_to_grade(args, command):
    """The Course of every assignment asked for that has submissions; exits saying why when none has."""
    names = [args.assignment] if args.assignment else [entry.name for entry in assignments(args.course)]
    courses = [course for course in (Course(Path(args.course), name) for name in names)
               if discover(course.submitted, course.assignment)]
    if not courses:
        raise SystemExit(f"{command}: no submissions of {args.assignment or 'any assignment'} under submitted/: "
                         "run `make collect` first")
    return courses


def shard_sizes(courses, shards):
    """Submissions each task grades, over the courses' assignments."""
    split = [partition(discover(course.submitted, course.assignment), shards) for course in courses]
    return [sum(len(parts[index]) for parts in split) for index in range(shards)]


def task_limits(sizes, jobs, memory_gib):
    """(seconds, MiB) one task may use: its largest shard at the grader's own bound per submission."""
    seconds = SET_UP_SECONDS + math.ceil(max(sizes) / jobs) * BACKSTOP * MAX_TOTAL
    return seconds, math.ceil((jobs * memory_gib + GRADER_GIB) * 1024)


def merge_limits(sizes):
    """(seconds, MiB) the merge may use: set-up, then publishing every submission."""
    return SET_UP_SECONDS + PUBLISH_SECONDS * sum(sizes), math.ceil(2 * GRADER_GIB * 1024)


def grade_argv(python, root, args, *more):
    """The `python -m grading.grade` argument list a task runs, with this run's options."""
    chosen = ["--assignment", args.assignment] if args.assignment else []
    return [python, "-m", "grading.grade", "--course", str(root), *chosen, "--jobs", str(args.jobs), "--memory",
            str(args.memory), "--scratch", str(args.scratch), "--sandbox", args.sandbox, *more]
