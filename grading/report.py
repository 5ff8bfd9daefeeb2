"""grades_by_task.csv and grading_report.md: the per-task scores and what needed attention, and why."""
import csv
from datetime import datetime


def write_task_scores(path, assignment, rows):
    """One row per student and task: student_id, assignment, task, score, max_score."""
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["student_id", "assignment", "task", "score", "max_score"])
        for student, task, score, max_score in rows:
            writer.writerow([student, assignment, task, f"{score:g}", f"{max_score:g}"])


def summary_table(results):
    """One row per submission: score, tasks passed, seconds, whether it needs attention."""
    lines = ["| student | score | tasks passed | seconds | needs attention |", "|---|---|---|---|---|"]
    for result in results:
        passed = ", ".join(str(task) for task, verdict in result.verdicts.items() if verdict.score) or "none"
        lines.append(f"| {result.student} | {result.score:g} / {result.max_score:g} | {passed} | "
                     f"{result.seconds:.0f} | {'yes' if result.notes else ''} |")
    return lines


def attention_section(results):
    """Every submission with notes, and the notes: why it needed attention."""
    lines = ["## Needs attention", ""]
    flagged = [result for result in results if result.notes]
    if not flagged:
        return lines + ["Nothing: every submission was graded without incident.", ""]
    for result in flagged:
        lines += [f"### {result.student} ({result.score:g} / {result.max_score:g})", ""]
        lines += [f"- {note}" for note in result.notes] + [""]
    return lines


def failures_section(results):
    """The grader's sentence for each failed task (the first three per submission)."""
    lines = ["## Why tasks failed", ""]
    for result in results:
        failed = [verdict for verdict in result.verdicts.values() if not verdict.score]
        if failed:
            lines += [f"- **{result.student}**: " + " ".join(f"{v.message}" for v in failed[:3])
                      + (f" (and {len(failed) - 3} more)" if len(failed) > 3 else "")]
    return lines + [""]


def write_report(path, assignment, results, context):
    """The instructor's report, in Markdown.

    Args:
        results: one grading result per submission (student, score, max_score, verdicts, notes, seconds).
        context: dict with "jobs", "sandbox" (a warning or ""), "seconds" and "problems" (run-level notes).
    """
    lines = [f"# Grading report: {assignment}", "",
             f"{len(results)} submission(s) graded on {datetime.now():%Y-%m-%d %H:%M} with {context['jobs']} "
             f"job(s) in {context['seconds']:.0f} s; sandbox: {context['sandbox'] or 'namespaces, unprivileged user'}.",
             "Scores come from the grader's own comparison with the reference (hidden tests included); "
             "nothing a notebook prints or patches changes them.", ""]
    lines += [f"**{problem}**" for problem in context.get("problems", [])] + [""] if context.get("problems") else []
    lines += summary_table(results) + [""] + attention_section(results) + failures_section(results)
    path.write_text("\n".join(lines))
