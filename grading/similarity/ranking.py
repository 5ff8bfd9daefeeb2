"""Run copydetect over the students' code and rank the pairs."""
import csv
import tempfile
from contextlib import contextmanager
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
from matplotlib._pylab_helpers import Gcf
from copydetect import CopyDetector

from .extract import answers_by_student, release_code

COLUMNS = ["student_a", "student_b", "similarity", "a_in_b", "b_in_a", "shared_tokens"]
LAYOUT = {"figure.constrained_layout.use": False, "figure.autolayout": False}
SHOWN = 100  # pairs the page shows at most (the CSV has every pair): 400 students of 5 answers made a 675 MB page


def write_sources(folder, code_by_student, boilerplate):
    """students/<id>.py for each student and boilerplate/release.py, under folder."""
    (folder / "students").mkdir(parents=True)
    (folder / "boilerplate").mkdir()
    for student, code in code_by_student.items():
        (folder / "students" / f"{student}.py").write_text(code, encoding="utf-8")
    (folder / "boilerplate" / "release.py").write_text(boilerplate, encoding="utf-8")


def ranked_pairs(detector):
    """[row per pair of students]: a_in_b is the share of a's code also found in b's; ranked by the larger share."""
    names = [Path(path).stem for path in detector.test_files]
    rows = []
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            a_in_b, b_in_a = (float(share) for share in detector.similarity_matrix[i, j])
            rows.append({"student_a": a, "student_b": names[j], "similarity": max(a_in_b, b_in_a), "a_in_b": a_in_b,
                         "b_in_a": b_in_a, "shared_tokens": int(detector.token_overlap_matrix[i, j])})
    return sorted(rows, key=lambda row: (-row["similarity"], row["student_a"], row["student_b"]))


def rounded(row):
    return {column: round(value, 4) if isinstance(value, float) else value for column, value in row.items()}


@contextmanager
def own_figures():
    """pyplot with no figure open, then as it was: copydetect draws on pyplot's current figure, which would otherwise
    be one its caller left open (with a layout of its own that tight_layout cannot replace)."""
    left_open = dict(Gcf.figs)
    Gcf.figs.clear()
    try:
        yield
    finally:
        plt.close("all")
        Gcf.figs.update(left_open)


def compare(course, out_folder, display=0.3):
    """Write similarity.html and similarity.csv for the course's assignment; (rows, students left out)."""
    code_by_student, skipped = answers_by_student(course)
    out_folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        write_sources(folder, code_by_student, release_code(course))
        detector = CopyDetector(test_dirs=[str(folder / "students")], boilerplate_dirs=[str(folder / "boilerplate")],
                                extensions=["py"], display_t=display, autoopen=False, silent=True,
                                out_file=str(out_folder / "similarity.html"))
        detector.run()
        rows = ranked_pairs(detector) if len(code_by_student) > 1 else []
        if rows:
            shown = rows[min(SHOWN, len(rows)) - 1]["similarity"]  # the page: pairs from the SHOWN-th up
            detector.conf.display_t = max(display, shown - 1e-9)
            with matplotlib.rc_context(LAYOUT), own_figures():  # its plots call tight_layout: see both
                detector.generate_html_report()
    with open(out_folder / "similarity.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, COLUMNS)
        writer.writeheader()
        writer.writerows(rounded(row) for row in rows)
    return [rounded(row) for row in rows], skipped
