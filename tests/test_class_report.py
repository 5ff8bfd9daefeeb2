"""`make report` (grading/classreport): the class report counts what was planted, escapes what it shows, and renders in
a browser without errors.

A class is written as the grader's record (reports/<a>/graded.json, grading/publish/class_record.py) with known
mistakes planted in known numbers; the report's tables and diagnoses.csv must hold exactly those counts. The page is
then opened in headless Chromium (Debian's `chromium`, which .ci/run installs; skipped saying why where it is missing):
the screenshot must show a page, and the browser's console must report no error (a page with a broken script, the
control, must report one). course/<a>/tests/test_grading.py builds the report from really graded submissions.
"""
import csv
import json
import shutil
import subprocess

import matplotlib.image
import pytest

from course.registry import assignments
from course_paths import ROOT
from grading.classreport.page import html
from grading.classreport.tables import blanked, count, load_record
from grading.judge import known_diagnoses
from submissions import make_report

NAME = assignments()[0].name
KNOWN = known_diagnoses(assignments()[0])
TASKS = sorted(KNOWN)
CHROMIUM = shutil.which("chromium")


def planted():
    """(record, {id: students}): 20 students; two named mistakes on the first task (7 and 3 students), one on the
    second (4); 2 more students fail the second task with no named mistake; the rest pass everything."""
    first, second = sorted(KNOWN[TASKS[0]])[:2], sorted(KNOWN[TASKS[1]])[0]
    plan = [(TASKS[0], first[0])] * 7 + [(TASKS[0], first[1])] * 3 + [(TASKS[1], second)] * 4 + [(TASKS[1], "")] * 2
    record = {}
    for index in range(20):
        failed = dict([plan[index]]) if index < len(plan) else {}
        if index < 3:
            failed[TASKS[1]] = ""  # three of the seven also fail the second task: failed together
        tasks = {str(task): {"score": 0.0 if task in failed else 1.0, "points": 1.0, "diagnosis": failed.get(task, "")}
                 for task in TASKS}
        record[f"s{index:02d}"] = {"score": sum(v["score"] for v in tasks.values()), "max_score": float(len(TASKS)),
                                   "seconds": 10.0 + index, "tasks": tasks}
    return record, {first[0]: 7, first[1]: 3, second: 4}


def course_with(tmp_path, record):
    shutil.copy(ROOT / "course.toml", tmp_path)
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    folder = tmp_path / "reports" / NAME
    folder.mkdir(parents=True)
    (folder / "graded.json").write_text(json.dumps(record))
    return folder


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """The report folder of the planted class, after `python -m grading.classreport` (what `make report` runs)."""
    course = tmp_path_factory.mktemp("course")
    folder = course_with(course, planted()[0])
    make_report(course, NAME)
    return folder


@pytest.mark.fast
def test_the_counts_are_what_was_planted(reported):
    folder, expected = reported, planted()[1]
    with open(folder / "diagnoses.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert {row["diagnosis"]: int(row["students"]) for row in rows} == expected
    assert [row["diagnosis"] for row in rows][0] == max(expected, key=expected.get)  # the most frequent first
    assert all(row["sentence"] == blanked(KNOWN[int(row["task"])][row["diagnosis"]]) for row in rows)
    tables = count(load_record(folder / "graded.json"), {})
    assert tables.passed[TASKS[0]] == 10 and tables.passed[TASKS[1]] == 20 - 4 - 2 - 3
    assert tables.together[0] == ((TASKS[0], TASKS[1]), 3)
    page = (folder / "class_report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 4 and "<script" not in page
    assert "http" not in page and "s00" not in page  # it loads nothing from anywhere and names no student


@pytest.mark.fast
@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the course's git checkout")
def test_what_the_reports_hold_is_never_committed():
    written = [f"reports/{NAME}/{name}" for name in ("graded.json", "class_report.html", "diagnoses.csv",
                                                      "similarity.html", "similarity.csv")]
    done = subprocess.run(["git", "check-ignore", *written], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.split() == written, done.stdout + done.stderr


@pytest.mark.fast
def test_whatever_the_record_holds_is_shown_as_text(tmp_path):
    record, _ = planted()
    record["s00"]["tasks"][str(TASKS[0])]["diagnosis"] = f"{NAME}.{TASKS[0]}.<img src=x onerror=alert(1)>"
    page = html("<b>title</b>", count({k: dict(v, tasks={int(t): x for t, x in v["tasks"].items()})
                                       for k, v in record.items()}, {}))
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<b>title</b>" not in page


def console_errors(page, screenshot):
    """The console errors Chromium logged while rendering page to a screenshot (a PNG at screenshot)."""
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr", "--v=0",
         f"--user-data-dir={screenshot.parent / 'profile'}", f"--screenshot={screenshot}", "--window-size=1000,3000",
         page.as_uri()], capture_output=True, text=True, timeout=120)
    assert screenshot.is_file(), done.stderr[-2000:]
    return [line for line in done.stderr.splitlines() if "CONSOLE" in line and ("Error" in line or "Uncaught" in line)]


@pytest.mark.full
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium; .ci/run installs it)")
def test_the_page_renders_in_headless_chromium_without_console_errors(reported, tmp_path):
    shot = tmp_path / "report.png"
    assert console_errors(reported / "class_report.html", shot) == []
    pixels = matplotlib.image.imread(shot)  # (H, W, channels) in [0, 1]
    assert pixels.shape[0] >= 1000 and pixels.std() > 0.05  # a drawn page, not a blank one
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><body><p>control</p><script>undefinedFunction()</script></body></html>")
    assert console_errors(broken, tmp_path / "broken.png"), "the control's script error was not seen"
