"""`make grade-k8s`'s files, read without a cluster (none was at hand): the Jobs through the Kubernetes API's own
models (kubernetes, the official client: a field it does not know, or misspelled, would be lost on the way back), and
what they ask for. tests/test_shards.py runs each pod's command here with its JOB_COMPLETION_INDEX and the merge's
after them, against one `grade` run.
"""
import json

import pytest
import yaml
from kubernetes.client import ApiClient

from course_paths import NAME, ROOT
from grading.cluster import k8s, plan
from submissions import scratch_course

pytestmark = pytest.mark.fast

OPTIONS = ["--assignment", NAME, "--shards", "3", "--jobs", "2", "--memory", "3", "--image",
           "registry.example/grading:1", "--claim", "course-2026", "--parallelism", "2"]


def through_the_api_models(manifest):
    """The manifest as the client reads it into a V1Job and writes it back."""
    client = ApiClient()
    return client.sanitize_for_serialization(client._ApiClient__deserialize(manifest, "V1Job"))


@pytest.fixture
def written(tmp_path):
    course = scratch_course(tmp_path / "course")
    for student, size in {"ann": 9000, "bob": 500, "cat": 400, "dan": 300, "eve": 200}.items():
        folder = course / "submitted" / student / NAME
        folder.mkdir(parents=True)
        (folder / f"{NAME}.ipynb").write_text(json.dumps({"cells": [], "pad": "x" * size}))
    k8s.main(["--course", str(course), *OPTIONS, "--rerun", "1"])
    folder = course / "build" / "grading" / "k8s" / NAME
    return {path.stem: yaml.safe_load(path.read_text()) for path in folder.glob("*.yaml")}, folder


def test_every_job_is_one_the_api_knows_field_for_field(written):
    jobs, _ = written
    assert sorted(jobs) == ["merge", "rerun-1", "shards"]
    for name, manifest in jobs.items():
        assert through_the_api_models(manifest) == manifest, name


def test_the_shards_are_an_indexed_job_whose_pods_ask_for_the_graders_own_limits(written):
    spec = written[0]["shards"]["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 3, 2)
    assert spec["backoffLimitPerIndex"] == 0 and spec["maxFailedIndexes"] == 3  # one failed shard stops no other
    # 5 submissions in 3 shards: the largest holds 2 (ann alone outweighs the rest), one round of --jobs 2
    seconds, mebibytes = plan.task_limits([2, 2, 1], 2, 3)
    assert seconds == plan.SET_UP_SECONDS + plan.BACKSTOP * plan.MAX_TOTAL and mebibytes == (2 * 3 + 1) * 1024
    assert spec["activeDeadlineSeconds"] == 2 * seconds  # 3 pods, 2 at a time: two rounds
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"cpu": "2", "memory": f"{mebibytes}Mi"}
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert pod["restartPolicy"] == "Never" and pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "course-2026"
    assert container["image"] == "registry.example/grading:1"
    command = container["command"]
    assert command[:3] == ["python", "-m", "grading.grade"] and command[command.index("--course") + 1] == "/course"
    assert command[command.index("--shard") + 1] == "/3"  # the index from JOB_COMPLETION_INDEX
    assert command[command.index("--results") + 1] == "/course/build/grading/results"


def test_the_pods_sandbox_in_a_user_namespace_of_their_own(written):
    pod = written[0]["shards"]["spec"]["template"]["spec"]
    context = pod["containers"][0]["securityContext"]
    assert pod["hostUsers"] is False  # root and its capabilities inside the pod only
    assert context["capabilities"]["add"] == ["SYS_ADMIN"] and context["procMount"] == "Unmasked"
    assert "privileged" not in context


def test_the_merge_and_a_rerun_take_the_same_results_and_submit_waits_for_the_shards(written):
    jobs, folder = written
    results = jobs["shards"]["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    merge = jobs["merge"]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert merge[merge.index("--merge") + 1] == results and "--shard" not in merge
    rerun = jobs["rerun-1"]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert rerun[rerun.index("--shard") + 1] == "1/3" and rerun[-1] == results
    assert "completionMode" not in jobs["rerun-1"]["spec"]
    lines = (folder / "submit.sh").read_text().splitlines()
    applies = [index for index, line in enumerate(lines) if line.startswith("kubectl apply")]
    waits = [index for index, line in enumerate(lines) if line.startswith("until kubectl get job grade-")]
    assert len(applies) == 2 and applies[0] < waits[0] < applies[1] and "merge.yaml" in lines[applies[1]]
    assert "Complete|Failed" in lines[waits[0]]  # the merge runs after the shards however they ended


def test_a_rerun_of_a_shard_that_does_not_exist_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        k8s.parse(["--shards", "3", "--image", "x", "--rerun", "3"])
    assert "--rerun takes a shard from 0 to 2" in capsys.readouterr().err


def test_the_image_has_the_pinned_environment_bubblewrap_and_a_non_root_user_and_no_student_data():
    """No engine here builds it (docs/instructors.md): what the Dockerfile says it does, read."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "bubblewrap" in dockerfile and "util-linux" in dockerfile  # bwrap, setpriv, prlimit
    assert "make .venv/.compiled" in dockerfile  # the pinned packages, installed and compiled as for `make test-all`
    assert "\nUSER grader\n" in dockerfile and "useradd --uid 1000" in dockerfile
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {"submitted", "gradebook.db", "feedback", "autograded", "exports", ".venv", "build"} <= ignored
