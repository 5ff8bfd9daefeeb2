"""`make grade-k8s [ASSIGNMENT=A] SHARDS=N IMAGE=…`: grade as a Kubernetes Indexed Job of N shards, then a merge Job.

Writes build/grading/k8s/<assignment or "all">/shards.yaml (an Indexed Job: pod I runs `grade --shard /N`, its index
from JOB_COMPLETION_INDEX), merge.yaml (a Job running `grade --merge`) and submit.sh (applies the first, waits until it
has ended however it ended, applies the second), and prints how to run and follow them. Nothing is applied here: no
cluster was at hand to test against (docs/instructors.md). The image (the repository's Dockerfile) holds this code and
its pinned environment; the course folder (submitted/, the gradebook) is a PersistentVolumeClaim every pod mounts at
the same path. Each pod asks for what its grader may use at most, as `make grade-slurm`'s tasks do (plan.py).
"""
import argparse
import math
import shlex
import sys
from pathlib import Path

import yaml

from .plan import checked, common_options, courses_to_grade, grade_argv, merge_limits, shard_sizes, task_limits

# bubblewrap, run by the grader as root, mounts and enters namespaces: it needs CAP_SYS_ADMIN, which the default
# AppArmor profile's mount rules and the kernel's masked /proc would still stop. hostUsers: false puts the pod in a
# user namespace of its own, so that root and its capabilities hold inside the pod only, never on the node.
SECURITY = {"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False, "procMount": "Unmasked",
            "capabilities": {"add": ["SYS_ADMIN"]}, "seccompProfile": {"type": "RuntimeDefault"},
            "appArmorProfile": {"type": "Unconfined"}}
LABELS = {"app.kubernetes.io/name": "course-grading"}


def pod_template(name, image, argv, cpus, mebibytes, claim, mount):
    """One pod: the grading container on the course's claim, in a user namespace, never restarted in place."""
    resources = {"cpu": str(cpus), "memory": f"{mebibytes}Mi"}
    container = {"name": "grade", "image": image, "command": argv, "workingDir": "/opt/course",
                 "resources": {"requests": resources, "limits": resources}, "securityContext": SECURITY,
                 "volumeMounts": [{"name": "course", "mountPath": mount}]}
    return {"metadata": {"labels": dict(LABELS, **{"grading/job": name})},
            "spec": {"restartPolicy": "Never", "hostUsers": False, "containers": [container],
                     "volumes": [{"name": "course", "persistentVolumeClaim": {"claimName": claim}}]}}


def job(name, template, seconds, **spec):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": LABELS},
            "spec": dict(spec, activeDeadlineSeconds=seconds, template=template)}


def results_folder(courses, args):
    """Where the shards save their results, as the pods see the course folder."""
    return str(Path(args.mount) / courses[0].build.relative_to(courses[0].root) / "results")


def shard_job(courses, args, name, shard, waves=1, **spec):
    """A Job of the grader's shard command (`--shard /N`: the index from the pod, or `--shard I/N`), its deadline
    `waves` times one shard's (pods that wait for a free place in the Job's parallelism)."""
    seconds, mebibytes = task_limits(shard_sizes(courses, args.shards), args.jobs, args.memory)
    argv = grade_argv("python", args.mount, args, "--shard", shard, "--results", results_folder(courses, args))
    return job(name, pod_template(name, args.image, argv, args.jobs, mebibytes, args.claim, args.mount),
               waves * seconds, **spec)


def manifests(courses, args):
    """(the Indexed Job of the shards, the merge Job) as dictionaries."""
    name, results = args.assignment or "all", results_folder(courses, args)
    parallelism = args.parallelism or args.shards
    shards = shard_job(courses, args, f"grade-{name}", f"/{args.shards}", math.ceil(args.shards / parallelism),
                       completionMode="Indexed", completions=args.shards, parallelism=parallelism,
                       backoffLimitPerIndex=0, maxFailedIndexes=args.shards)  # a failed shard: re-run it, then merge
    sizes = shard_sizes(courses, args.shards)
    merge_seconds, merge_mebibytes = merge_limits(sizes)
    merge_argv = grade_argv("python", args.mount, args, "--merge", results)
    merge = job(f"merge-{name}", pod_template(f"merge-{name}", args.image, merge_argv, 1, merge_mebibytes,
                                              args.claim, args.mount), merge_seconds, backoffLimit=0)
    return shards, merge


