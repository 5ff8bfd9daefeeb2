"""Honest training beside a CPU hog keeps every point it earns: limits count CPU time, not the machine's load.

Two notebooks that train are graded at once (`grade --jobs 2`) beside a CPU hog (`python -c "while True: pass"`,
started here, running the whole time): the full solution of the registry's first assignment (course_paths), and the
same with the vehicle's planted mistake whose models still train (course/<name>/tests/vehicle.py TRAINED_MISTAKE).
The two probes and the hog ask for three cores' worth of CPU, on top of whatever else the machine runs; their
training cells use a small part of their 300 s CPU limits on a 2-core machine. The full solution must keep full marks
and the mistake lose that task's points alone (its trained tasks are judged from the weights, on the reference's
classes); the report must give the load it was graded under, name no CPU limit reached and no attention needed for
the full solution; no feedback may hold a hidden case. These are the course's only gradings of the vehicle's notebooks
that train: its own end-to-end test grades the rest of its kinds of submission without training
(course/<name>/tests/test_grading.py). Select it with `pytest -m grading`.
"""
import subprocess
import sys

import pytest

from course.slices import slice_of
from course_paths import NAME, POINTS, SOURCE, vehicle_parts
from grading.match.notebook import read
from submissions import (answer_id, collect_and_grade, edit_cell, hidden_lines_in_feedback, limits_section,
                         report_sections, scratch_course, seconds_per_submission, wrong_scores)

HOG = "while True: pass"


def trained_with_mistake():
    """(the vehicle's reference notebook with its TRAINED_MISTAKE planted, the points it earns)."""
    task, name = vehicle_parts().TRAINED_MISTAKE
    mutant = next(m for m in slice_of(NAME).mistakes.MUTANTS if (m.task, m.name) == (task, name))
    reference = read(SOURCE)
    notebook = edit_cell(reference, answer_id(reference, task), mutant.apply)
    return notebook, {number: 0 if number == task else points for number, points in POINTS.items()}


@pytest.fixture(scope="module")
def graded_beside_a_hog(tmp_path_factory):
    """(course, submissions, grade's output) after grading the two notebooks with a CPU hog running."""
    course = scratch_course(tmp_path_factory.mktemp("loaded"))
    mistake, earned = trained_with_mistake()
    submissions = {"honest": (f"honest_{NAME}.ipynb", read(SOURCE), dict(POINTS)),
                   "mistake": (f"mistake_{NAME}.ipynb", mistake, earned)}
    hog = subprocess.Popen([sys.executable, "-c", HOG])
    try:
        _, output = collect_and_grade(course, NAME, submissions)
        assert hog.poll() is None  # it ran the whole time
    finally:
        hog.kill()
        hog.wait()
    return course, submissions, output


@pytest.mark.grading
def test_training_beside_a_cpu_hog_keeps_every_point_it_earns(graded_beside_a_hog):
    course, submissions, output = graded_beside_a_hog
    assert not wrong_scores(course, NAME, submissions)
    report = (course / f"grading_report_{NAME}.md").read_text()
    limits = limits_section(report)
    load = [line for line in report.splitlines() if line.startswith("Load during grading (1-minute load average")]
    print(f"\nbeside a hog: {seconds_per_submission(output)} s; {load}\n{limits}")
    assert load
    assert "CPU limit" not in limits and "whole notebook" not in limits
    assert "honest" not in report_sections(report), "an honest full solution needs no one's attention"
    assert not hidden_lines_in_feedback(course, NAME, list(submissions))
