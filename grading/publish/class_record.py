"""reports/<assignment>/graded.json: every graded submission's scores, named mistakes and grading time, for
`make report` (grading/classreport). Student data: reports/ is git-ignored, and students are named by id only.
"""
import json
import os


def record_path(root, assignment):
    return root / "reports" / assignment / "graded.json"


def write_class_record(root, assignment, results):
    """Merge this run's results into graded.json: a regrade replaces its students' entries and keeps the others'.

    Args:
        results: grading.judge.Result of each submission graded in this run.
    """
    path = record_path(root, assignment)
    record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for result in results:
        record[result.student] = {
            "score": result.score, "max_score": result.max_score, "seconds": round(result.seconds, 1),
            "tasks": {str(task): {"score": verdict.score, "points": verdict.points, "diagnosis": verdict.diagnosis}
                      for task, verdict in result.verdicts.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(dict(sorted(record.items())), indent=1), encoding="utf-8")
    os.replace(part, path)