def submit_script(shards, merge, folder):
    """Apply the shards' Job, wait until it has ended (complete or failed), apply the merge Job."""
    name = shards["metadata"]["name"]
    wait = (f"until kubectl get job {name} -o jsonpath='{{.status.conditions[*].type}}' | grep -qE 'Complete|Failed';"
            " do sleep 30; done")
    return "\n".join(["#!/bin/sh", "set -e", f"kubectl apply -f {shlex.quote(str(folder / 'shards.yaml'))}", wait,
                      f"kubectl delete job {merge['metadata']['name']} --ignore-not-found",
                      f"kubectl apply -f {shlex.quote(str(folder / 'merge.yaml'))}",
                      f"kubectl wait --for=condition=Complete --timeout={merge['spec']['activeDeadlineSeconds']}s "
                      f"job/{merge['metadata']['name']} || true",
                      f"kubectl logs job/{merge['metadata']['name']}",
                      f"kubectl get job {merge['metadata']['name']} -o jsonpath='{{.status.succeeded}}' | grep -q 1"
                      "  # exit 1 when the merge failed: a shard did not finish (its log says which)", ""])


def write_files(courses, args):
    """shards.yaml, merge.yaml and submit.sh under build/grading/k8s/<assignment or all>/; their folder."""
    folder = courses[0].build / "k8s" / (args.assignment or "all")
    folder.mkdir(parents=True, exist_ok=True)
    if args.rerun is not None:  # an Indexed Job cannot run one index again: a Job of that shard alone
        name = f"grade-{args.assignment or 'all'}-shard-{args.rerun}"
        rerun = shard_job(courses, args, name, f"{args.rerun}/{args.shards}", backoffLimit=0)
        (folder / f"rerun-{args.rerun}.yaml").write_text(yaml.safe_dump(rerun, sort_keys=False))
    shards, merge = manifests(courses, args)
    (folder / "shards.yaml").write_text(yaml.safe_dump(shards, sort_keys=False))
    (folder / "merge.yaml").write_text(yaml.safe_dump(merge, sort_keys=False))
    (folder / "submit.sh").write_text(submit_script(shards, merge, folder))
    return folder, shards, merge


def follow_up(folder, shards, merge):
    name, merged = shards["metadata"]["name"], merge["metadata"]["name"]
    return "\n".join([
        f"wrote {folder}/shards.yaml (Indexed Job {name}), merge.yaml (Job {merged}) and submit.sh",
        f"  run:           sh {folder}/submit.sh      (applies {name}, waits for its end, applies {merged})",
        f"  follow:        kubectl get job {name} {merged}; kubectl get pods -l grading/job={name}",
        f"  a shard's log: kubectl logs -l grading/job={name},batch.kubernetes.io/job-completion-index=I",
        f"  re-run shard I: add RERUN=I to this make command, then kubectl delete job {name}-shard-I "
        f"--ignore-not-found; kubectl apply -f {folder}/rerun-I.yaml",
        f"  then merge again: kubectl delete job {merged}; kubectl apply -f {folder}/merge.yaml"])


def parse(argv):
    parser = argparse.ArgumentParser(description="Write a Kubernetes Indexed Job grading shards, and a merge Job.")
    common_options(parser)
    parser.add_argument("--image", required=True, help="the grading image (the repository's Dockerfile), pushed "
                        "where the cluster pulls from")
    parser.add_argument("--claim", default="course", help="PersistentVolumeClaim holding the course folder")
    parser.add_argument("--mount", default="/course", help="where every pod mounts the claim (the course folder)")
    parser.add_argument("--parallelism", type=int, default=0, help="pods at once (default: every shard)")
    parser.add_argument("--rerun", type=int, help="also write rerun-I.yaml: a Job grading shard I again")
    args = checked(parser, argv)
    if args.rerun is not None and not 0 <= args.rerun < args.shards:
        parser.error(f"--rerun takes a shard from 0 to {args.shards - 1}")
    return args


def main(argv=None):
    args = parse(argv)
    courses = courses_to_grade(args, "grade-k8s")
    print(follow_up(*write_files(courses, args)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
