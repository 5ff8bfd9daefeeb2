"""The class's numbers, counted from reports/<a>/graded.json (grading/publish/class_record.py)."""
import json
import re
from collections import Counter
from dataclasses import dataclass
from itertools import combinations


@dataclass
class ClassTables:
    """What the class report shows; every count is of students."""

    students: int
    max_score: float
    scores: list  # every student's total score
    seconds: list  # every submission's grading time
    passed: dict  # {task: students with the task's full points}
    mistakes: list  # [(task, id, sentence, students)], the most frequent first
    together: list  # [((task, task), students who failed both)], the most frequent first


def load_record(path):
    """{student: entry} of graded.json; an entry's tasks keyed by task number."""
    record = json.loads(path.read_text(encoding="utf-8"))
    return {student: dict(entry, tasks={int(task): verdict for task, verdict in entry["tasks"].items()})
            for student, entry in record.items()}


def blanked(sentence):
    """A sentence template with its blanks shown as … ("reverses {accuracy:.0%} of" -> "reverses … of")."""
    return re.sub(r"\{[^{}]*\}", "…", sentence)


def count(record, sentences):
    """ClassTables of a record; sentences: {diagnosis id: its sentence} (an id it lacks is shown without one)."""
    entries = list(record.values())
    tasks = sorted({task for entry in entries for task in entry["tasks"]})
    failed = [{task for task, verdict in entry["tasks"].items() if verdict["score"] < verdict["points"]}
              for entry in entries]
    named = Counter(verdict["diagnosis"] for entry in entries for verdict in entry["tasks"].values()
                    if verdict.get("diagnosis"))
    pairs = Counter(pair for tasks_failed in failed for pair in combinations(sorted(tasks_failed), 2))
    return ClassTables(
        students=len(entries), max_score=max((entry["max_score"] for entry in entries), default=0),
        scores=[entry["score"] for entry in entries], seconds=[entry["seconds"] for entry in entries],
        passed={task: sum(task not in tasks_failed for tasks_failed in failed) for task in tasks},
        mistakes=sorted(((int(ident.split(".")[1]), ident, blanked(sentences.get(ident, "")), n)
                         for ident, n in named.items()), key=lambda row: (-row[3], row[0], row[1])),
        together=sorted(pairs.items(), key=lambda item: (-item[1], item[0])))
