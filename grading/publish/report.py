"""grades_by_task.csv and grading_report_<assignment>.md: the per-task scores and what needed attention, and why.

Every student-controlled string (ids, notes quoting stderr or file names, verdicts quoting errors) is
escaped with grading.text.markdown: the report shows it as text, never as a tag, link or table cell.
"""
import csv
from datetime import datetime

from ..text import encodable, markdown

HEADER = ["student_id", "assignment", "task", "score", "max_score", "diagnosis"]


def write_task_scores(path, assignment, rows, students=None, diagnoses=None):
    """Merge one assignment's rows into grades_by_task.csv: student_id, assignment, task, score, max_score, diagnosis.

    diagnoses: {(student, task): the named mistake's id} of the failed tasks whose check named one (the rest: empty).

    Rows of other assignments stay as they were; of this one, those of `students` (None: every student) are
    replaced by `rows`, so a regrade or the next assignment's run loses nothing.
    """
    kept = []
    if path.is_file():
        with open(path, newline="", encoding="utf-8") as file:
            kept = [[row.get(key) or "" for key in HEADER] for row in csv.DictReader(file)
                    if row["assignment"] != assignment or (students is not None and row["student_id"] not in students)]
    new = [[encodable(student), assignment, str(task), f"{score:g}", f"{max_score:g}",
            (diagnoses or {}).get((student, task), "")] for student, task, score, max_score in rows]
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(HEADER)
        writer.writerows(sorted(kept + new, key=lambda row: (row[1], row[0], int(row[2]))))


def report_path(root, assignment, student=None):
    """grading_report_<assignment>.md, or grading_report_<assignment>_<student>.md for one student's regrade."""
    return root / f"grading_report_{assignment}{'_' + student if student else ''}.md"


def summary_table(results):
    """One row per submission: score, tasks passed, seconds, whether it needs attention or manual grading."""
    lines = ["| student | score | tasks passed | seconds | needs attention | manual grading |",
             "|---|---|---|---|---|---|"]
    for result in results:
        passed = ", ".join(str(task) for task, verdict in result.verdicts.items() if verdict.score) or "none"
        flagged = ", ".join(f"task {task}" for task in result.flags)
        lines.append(f"| {markdown(result.student, 100)} | {result.score:g} / {result.max_score:g} | {passed} | "
                     f"{result.seconds:.0f} | {'yes' if result.notes else ''} | {flagged} |")
    return lines


def flagged_section(results):
    """Every task the grader could not judge: nbgrader's formgrader shows it as needing manual grading."""
    flagged = [result for result in results if result.flags]
    if not flagged:
        return []
    lines = ["## Flagged for manual grading", "",
             "The grader could not judge these tasks; the formgrader marks them as needing manual grading.", ""]
    for result in flagged:
        lines += [f"- **{markdown(result.student, 100)}**, task {task}: {markdown(reason)}"
                  for task, reason in result.flags.items()]
    return lines + [""]


def attention_section(results):
    """Every submission with notes, and the notes: why it needed attention."""
    lines = ["## Needs attention", ""]
    flagged = [result for result in results if result.notes]
    if not flagged:
        return lines + ["Nothing: every submission was graded without incident.", ""]
    for result in flagged:
        lines += [f"### {markdown(result.student, 100)} ({result.score:g} / {result.max_score:g})", ""]
        lines += [f"- {markdown(note)}" for note in result.notes[:40]]
        lines += [f"- … and {len(result.notes) - 40} more notes"] if len(result.notes) > 40 else []
        lines += [""]
    return lines


def info_section(results):
    """What was done that needs no one (a renamed notebook graded, extra files not graded), to look up if asked."""
    lines = [f"- **{markdown(result.student, 100)}**: {markdown(note)}" for result in results
             for note in result.info[:20] + ([f"… and {len(result.info) - 20} more"] if len(result.info) > 20 else [])]
    return ["## Also noted (no action needed)", ""] + lines + [""] if lines else []


def failures_section(results):
    """The grader's sentence for each failed task (the first three per submission)."""
    lines = ["## Why tasks failed", ""]
    for result in results:
        failed = [verdict for verdict in result.verdicts.values() if not verdict.score]
        if failed:
            lines += [f"- **{markdown(result.student, 100)}**: " + " ".join(markdown(v.message) for v in failed[:3])
                      + (f" (and {len(failed) - 3} more)" if len(failed) > 3 else "")]
    return lines + [""]


def load_line(load):
    """The machine's load while grading ran, from grading.jobs.LoadSampler's summary."""
    return (f"Load during grading (1-minute load average, sampled every {load['every']:g} s, {load['samples']} "
            f"samples): mean {load['mean']:.1f}, highest {load['max']:.1f}, on {load['cores']} cores; time limits "
            "count CPU time, so the load changes no score.")


def limits_section(results):
    """Every submission whose probe reached a time limit: which cell, which limit, the CPU and wall seconds used."""
    reached = [result for result in results if result.limits]
    if not reached:
        return []
    lines = ["## Time limits reached", "",
             "A cell's limit counts its CPU time; a wall-clock backstop stops cells that sleep or hang; one stopped "
             "by the backstop on an oversubscribed machine was run again alone before it could score 0.", ""]
    for result in reached:
        for limit in result.limits:
            lines.append(f"- **{markdown(result.student, 100)}**, {markdown(limit['cell'], 200)}: {limit['kind']} "
                         f"reached after {limit['cpu']:.0f} s of CPU time in {limit['wall']:.0f} s (load "
                         f"{limit['load']:.1f} per core{', running alone' if limit['alone'] else ''}): {limit['then']}")
    return lines + [""]


def write_report(path, assignment, results, context):
    """The instructor's report, in Markdown.

    Args:
        results: one grading result per submission (student, score, max_score, verdicts, notes, info, seconds,
            flags, limits).
        context: dict with "jobs", "sandbox" (what containment was found, or the warning without it), "seconds",
            "load" (grading.jobs.LoadSampler.summary; optional) and "problems" (run-level notes).
    """
    lines = [f"# Grading report: {assignment}", "",
             f"{len(results)} submission(s) graded on {datetime.now():%Y-%m-%d %H:%M} with {context['jobs']} "
             f"job(s) in {context['seconds']:.0f} s; sandbox: {context['sandbox']}.",
             "Scores come from the grader's own comparison with the reference (hidden tests included); "
             "nothing a notebook prints or patches changes them."]
    lines += [load_line(context["load"]), ""] if context.get("load") else [""]
    lines += [f"**{markdown(problem, 2000)}**" for problem in context.get("problems", [])] + [""] \
        if context.get("problems") else []
    lines += summary_table(results) + [""] + flagged_section(results) + limits_section(results)
    lines += attention_section(results) + info_section(results)
    lines += failures_section(results)
    path.write_text(encodable("\n".join(lines)), encoding="utf-8")
