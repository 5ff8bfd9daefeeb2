"""Grading in shards and merging (grading/shards.py, `grade --shard I/N --results DIR`, `grade --merge DIR`).

Fast tests take the pieces: the shard spec and the cluster's index variables, the partition, a result saved and
restored, the manifests. The end-to-end one (marker `grading`) grades three submissions of the registry's first
assignment once as one run and once in two shards merged after, and compares what each published, file by file: the
shards are the pods of `make grade-k8s`'s Indexed Job, each one's container command run here with its
JOB_COMPLETION_INDEX, and the merge Job's command after them (no Kubernetes cluster was at hand; tests/test_k8s.py reads
the Jobs). Then a merge with a shard missing publishes the rest, names the missing shard and exits 1.
tests/test_slurm.py grades through a Slurm cluster of its own where the machine can start one.
"""
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from course_paths import NAME, RELEASE, ROOT
from grading.cluster import k8s
from grading.collect.submissions import Submission
from grading.judge import Result, Verdict
from grading.match.notebook import read
from grading.sandbox import sandbox
from grading.shards import (ShardError, load_result, merged_students, partition, read_manifests, restore,
                            save_manifest, save_result, shard_spec)
from submissions import GRADING_RUNAWAY, csv_rows, definitions_only, published, scratch_course


@pytest.mark.fast
def test_a_shard_is_given_as_i_of_n_or_by_the_clusters_index():
    assert shard_spec("1/3", {}) == (1, 3)
    assert shard_spec("/3", {"SLURM_ARRAY_TASK_ID": "2"}) == (2, 3)
    assert shard_spec("/4", {"JOB_COMPLETION_INDEX": "0"}) == (0, 4)
    for wrong in ("3/3", "-1/2", "a/b", "/3", "2", ""):
        with pytest.raises(ShardError, match="--shard"):
            shard_spec(wrong, {})


def submission(folder, student, size):
    path = folder / student / "a.ipynb"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x" * size)
    return Submission(student, path.parent, path)


@pytest.mark.fast
def test_the_partition_takes_every_submission_once_balanced_by_size_whatever_the_order(tmp_path):
    sizes = {"ann": 900, "bob": 500, "cat": 400, "dan": 300, "eve": 300, "fay": 100, "gil": 0}
    found = [submission(tmp_path, student, size) for student, size in sizes.items()]
    shards = partition(found, 3)
    assert sorted(s.student for shard in shards for s in shard) == sorted(sizes)
    totals = [sum(sizes[s.student] for s in shard) for shard in shards]
    assert max(totals) - min(totals) <= max(sizes.values())
    assert [[s.student for s in shard] for shard in partition(found[::-1], 3)] == \
        [[s.student for s in shard] for shard in shards]  # every shard computes the same split
    assert partition(found[:2], 4)[2:] == [[], []]  # more shards than submissions: the rest are empty


def result(student):
    return Result(student, {1: Verdict(1, 1.0, 1.0, "passed"), 2: Verdict(2, 2.0, 0.0, "failed", flag="x")},
                  notes=["a note"], seconds=3.5, limits=[{"cell": "c", "kind": "CPU limit"}], info=["renamed"])


@pytest.mark.fast
def test_a_saved_result_comes_back_with_its_graded_notebook_and_log(tmp_path):
    build, folder = tmp_path / "shard", tmp_path / "results" / "a"
    (build / "rendered" / "ann" / "a").mkdir(parents=True)
    (build / "rendered" / "ann" / "a" / "a.ipynb").write_text('{"cells": []}')
    (build / "logs").mkdir()
    (build / "logs" / "ann.log").write_text("the probe's log")
    save_result(folder, result("ann"), build)
    assert [path.name for path in folder.iterdir()] == ["ann.json"]  # written whole: no part file left
    restored = restore(folder, "ann", tmp_path / "merged")
    assert asdict(restored) == asdict(result("ann")) and restored.score == 1.0
    assert (tmp_path / "merged" / "rendered" / "ann" / "a" / "a.ipynb").read_text() == '{"cells": []}'
    assert (tmp_path / "merged" / "logs" / "ann.log").read_text() == "the probe's log"
    assert asdict(load_result(json.loads(json.dumps(asdict(result("bo")))))) == asdict(result("bo"))


@pytest.mark.fast
def test_the_manifests_name_a_missing_shard_and_refuse_a_student_graded_twice(tmp_path):
    context = {"jobs": 1, "seconds": 1.0}
    save_manifest(tmp_path, 0, 3, ["ann", "bob"], context)
    save_manifest(tmp_path, 2, 3, ["cat"], context)
    found, count, problems = read_manifests(tmp_path)
    assert count == 3 and sorted(found) == [0, 2] and merged_students(found) == {"ann": 0, "bob": 0, "cat": 2}
    assert len(problems) == 1 and "shard 1 of 3 did not finish" in problems[0] and "--shard 1/3" in problems[0]
    save_manifest(tmp_path, 1, 3, ["cat"], context)
    with pytest.raises(ShardError, match="cat was graded in shards 1 and 2"):
        merged_students(read_manifests(tmp_path)[0])
    save_manifest(tmp_path, 0, 2, ["ann"], context)
    with pytest.raises(ShardError, match="shards of"):
        read_manifests(tmp_path)
    with pytest.raises(ShardError, match="no shard manifest"):
        read_manifests(tmp_path / "none")


