"""`make grade-slurm [ASSIGNMENT=A] SHARDS=N`: grade an assignment (or every one with submissions) as a Slurm job
array of N shards, then merge.

Writes build/grading/slurm/<assignment or "all">/shards.sh (the array: one task per shard, each `grade --shard /N`, its
index from SLURM_ARRAY_TASK_ID) and merge.sh (`grade --merge`), submits the array, then the merge with
`--dependency=afterany` on it, and prints how to follow both. The course folder (this checkout, its .venv and
submitted/) must be on a file system every node mounts at the same path: the tasks run this Python in this folder.
A task asks for what its grader may use at most: its --jobs CPUs, their memory caps and 1 GiB for the grader, and
the time that every submission of its shard would take at the grader's own wall-clock bound (the probe's backstop on
its total CPU limit), so Slurm never stops a task the grader itself would let run.
"""
import argparse
import math
import shlex
import subprocess
import sys
from pathlib import Path

from course.registry import assignments

from ..collect import discover
from ..folders import CODE_ROOT, Course
from ..sandbox.cpuclock import BACKSTOP
from ..sandbox.supervise import MAX_TOTAL
from ..shards import partition

GRADER_GIB = 1.0  # the grader's own process (judge, publish) beside its probes
SET_UP_SECONDS = 600  # a task's start: the reference's cases, the runtime, before the first submission


PUBLISH_SECONDS = 2  # per submission, for the merge (nbgrader's autograde and feedback: 0.35 s measured)


def shard_sizes(courses, shards):
    """Submissions each array task grades, over the courses' assignments."""
    split = [partition(discover(course.submitted, course.assignment), shards) for course in courses]
    return [sum(len(parts[index]) for parts in split) for index in range(shards)]


def task_limits(sizes, jobs, memory_gib):
    """(minutes, MiB) one array task may use: its largest shard at the grader's own bound per submission."""
    seconds = SET_UP_SECONDS + math.ceil(max(sizes) / jobs) * BACKSTOP * MAX_TOTAL
    return math.ceil(seconds / 60), math.ceil((jobs * memory_gib + GRADER_GIB) * 1024)


def grade_command(root, args, *more):
    """The `python -m grading.grade` line a task runs, with this run's options."""
    chosen = ["--assignment", args.assignment] if args.assignment else []
    return shlex.join([sys.executable, "-m", "grading.grade", "--course", str(root), *chosen, "--jobs",
                       str(args.jobs), "--memory", str(args.memory), "--scratch", str(args.scratch), "--sandbox",
                       args.sandbox, *more])


def batch_script(directives, command, code_root=CODE_ROOT):
    """A batch script: #SBATCH lines, then the command run from the checkout that holds grading/."""
    lines = ["#!/bin/sh"] + [f"#SBATCH {directive}" for directive in directives]
    return "\n".join(lines + ["set -e", f"cd {shlex.quote(str(code_root))}", f"exec {command}", ""])


def write_scripts(courses, args):
    """(shards.sh, merge.sh) under build/grading/slurm/<assignment or all>/."""
    name, root = args.assignment or "all", courses[0].root
    folder, results = courses[0].build / "slurm" / name, courses[0].build / "results"
    folder.mkdir(parents=True, exist_ok=True)
    sizes = shard_sizes(courses, args.shards)
    minutes, mebibytes = task_limits(sizes, args.jobs, args.memory)
    common = [f"--partition={args.partition}"] if args.partition else []
    shards = batch_script(common + [f"--job-name=grade-{name}", f"--array=0-{args.shards - 1}",
                                    f"--cpus-per-task={args.jobs}", f"--mem={mebibytes}M", f"--time={minutes}",
                                    f"--output={folder}/shard-%a.out"],
                          grade_command(root, args, "--shard", f"/{args.shards}", "--results", str(results)))
    merge_minutes = math.ceil((SET_UP_SECONDS + PUBLISH_SECONDS * sum(sizes)) / 60)
    merge = batch_script(common + [f"--job-name=merge-{name}", "--cpus-per-task=1",
                                   f"--mem={math.ceil(2 * GRADER_GIB * 1024)}M", f"--time={merge_minutes}",
                                   f"--output={folder}/merge.out"],
                         grade_command(root, args, "--merge", str(results)))
    (folder / "shards.sh").write_text(shards)
    (folder / "merge.sh").write_text(merge)
    return folder / "shards.sh", folder / "merge.sh"


def sbatch(*arguments):
    """Submit with sbatch; the job id."""
    done = subprocess.run(["sbatch", "--parsable", *map(str, arguments)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"grade-slurm: sbatch {' '.join(map(str, arguments))} failed: {done.stderr.strip()}")
    return done.stdout.strip().split(";")[0]


def follow_up(courses, array, merge, shards_script, merge_script, count):
    """What an instructor types next: follow the jobs, re-run a shard, merge again."""
    names, root = ", ".join(course.assignment for course in courses), courses[0].root
    return "\n".join([
        f"submitted: {count} shards of {names} as job array {array}, the merge as job {merge}",
        f"  follow:        squeue -j {array},{merge}     (when they have left the queue: sacct -j {array},{merge})",
        f"  a shard's log: {shards_script.parent}/shard-<I>.out; the merge's: {merge_script.parent}/merge.out",
        f"  re-run shard I (failed, or cancelled): sbatch --array=I {shards_script}",
        f"  then merge again:  sbatch {merge_script}",
        f"  results: {root}/grading_report_<assignment>.md, grades.csv, feedback/, exports/"])


def parse(argv):
    parser = argparse.ArgumentParser(description="Grade one assignment as a Slurm job array of shards, then merge.")
    parser.add_argument("--assignment", help="assignment of course.toml (default: every one with submissions)")
    parser.add_argument("--shards", type=int, required=True, help="array tasks, each grading one shard")
    parser.add_argument("--partition", default="", help="Slurm partition (default: the cluster's default)")
    parser.add_argument("--course", default=".", help="course folder, on a file system every node mounts")
    parser.add_argument("--jobs", type=int, default=1, help="submissions a task grades at once (its CPUs)")
    parser.add_argument("--memory", type=float, default=4.0, help="GiB of memory per submission (default 4)")
    parser.add_argument("--scratch", type=float, default=1.0, help="GiB of scratch disk per submission (default 1)")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto")
    parser.add_argument("--write-only", action="store_true", help="write the scripts, submit nothing")
    args = parser.parse_args(argv)
    if args.shards < 1 or args.jobs < 1:
        parser.error("--shards and --jobs take a whole number of at least 1")
    return args


def main(argv=None):
    args = parse(argv)
    names = [args.assignment] if args.assignment else [entry.name for entry in assignments(args.course)]
    courses = [course for course in (Course(Path(args.course), name) for name in names)
               if discover(course.submitted, course.assignment)]
    if not courses:
        sys.exit(f"grade-slurm: no submissions of {args.assignment or 'any assignment'} under submitted/: run "
                 "`make collect` first")
    shards_script, merge_script = write_scripts(courses, args)
    if args.write_only:
        print(f"wrote {shards_script} and {merge_script}")
        return
    array = sbatch(shards_script)
    merge = sbatch(f"--dependency=afterany:{array}", merge_script)
    print(follow_up(courses, array, merge, shards_script, merge_script, args.shards), flush=True)


if __name__ == "__main__":
    main()
