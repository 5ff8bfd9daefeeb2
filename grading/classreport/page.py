"""reports/<a>/class_report.html (self-contained: inline style, PNG figures as data: URIs, no script) and
reports/<a>/diagnoses.csv."""
import csv
import statistics
from datetime import datetime
from html import escape

from . import figures

STYLE = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}table{border-collapse:collapse;"
         "margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}"
         "img{display:block;margin:1em 0}.note{color:#555}")


def table(header, rows):
    """An HTML table; every cell escaped."""
    head = "".join(f"<th>{escape(str(cell))}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def share(n, tables):
    return f"{100 * n / max(tables.students, 1):.0f}%"


def mistakes_section(tables):
    if not tables.mistakes:
        return "<p>No failed task matched a named mistake.</p>"
    rows = [(task, ident, sentence, n, share(n, tables)) for task, ident, sentence, n in tables.mistakes]
    return (f'<img alt="named mistakes" src="{figures.named_mistakes(tables)}">'
            + table(("task", "mistake", "what the check tells the student", "students", "share"), rows))


def summary(tables):
    scores, seconds = tables.scores or [0], tables.seconds or [0]
    return (f"<p>{tables.students} students graded; score mean {statistics.mean(scores):.1f}, median "
            f"{statistics.median(scores):g} of {tables.max_score:g} points. Grading took "
            f"{statistics.median(seconds):.0f} s per submission at the median, {max(seconds):.0f} s at most.</p>")


def html(title, tables):
    """The page: the score distribution, pass rates, named mistakes, tasks failed together, grading times."""
    passed = [(task, n, share(n, tables)) for task, n in sorted(tables.passed.items())]
    together = [(f"{a} and {b}", n, share(n, tables)) for (a, b), n in tables.together[:10]]
    parts = [
        f"<h1>{escape(title)}: what the class got wrong</h1>", summary(tables),
        "<h2>Scores</h2>", f'<img alt="score distribution" src="{figures.score_histogram(tables)}">',
        "<h2>Each task's pass rate</h2>", f'<img alt="pass rates" src="{figures.pass_rates(tables)}">',
        table(("task", "students with full points", "share"), passed),
        "<h2>Named mistakes</h2>",
        '<p class="note">For each failed task, the mistake the notebook\'s own check named when the grader ran it '
        "(none when no named mistake fitted). It explains; the grader's hidden tests alone decide the score.</p>",
        mistakes_section(tables),
        "<h2>Tasks failed together</h2>",
        table(("tasks", "students who failed both", "share"), together) if together else "<p>No two tasks failed "
        "together.</p>",
        "<h2>Grading times</h2>", f'<img alt="grading times" src="{figures.grading_times(tables)}">',
        f'<p class="note">Written {datetime.now():%Y-%m-%d %H:%M} by make report.</p>']
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>")


def write_diagnoses(path, assignment, tables):
    """diagnoses.csv: one row per named mistake the class made, the most frequent first."""
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["assignment", "task", "diagnosis", "sentence", "students", "share"])
        writer.writerows((assignment, task, ident, sentence, n, f"{n / max(tables.students, 1):.3f}")
                         for task, ident, sentence, n in tables.mistakes)
