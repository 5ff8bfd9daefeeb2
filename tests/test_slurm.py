"""`make grade-slurm`: a class graded as a Slurm job array of shards equals `make grade`, file by file.

The end-to-end test starts a single-node Slurm of its own (tests/slurm_cluster.py: Debian's slurmctld, slurmd and
munge, as root; skipped with the reason elsewhere, never in CI, whose .ci/run installs them), grades eight submissions
of the registry's first two assignments (an honest notebook of definitions, one with a planted mistake, one that
fakes its checks, the untouched release) in three shards through `python -m grading.cluster.slurm` (what
`make grade-slurm` runs), cancels one array task while it runs, lets the merge job (afterany) name it, re-runs that
task and merges again; the course graded once by `grade` must publish the same (marker `cluster`, about 100 s of CPU;
`make test-all` runs it, `make test-slurm` runs it alone). A fast test reads the batch scripts.
"""
import copy
import json
import re
import subprocess
import sys

import pytest

import slurm_cluster
from course.registry import assignments
from course.slices import slice_of
from course_paths import ROOT
from grading.cluster import plan, slurm
from grading.match.notebook import read
from grading.sandbox import sandbox
from submissions import (GRADING_RUNAWAY, answer_id, definitions_only, edit_cell, index_of, published,
                         scratch_course)

pytestmark = pytest.mark.full

REASON = slurm_cluster.missing()
ASSIGNMENTS = assignments()[:2]
SANDBOX = "auto" if sandbox.bwrap_version() else "none"  # trusted notebooks: ours
FAKE = '''import torch
torch.allclose = lambda *args, **kwargs: True
print("✓ Task {task} passed")
'''


def four_of(registered):
    """{student: notebook}: honest definitions, one with a planted mistake, one that fakes its checks, untouched."""
    honest = definitions_only(registered)
    mutant = next(m for m in slice_of(registered.name).mistakes.MUTANTS if m.task in registered.definition_tasks)
    partial = edit_cell(copy.deepcopy(honest), answer_id(honest, mutant.task), mutant.apply)
    faker = copy.deepcopy(honest)
    faker["cells"].insert(index_of(faker, answer_id(faker, registered.definition_tasks[0])),
                          {"cell_type": "code", "metadata": {}, "source": FAKE.format(task=mutant.task), "outputs": [],
                           "execution_count": None})
    return {"honest": honest, "partial": partial, "faker": faker, "untouched": read(registered.release_notebook)}


def class_of_eight(course):
    for registered in ASSIGNMENTS:
        for student, notebook in four_of(registered).items():
            folder = course / "submitted" / student / registered.name
            folder.mkdir(parents=True)
            (folder / f"{registered.name}.ipynb").write_text(json.dumps(notebook))
    return course


def run(argv, env=None):
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env, timeout=GRADING_RUNAWAY)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def sbatch(env, *arguments):
    return run(["sbatch", "--parsable", *map(str, arguments)], env).strip().split(";")[0]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if REASON:
        pytest.skip(REASON)
    folder = tmp_path_factory.mktemp("slurm")
    env = slurm_cluster.start(folder)
    yield env
    slurm_cluster.stop(folder)