# ----- End to end: one run against two shards and a merge ------------------------------------------------------

def grade(course, *more):
    unsandboxed = [] if sandbox.bwrap_version() else ["--sandbox", "none"]  # trusted notebooks: ours
    return subprocess.run([sys.executable, "-m", "grading.grade", "--assignment", NAME, "--jobs", "2", "--course",
                           str(course), *unsandboxed, *more], cwd=ROOT, capture_output=True, text=True,
                          timeout=GRADING_RUNAWAY)


def class_of_three(course):
    """An honest notebook of definitions, the untouched release, and one that does not parse."""
    honest = definitions_only()
    broken = json.loads(json.dumps(honest))
    broken["cells"][-1] = {"cell_type": "code", "metadata": {}, "source": "def (:", "outputs": [],
                           "execution_count": None}
    for student, notebook in {"honest": honest, "untouched": read(RELEASE), "broken": broken}.items():
        folder = course / "submitted" / student / NAME
        folder.mkdir(parents=True)
        (folder / f"{NAME}.ipynb").write_text(json.dumps(notebook))
    return course


def indexed_job_commands(course, shards):
    """The container commands of `make grade-k8s`'s Indexed Job and merge Job for course, mounted where it is here;
    the image's `python` is this one, its working directory this checkout (the image's /opt/course)."""
    k8s.main(["--course", str(course), "--assignment", NAME, "--shards", str(shards), "--jobs", "2", "--image",
              "grading:test", "--mount", str(course), "--sandbox", "auto" if sandbox.bwrap_version() else "none"])
    folder = course / "build" / "grading" / "k8s" / NAME
    jobs = [yaml.safe_load((folder / f"{kind}.yaml").read_text()) for kind in ("shards", "merge")]
    commands = [job["spec"]["template"]["spec"]["containers"][0]["command"] for job in jobs]
    assert all(command[0] == "python" for command in commands)
    return [[sys.executable, *command[1:]] for command in commands]


def run_as_pod(command, index=None):
    extra = {} if index is None else {"JOB_COMPLETION_INDEX": str(index)}
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=GRADING_RUNAWAY,
                          env=dict(os.environ, **extra))


@pytest.fixture(scope="module")
def one_run_and_shards(tmp_path_factory):
    """(the course graded in one run, the course graded by the Indexed Job's 2 pods' commands run here and merged by
    the merge Job's, the results folder, outputs)."""
    whole = class_of_three(scratch_course(tmp_path_factory.mktemp("whole")))
    sharded = class_of_three(scratch_course(tmp_path_factory.mktemp("sharded")))
    shard_command, merge_command = indexed_job_commands(sharded, 2)
    runs = [grade(whole), run_as_pod(shard_command, 0), run_as_pod(shard_command, 1), run_as_pod(merge_command)]
    for run in runs:
        assert run.returncode == 0, run.stdout + run.stderr
    return whole, sharded, sharded / "build" / "grading" / "results", [run.stdout for run in runs]


@pytest.mark.full
@pytest.mark.grading
def test_the_indexed_jobs_commands_run_here_publish_what_one_run_publishes(one_run_and_shards):
    whole, sharded, _, outputs = one_run_and_shards
    assert "graded shard 0/2" in outputs[1] and "merged 2 of 2 shard(s)" in outputs[3]
    assert published(sharded, NAME) == published(whole, NAME)
    assert {row["student_id"]: float(row["score"]) for row in csv_rows(whole / "grades.csv")}["honest"] > 0


@pytest.mark.full
@pytest.mark.grading
def test_a_merge_missing_a_shard_publishes_the_rest_names_it_and_fails(one_run_and_shards, tmp_path):
    _, sharded, results, _ = one_run_and_shards
    course = tmp_path / "course"
    shutil.copytree(sharded, course, ignore=shutil.ignore_patterns("build", "results", "gradebook.db", "feedback",
                                                                   "autograded", "grades*.csv", "exports"))
    partial = Path(tmp_path / "partial")
    shutil.copytree(results, partial)
    (partial / NAME / "shard-1-of-2.json").unlink()
    run = grade(course, "--merge", str(partial))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "shard 1 of 2 did not finish" in run.stdout
    report = (course / f"grading_report_{NAME}.md").read_text()
    assert "shard 1 of 2 did not finish" in report
    graded = {row["student_id"] for row in csv_rows(course / "grades_by_task.csv")}
    assert graded == set(json.loads((partial / NAME / "shard-0-of-2.json").read_text())["students"])
