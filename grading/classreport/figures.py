"""The class report's figures, each a PNG as a data: URI (the page embeds them, so it opens offline)."""
import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after choosing the non-interactive backend
from matplotlib.ticker import MaxNLocator


def png(figure):
    """The figure as a data: URI; the figure is closed."""
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=80)
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def score_histogram(tables):
    """How many students scored each total."""
    figure, axes = plt.subplots(figsize=(6, 3))
    axes.hist(tables.scores, bins=max(1, min(20, int(tables.max_score) + 1)), range=(0, tables.max_score or 1),
              color="tab:blue", edgecolor="white")
    axes.set(title=f"Score distribution ({tables.students} students)", xlabel=f"score (points of {tables.max_score:g})",
             ylabel="students")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of students
    return png(figure)


def pass_rates(tables):
    """The share of the class with each task's full points."""
    figure, axes = plt.subplots(figsize=(6, 3))
    tasks = sorted(tables.passed)
    axes.bar([str(task) for task in tasks], [100 * tables.passed[task] / max(tables.students, 1) for task in tasks],
             color="tab:green")
    axes.set(title="Each task's pass rate", xlabel="task", ylabel="students with full points (%)", ylim=(0, 100))
    return png(figure)


def named_mistakes(tables, shown=12):
    """The most frequent named mistakes, as a share of the class."""
    rows = tables.mistakes[:shown]
    figure, axes = plt.subplots(figsize=(6, 0.6 + 0.35 * max(len(rows), 1)))
    labels = [ident.split(".", 1)[1] for _, ident, _, _ in rows][::-1]
    axes.barh(labels, [100 * n / max(tables.students, 1) for *_, n in rows][::-1], color="tab:red")
    axes.set(title="Named mistakes (task.mistake)", xlabel="share of the class (%)", ylabel="named mistake")
    return png(figure)


def grading_times(tables):
    """How long each submission took to grade."""
    figure, axes = plt.subplots(figsize=(6, 3))
    axes.hist(tables.seconds, bins=20, color="tab:gray", edgecolor="white")
    axes.set(title="Grading time per submission", xlabel="wall-clock time (s)", ylabel="submissions")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of submissions
    return png(figure)