@pytest.fixture(scope="module")
def graded(cluster, tmp_path_factory):
    """(the class graded by one `grade`, the class graded by the array, the merge's log before and after the
    cancelled task's re-run)."""
    whole = class_of_eight(scratch_course(tmp_path_factory.mktemp("whole")))
    plain = subprocess.Popen([sys.executable, "-m", "grading.grade", "--course", str(whole), "--jobs", "1",
                              "--sandbox", SANDBOX], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)  # beside the array: it fills the queue's waits
    sharded = class_of_eight(scratch_course(tmp_path_factory.mktemp("sharded")))
    output = run([sys.executable, "-m", "grading.cluster.slurm", "--course", str(sharded), "--shards", "3",
                  "--sandbox", SANDBOX], cluster)
    array, merge = re.search(r"job array (\d+), the merge as job (\d+)", output).groups()
    slurm_cluster.running(cluster, f"{array}_1", timeout=600)
    run(["scancel", f"{array}_1"], cluster)
    slurm_cluster.wait_for(cluster, [array, merge], timeout=GRADING_RUNAWAY)
    scripts = sharded / "build" / "grading" / "slurm" / "all"
    first = (scripts / "merge.out").read_text() + run(["scontrol", "show", "job", merge], cluster)
    again = sbatch(cluster, "--array=1", scripts / "shards.sh")
    slurm_cluster.wait_for(cluster, [again], timeout=GRADING_RUNAWAY)
    slurm_cluster.wait_for(cluster, [sbatch(cluster, scripts / "merge.sh")], timeout=GRADING_RUNAWAY)
    output = plain.communicate(timeout=GRADING_RUNAWAY)[0]
    assert plain.returncode == 0, output
    return whole, sharded, first, (scripts / "merge.out").read_text()


@pytest.mark.grading
@pytest.mark.cluster
def test_the_array_merged_publishes_what_one_grade_run_publishes(graded):
    whole, sharded, _, second = graded
    assert second.count("merged 3 of 3 shard(s)") == len(ASSIGNMENTS), second
    for registered in ASSIGNMENTS:
        assert published(sharded, registered.name) == published(whole, registered.name), registered.name


@pytest.mark.grading
@pytest.mark.cluster
def test_a_cancelled_task_is_named_by_the_merge_and_its_rerun_completes_the_class(graded):
    """Shard 1 is cancelled once it runs. Each assignment it had not finished is merged from 2 of 3 shards and named
    by the merge, which then fails; one it finished first is merged whole (at a load average of 8, shard 1 graded the
    first assignment's one submission before the cancel landed: the test assumed it never would). Re-run, the shard
    completes the class."""
    _, _, first, second = graded
    merged = dict((name, int(count)) for count, name in re.findall(r"merged (\d) of 3 shard\(s\) of (\w+)", first))
    missing = [name for name, count in merged.items() if count == 2]
    assert set(merged) == {registered.name for registered in ASSIGNMENTS} and set(merged.values()) <= {2, 3}, first
    assert missing, f"shard 1 finished every assignment before its cancel landed: nothing was tested\n{first}"
    assert first.count("PROBLEM: shard 1 of 3 did not finish") == len(missing), first
    assert "ExitCode=1:0" in first  # the merge job failed, after publishing the shards that finished
    assert "did not finish" not in second, second


def test_the_batch_scripts_ask_for_the_graders_own_limits(tmp_path):
    """Memory: each of --jobs probes' caps and the grader's GiB; time: the grader's bound for the largest shard."""
    course = class_of_eight(scratch_course(tmp_path))
    slurm.main(["--course", str(course), "--shards", "3", "--jobs", "2", "--memory", "3", "--write-only",
                "--partition", "gpu"])
    script = (course / "build" / "grading" / "slurm" / "all" / "shards.sh").read_text()
    assert "#SBATCH --array=0-2" in script and "#SBATCH --cpus-per-task=2" in script
    assert "#SBATCH --partition=gpu" in script and f"#SBATCH --mem={(2 * 3 + 1) * 1024}M" in script
    # 8 submissions in 3 shards: the largest holds 3 or 4 (each assignment's 4 split 2, 1, 1), 2 rounds of 2 at once,
    # each at most the probe's wall-clock bound (3 x 1,200 s), after the task's 600 s of set-up
    assert f"#SBATCH --time={(plan.SET_UP_SECONDS + 2 * 3 * 1200) // 60}\n" in script
    assert plan.BACKSTOP * plan.MAX_TOTAL == 3 * 1200
    assert "--shard /3" in script and "--results" in script
    merge = (course / "build" / "grading" / "slurm" / "all" / "merge.sh").read_text()
    assert "--merge" in merge and "--array" not in merge
