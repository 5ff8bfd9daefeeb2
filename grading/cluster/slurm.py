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

from ..folders import CODE_ROOT
from .plan import checked, common_options, courses_to_grade, grade_argv, merge_limits, shard_sizes, task_limits


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
    seconds, mebibytes = task_limits(sizes, args.jobs, args.memory)
    common = [f"--partition={args.partition}"] if args.partition else []
    shards = batch_script(common + [f"--job-name=grade-{name}", f"--array=0-{args.shards - 1}",
                                    f"--cpus-per-task={args.jobs}", f"--mem={mebibytes}M",
                                    f"--time={math.ceil(seconds / 60)}", f"--output={folder}/shard-%a.out"],
                          shlex.join(grade_argv(sys.executable, root, args, "--shard", f"/{args.shards}",
                                                "--results", str(results))))
    merge_seconds, merge_mebibytes = merge_limits(sizes)
    merge = batch_script(common + [f"--job-name=merge-{name}", "--cpus-per-task=1", f"--mem={merge_mebibytes}M",
                                   f"--time={math.ceil(merge_seconds / 60)}", f"--output={folder}/merge.out"],
                         shlex.join(grade_argv(sys.executable, root, args, "--merge", str(results))))
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
    parser = argparse.ArgumentParser(description="Grade as a Slurm job array of shards, then a merge job.")
    common_options(parser)
    parser.add_argument("--partition", default="", help="Slurm partition (default: the cluster's default)")
    return checked(parser, argv)


def main(argv=None):
    args = parse(argv)
    courses = courses_to_grade(args, "grade-slurm")
    shards_script, merge_script = write_scripts(courses, args)
    if args.write_only:
        print(f"wrote {shards_script} and {merge_script}")
        return
    array = sbatch(shards_script)
    merge = sbatch(f"--dependency=afterany:{array}", merge_script)
    print(follow_up(courses, array, merge, shards_script, merge_script, args.shards), flush=True)


if __name__ == "__main__":
    main()
