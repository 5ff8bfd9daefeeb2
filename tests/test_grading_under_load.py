"""An honest full solution graded beside two CPU hogs keeps full marks: limits count CPU time, not the machine's load.

The hogs (`python -c "while True: pass"`, started here) take two cores' worth of CPU for the whole run, on top of
whatever else the machine runs; the full solution of the registry's first assignment (course_paths; its training cells
use a small part of their 300 s CPU limits on a 2-core machine) is collected and graded with `grade --jobs 2`. The
report must give the load it was graded under, name no CPU limit reached and nothing that needs attention, and the
feedback must hold no hidden case. This is the course's one grading of a full solution of the vehicle: its own
end-to-end test grades the rest of its kinds of submission without training (course/<name>/tests/test_grading.py).
Select it with `pytest -m grading`.
"""
import subprocess
import sys

import pytest

from course_paths import NAME, POINTS, SOURCE
from grading.match.notebook import read
from submissions import (collect_and_grade, hidden_lines_in_feedback, limits_section, report_sections, scratch_course,
                         seconds_per_submission, wrong_scores)

HOG = "while True: pass"


@pytest.fixture(scope="module")
def graded_beside_hogs(tmp_path_factory):
    """(course, submissions, grade's output) after grading the full solution with two CPU hogs running."""
    course = scratch_course(tmp_path_factory.mktemp("loaded"))
    submissions = {"honest": (f"honest_{NAME}.ipynb", read(SOURCE), dict(POINTS))}
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(2)]
    try:
        _, output = collect_and_grade(course, NAME, submissions)
        assert all(hog.poll() is None for hog in hogs)  # they ran the whole time
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    return course, submissions, output


@pytest.mark.grading
def test_an_honest_solution_beside_cpu_hogs_keeps_full_marks(graded_beside_hogs):
    course, submissions, output = graded_beside_hogs
    assert not wrong_scores(course, NAME, submissions)
    report = (course / f"grading_report_{NAME}.md").read_text()
    limits = limits_section(report)
    load = [line for line in report.splitlines() if line.startswith("Load during grading (1-minute load average")]
    print(f"\nbeside two hogs: {seconds_per_submission(output)} s; {load}\n{limits}")
    assert load
    assert "CPU limit" not in limits and "whole notebook" not in limits
    assert not report_sections(report), "an honest full solution needs no one's attention"
    assert not hidden_lines_in_feedback(course, NAME, list(submissions))
