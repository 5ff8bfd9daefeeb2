"""One assignment's grading split over N shards (a Slurm job array, a Kubernetes Indexed Job) and merged after.

`grade --shard I/N --results DIR` grades the I-th of N shards (0-based, as SLURM_ARRAY_TASK_ID with --array=0-(N-1)
and JOB_COMPLETION_INDEX count) and saves each submission's outcome as DIR/<assignment>/<student>.json, written
atomically (a re-run replaces it whole), then DIR/<assignment>/shard-I-of-N.json, the shard's manifest, once every
submission of it is saved. `grade --merge DIR` publishes from the manifests what one `make grade` run publishes.
The partition is deterministic and balanced by notebook size: every shard computes it from submitted/ alone.
"""
import json
import os
from dataclasses import asdict

from .judge import Result, Verdict
from .publish import CARRIED

INDEX_VARIABLES = ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX")  # where a cluster puts a task's index


class ShardError(Exception):
    """A shard spec or a results folder that cannot be used; the message says why."""


def shard_spec(text, environ=os.environ):
    """(index, count) from 'I/N', or from '/N' with I read from the cluster's index variable."""
    index, _, count = (text or "").partition("/")
    if not index:
        index = next((environ[name] for name in INDEX_VARIABLES if environ.get(name, "") != ""), "")
    try:
        index, count = int(index), int(count)
    except ValueError:
        raise ShardError(f"--shard takes I/N (0 <= I < N), or /N with I from {' or '.join(INDEX_VARIABLES)}; "
                         f"got {text!r}") from None
    if not 0 <= index < count:
        raise ShardError(f"--shard {index}/{count}: the index must be at least 0 and below the count")
    return index, count


def partition(submissions, count):
    """[[submission]] * count: the largest notebooks first, each to the shard with the fewest bytes so far."""
    shards, sizes = [[] for _ in range(count)], [0] * count

    def size(submission):
        return submission.notebook.stat().st_size if submission.notebook and submission.notebook.is_file() else 0

    for submission in sorted(submissions, key=lambda s: (-size(s), s.student)):
        lightest = min(range(count), key=lambda shard: (sizes[shard], shard))
        shards[lightest].append(submission)
        sizes[lightest] += size(submission)
    return [sorted(shard, key=lambda s: s.student) for shard in shards]


def write_atomically(path, data):
    """path holds data whole or not at all, whatever kills this process meanwhile."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    partial.write_text(json.dumps(data), encoding="utf-8")
    os.replace(partial, path)


def text_of(path):
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def save_result(folder, result, build):
    """DIR/<assignment>/<student>.json: the Result, its graded notebook and the end of its probe's log, as the
    shard's build folder holds them."""
    folder.mkdir(parents=True, exist_ok=True)
    rendered = build / "rendered" / result.student / folder.name
    write_atomically(folder / f"{result.student}.json", {
        "result": asdict(result), "notebook": text_of(rendered / f"{folder.name}.ipynb"),
        "carried": {name: text_of(rendered / name) for name in CARRIED},
        "log": text_of(build / "logs" / f"{result.student}.log")})


def save_manifest(folder, index, count, students, context):
    """The shard's manifest, written last: its students were all saved."""
    write_atomically(folder / f"shard-{index}-of-{count}.json",
                     {"index": index, "count": count, "students": sorted(students), "context": context})


def load_result(data):
    """A Result from its saved form (asdict), verdicts keyed by task number again."""
    fields = dict(data)
    fields["verdicts"] = {int(task): Verdict(**verdict) for task, verdict in data["verdicts"].items()}
    return Result(**fields)


def read_manifests(folder):
    """({index: manifest}, count, problems) of DIR/<assignment>: shards missing or of another count are problems."""
    manifests = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("shard-*-of-*.json"))]
    counts = {manifest["count"] for manifest in manifests}
    if len(counts) > 1:
        raise ShardError(f"{folder} holds shards of {sorted(counts)} shards each: merge the results of one split")
    if not counts:
        raise ShardError(f"{folder} holds no shard manifest: no shard finished, or --results named another folder")
    count = counts.pop()
    found = {manifest["index"]: manifest for manifest in manifests}
    missing = [index for index in range(count) if index not in found]
    problems = [f"shard {index} of {count} did not finish (no manifest): grade it again with --shard "
                f"{index}/{count}; its students are not in this merge" for index in missing]
    return found, count, problems


def merged_students(found):
    """{student: shard index} over the manifests; a student in two shards is an error."""
    owner = {}
    for index, manifest in sorted(found.items()):
        for student in manifest["students"]:
            if student in owner:
                raise ShardError(f"{student} was graded in shards {owner[student]} and {index}: the split changed "
                                 "between runs; grade every shard again")
            owner[student] = index
    return owner


def restore(folder, student, build):
    """The saved Result of a student; its graded notebook and log written back where one run leaves them in build."""
    saved = json.loads((folder / f"{student}.json").read_text(encoding="utf-8"))
    rendered, logs = build / "rendered" / student / folder.name, build / "logs"
    carried = [(rendered / name, text) for name, text in saved["carried"].items()]
    for path, text in [(rendered / f"{folder.name}.ipynb", saved["notebook"]), *carried,
                       (logs / f"{student}.log", saved["log"])]:
        if text is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return load_result(saved["result"])
