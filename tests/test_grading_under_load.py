"""An honest full solution graded beside a CPU hog keeps full marks: limits count CPU time, not the machine's load.

The hog (`python -c "while True: pass"`, started here) takes a core's worth of CPU for the whole run, on top of
whatever else the machine runs (in `make test`, the other worker's tests); the full solution of the registry's first
assignment (course_paths; its training cells use a small part of their 300 s CPU limits on a 2-core machine) is
collected and graded with `grade --jobs 2`. The report must give the load it was graded under, name no CPU limit
reached and nothing that needs attention, and the feedback must hold no hidden case. This is the course's one grading
of a full solution of the vehicle: its own end-to-end test grades the rest of its kinds of submission without training
(course/<name>/tests/test_grading.py). One hog, not two: the second one's CPU time bought
no check the first does not (the whole suite is also run at a load average of 8: docs/bench.md). Select it with
`pytest -m grading`.
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
def graded_beside_a_hog(tmp_path_factory):
    """(course, submissions, grade's output) after grading the full solution with a CPU hog running."""
    course = scratch_course(tmp_path_factory.mktemp("loaded"))
    submissions = {"honest": (f"honest_{NAME}.ipynb", read(SOURCE), dict(POINTS))}
    hog = subprocess.Popen([sys.executable, "-c", HOG])
    try:
        _, output = collect_and_grade(course, NAME, submissions)
        assert hog.poll() is None  # it ran the whole time
    finally:
        hog.kill()
        hog.wait()
    return course, submissions, output


@pytest.mark.grading
def test_an_honest_solution_beside_a_cpu_hog_keeps_full_marks(graded_beside_a_hog):
    course, submissions, output = graded_beside_a_hog
    assert not wrong_scores(course, NAME, submissions)
    report = (course / f"grading_report_{NAME}.md").read_text()
    limits = limits_section(report)
    load = [line for line in report.splitlines() if line.startswith("Load during grading (1-minute load average")]
    print(f"\nbeside a hog: {seconds_per_submission(output)} s; {load}\n{limits}")
    assert load
    assert "CPU limit" not in limits and "whole notebook" not in limits
    assert not report_sections(report), "an honest full solution needs no one's attention"
    assert not hidden_lines_in_feedback(course, NAME, list(submissions))
