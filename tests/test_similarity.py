"""`make similarity` (grading/similarity): on a class of honest answers written independently (each assignment's
valid variants, course/<a>/tests/similarity_class.py) and one student who copied another's answers with the
variables renamed and the functions reordered, the copied pair ranks first, clearly above every honest pair.
"""
import csv
import importlib
import json
import re

import matplotlib
import matplotlib.pyplot as plt
import pytest

from course.registry import assignments
from grading.match.notebook import read
from grading.similarity.__main__ import main
from submissions import scratch_course, with_answers

pytestmark = pytest.mark.fast

WITH_CLASS = [registered for registered in assignments()
              if importlib.util.find_spec(f"course.{registered.name}.tests.similarity_class")]
RENAMED = {"query": "q_vectors", "key": "k_vectors", "value": "v_vectors", "mask": "allowed", "scores": "logits",
           "attention": "weights", "x": "inputs", "embed_dim": "width", "num_heads": "heads", "hidden": "inner",
           "mean": "centre", "variance": "spread", "eps": "epsilon", "seq_len": "length", "size": "count"}


SCRIPT = 'print("<script>alert(1)</script>")\n'  # shown in the report as text, never run by a browser


def disguised(source):
    """A copy as a student hides one: every name of RENAMED renamed, and the cell's top-level definitions reversed."""
    renamed = re.sub(r"\b(" + "|".join(RENAMED) + r")\b", lambda found: RENAMED[found.group(1)], source)
    blocks = re.split(r"\n(?=(?:def|class) )", renamed.strip())
    return "\n".join(reversed(blocks)) + "\n"


def class_of(registered, course):
    """Honest students 0..K-1 (student k answers every cell with its k-th variant) and 'copier', who took student
    0's answers disguised; writes their notebooks under submitted/."""
    honest = importlib.import_module(f"course.{registered.name}.tests.similarity_class").HONEST
    count = min(len(sources) for sources in honest.values())
    answers = {f"student{k}": {grade_id: sources[k] for grade_id, sources in honest.items()} for k in range(count)}
    answers["copier"] = {grade_id: disguised(source) + SCRIPT for grade_id, source in answers["student0"].items()}
    release = read(registered.release_notebook)
    for student, cells in answers.items():
        folder = course / "submitted" / student / registered.name
        folder.mkdir(parents=True)
        (folder / f"{registered.name}.ipynb").write_text(json.dumps(with_answers(release, cells)))
    return count


@pytest.mark.parametrize("registered", WITH_CLASS, ids=lambda registered: registered.name)
def test_a_disguised_copy_ranks_first_clearly_above_every_honest_pair(registered, tmp_path, monkeypatch):
    """With matplotlib's constrained layout on, as the course's plot style leaves it in a worker that ran a notebook's
    plots before: copydetect's page calls tight_layout, which that setting broke."""
    course = scratch_course(tmp_path / "course")
    monkeypatch.setitem(matplotlib.rcParams, "figure.constrained_layout.use", True)
    honest = class_of(registered, course)
    main(["--course", str(course), "--assignment", registered.name])
    report = course / "reports" / registered.name
    with open(report / "similarity.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == (honest + 1) * honest // 2  # every pair, once
    first, rest = rows[0], rows[1:]
    assert {first["student_a"], first["student_b"]} == {"student0", "copier"}, rows[:3]
    copied, best_honest = float(first["similarity"]), max(float(row["similarity"]) for row in rest)
    print(f"\n{registered.name}: the copied pair {copied:.2f}, the most similar honest pair {best_honest:.2f}")
    # renaming and reordering leave a copy nearly whole; the honest pairs of short answers by one author (one
    # assignment's two short tasks) reached 0.63 here, so "clearly above" is a margin of a quarter, not a ratio
    assert copied >= 0.9 and copied - best_honest >= 0.25, rows[:3]
    page = (report / "similarity.html").read_text()
    shown = page.split("Matched Code", 1)[1]  # the pairs' table, their code side by side
    assert "student0" in shown and "copier" in shown and "<script>alert" not in page and "&lt;script&gt;" in shown


def test_two_assignments_have_a_test_class():
    assert len(WITH_CLASS) >= 2


def test_the_page_shows_the_most_similar_pairs_only_and_the_csv_every_pair(tmp_path, monkeypatch):
    """A class of thousands would make a page of gigabytes: the page stops at ranking.SHOWN pairs. Run beside a figure
    left open with constrained layout and a colorbar (as a test before it in the worker once left one): copydetect
    draws on pyplot's current figure, so the page must be drawn on a figure of its own."""
    from grading.similarity import ranking
    monkeypatch.setattr(ranking, "SHOWN", 1)
    registered = WITH_CLASS[0]
    course = scratch_course(tmp_path / "course")
    honest = class_of(registered, course)
    left_open = plt.figure(layout="constrained")
    left_open.colorbar(left_open.subplots().imshow([[0.0, 1.0]]))
    try:
        main(["--course", str(course), "--assignment", registered.name])
        assert plt.gcf() is left_open and len(left_open.axes) == 2  # the caller's figure as it was, current again
    finally:
        plt.close(left_open)
    report = course / "reports" / registered.name
    assert len(list(csv.DictReader(open(report / "similarity.csv", newline="")))) == (honest + 1) * honest // 2
    shown = (report / "similarity.html").read_text().split("Matched Code", 1)[1]  # the pairs' table, code side by side
    assert "copier" in shown and "student0" in shown and not any(f"student{k}" in shown for k in range(1, honest))
