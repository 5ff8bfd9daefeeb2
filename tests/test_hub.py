"""The course on a real JupyterHub, end to end (issue 44): the instructor releases into nbgrader's exchange; three
students (honest, partial, blank), each a Unix user of their own, log in, start their server, fetch, answer through
the contents API, run the first check cell on their own kernel and submit; a fourth submission, written by one student
in another's name, is left out of the collection; the instructor collects, grades in the sandbox and releases
feedback; each student fetches their own feedback and cannot reach anyone else's. The scores equal those of the same
notebooks collected from an LMS zip. Two screenshots: the Assignment List in a student's JupyterLab, and the released
feedback.

Runs once per module (one hub); each test below asserts one part of what it recorded. The screenshots are written to
$HUB_SCREENSHOTS when set (to look at them), else into the test's own folder.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import pytest

import devtools
import hub_session
from course import registry
from course_paths import DEFINITION_TASKS, NAME, POINTS, ROOT, SOURCE
from grading.sandbox import sandbox
from submissions import (collect_and_grade, csv_rows, reference_answers, scratch_course,
                         with_answers)

pytestmark = [pytest.mark.full, pytest.mark.grading, pytest.mark.hub]  # grading: started first in make test-all

WHY_NOT = hub_session.missing() or (None if sandbox.bwrap_version() else
                                    "needs root and bubblewrap for make grade's sandbox (apt-get install bubblewrap)")
if WHY_NOT is None and devtools.CHROMIUM is None:
    WHY_NOT = "needs Debian's chromium for the screenshots (apt-get install chromium; .ci/run installs it)"
PARTIAL_TASKS = sorted(DEFINITION_TASKS)[:3]  # the partial student answers these definition tasks and nothing else
FIRST = min(POINTS)  # the task whose check cell each student runs on their own kernel


def answered(notebook, kind):
    """The fetched notebook with the answers of an honest (every task), partial or blank student."""
    if kind == "honest":
        return with_answers(notebook, reference_answers(SOURCE))
    if kind == "partial":
        answers = {key: value for key, value in reference_answers(SOURCE).items()
                   if int(key.split("_")[1]) in PARTIAL_TASKS}
        return with_answers(notebook, answers)
    return notebook


def through_first_check(notebook):
    """The sources of the code cells up to and including the first task's check cell."""
    sources = []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            sources.append("".join(cell["source"]))
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == f"check_task_{FIRST}":
                return sources
    raise AssertionError("no check cell of the first task")


def run(*command, cwd=ROOT, user=None):
    """(exit status, output) of a command, as root or as a Unix user."""
    if user:
        command = ("runuser", "-u", user, "--", *command)
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def exchange_step(course, exchange, step):
    return run(sys.executable, "-m", "grading.exchange", step, "--assignment", NAME, "--course", str(course),
               "--exchange", str(exchange))


def plant_spoof(exchange, course_id, victim, writer):
    """A submission in victim's name, written by writer into the inbound (which lets every user create entries), a
    day later than anything real: the one nbgrader would collect for victim."""
    spoof = exchange / course_id / "inbound" / f"{victim}+{NAME}+2099-01-01 00:00:00.000000 UTC+spoof"
    status, output = run("bash", "-c", f'mkdir "{spoof}" && cp ~/{NAME}/{NAME}.ipynb "{spoof}/" && '
                         f'echo "2099-01-01 00:00:00.000000 UTC" > "{spoof}/timestamp.txt"', user=writer)
    assert status == 0, output
    return spoof


def feedback_pages(student):
    """{path: HTML} of the feedback pages the student's own server holds after fetching."""
    pages = {}
    status, folder = student.server("GET", f"/api/contents/{NAME}/feedback")
    assert status == 200, (status, folder)
    for fetched in folder["content"]:
        for item in student.read(fetched["path"]):
            if item["name"].endswith(".html"):
                pages[item["path"]] = student.read(item["path"])
    return pages


def reach_others(students, course, exchange, course_id):
    """What one student gets when reaching for another's work: {attempt: (status, output)}."""
    prying, victim = students["partial"], students["honest"]
    return {
        "list the exchange's released feedback": run("ls", str(exchange / course_id / "feedback"), user=prying.name),
        "read the other's home folder": run("cat", f"/home/{victim.name}/{NAME}/{NAME}.ipynb", user=prying.name),
        "list the instructor's course folder": run("ls", str(course / "feedback"), user=prying.name),
        "the other's server with one's own token": prying.request("GET", f"/user/{victim.name}/api/contents/{NAME}"),
        "the other's account through the hub's API": prying.request("GET", f"/hub/api/users/{victim.name}"),
    }


def notes_by_student(course):
    """{student: the grading report's text about them}, from the report's per-student sections."""
    text = (course / f"grading_report_{NAME}.md").read_text()
    sections = re.split(r"^### ", text, flags=re.MULTILINE)[1:]
    return {section.split(" ", 1)[0]: section for section in sections}


def scores(course):
    """{(student, task): score} from a graded course's grades_by_task.csv."""
    return {(row["student_id"], int(row["task"])): float(row["score"])
            for row in csv_rows(course / "grades_by_task.csv")}


def lms_route(course, folder, names):
    """The same submitted notebooks zipped as an LMS download, collected and graded in a course of their own."""
    lms = scratch_course(folder)
    submitted = {name: (f"{name}/{NAME}.ipynb",
                        json.loads((course / "submitted" / name / NAME / f"{NAME}.ipynb").read_text()), {})
                 for name in names}
    collect_and_grade(lms, NAME, submitted)
    return scores(lms)


def screenshots(hub, student, page, folder):
    """The Assignment List in the student's JupyterLab and their feedback page, as Chromium shows them after logging
    in with the hub's form: {name: (PNG path, the text the page shows)}."""
    shots = {}
    with devtools.Browser(folder / "chromium") as browser:
        browser.open(f"{hub.url}/hub/login")
        browser.wait_for("!!document.querySelector('input[name=username]')")
        browser.evaluate(f"document.querySelector('input[name=username]').value = {student.name!r};"
                         "document.querySelector('input[name=password]').value = 'any';"
                         "document.querySelector('form').submit(); true")
        browser.wait_for("!!window.jupyterapp?.commands.hasCommand('nbgrader:open-assignment-list')")
        browser.evaluate("window.jupyterapp.commands.execute('nbgrader:open-assignment-list').then(() => true)")
        text = browser.wait_for(f"(t => t.includes('Submitted assignments') && t.includes({NAME!r}) && t)"
                                "(document.body.innerText)")
        browser.evaluate("window.jupyterapp.shell.collapseLeft(); true")  # the Assignment List across the page
        shots["assignment_list"] = (browser.screenshot(folder / "assignment_list.png"), text)
        browser.open(f"{hub.url}/user/{student.name}/files/{page}")
        text = browser.wait_for("(t => t.includes('Score:') && t)(document.body ? document.body.innerText : '')")
        shots["feedback"] = (browser.screenshot(folder / "feedback.png"), text)
    return shots


@pytest.fixture(scope="module")
def hub_run(tmp_path_factory):
    """Everything the hub route did and showed (see the module's docstring)."""
    if WHY_NOT:
        pytest.skip(WHY_NOT)
    base = tmp_path_factory.mktemp("hub")  # root's alone: pytest keeps its folders private (mode 700)
    course = scratch_course(base / "course")
    os.chmod(course, 0o700)  # what students must never read: every submission and every feedback page
    with hub_session.shared_folder() as shared:  # what every student reads: the exchange, the servers' Python
        exchange, python = shared / "exchange", hub_session.student_python(shared / "env")
        seen = {"release": exchange_step(course, exchange, "release")}
        with hub_session.readable_by_all(ROOT, python), hub_session.unix_users(3) as names, \
                hub_session.Hub(base / "hub", names, python, exchange) as hub:
            seen.update(through_the_hub(hub, names, course, exchange, base))
    seen["hub"] = scores(course)
    seen["report"] = notes_by_student(course)
    seen["lms"] = lms_route(course, base / "lms", names)
    return seen


def through_the_hub(hub, names, course, exchange, base):
    """The students' sessions, a spoofed submission, collection, grading, feedback, what others can reach, and the
    screenshots: {step: what it gave}."""
    course_id, seen = registry.course_id(course), {}
    students = dict(zip(("honest", "partial", "blank"), (hub_session.Student(hub, name) for name in names)))
    seen["students"] = {kind: student.name for kind, student in students.items()}
    seen["work"] = {kind: work(student, course_id, kind) for kind, student in students.items()}
    plant_spoof(exchange, course_id, students["honest"].name, students["blank"].name)
    seen["collect"] = exchange_step(course, exchange, "collect")
    seen["grade"] = run(sys.executable, "-m", "grading.grade", "--assignment", NAME, "--jobs", "2",
                        "--course", str(course))
    seen["feedback"] = exchange_step(course, exchange, "feedback")
    for student in students.values():
        student.act("fetch_feedback", course_id, NAME)
    seen["pages"] = {kind: feedback_pages(student) for kind, student in students.items()}
    seen["others"] = reach_others(students, course, exchange, course_id)
    shots = Path(os.environ.get("HUB_SCREENSHOTS") or base / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    seen["shots"] = screenshots(hub, students["honest"], next(iter(seen["pages"]["honest"])), shots)
    return seen


def work(student, course_id, kind):
    """A student's session: log in, start the server, fetch, answer, run the first check on their kernel, submit."""
    student.log_in()
    student.start_server()
    listed = student.assignments(course_id)
    student.act("fetch", course_id, NAME)
    notebook = answered(student.read(f"{NAME}/{NAME}.ipynb"), kind)
    student.write_notebook(f"{NAME}/{NAME}.ipynb", notebook)
    check = student.run(through_first_check(notebook), NAME)[-1]
    submitted = student.act("submit", course_id, NAME)
    return {"listed": listed, "check": check, "submitted": submitted}


# ----- What the hub route did ----------------------------------------------------------------------------------------

def test_the_release_reaches_every_students_assignment_list_and_they_fetch_and_submit(hub_run):
    assert hub_run["release"][0] == 0, hub_run["release"][1]
    for kind, work in hub_run["work"].items():
        assert [(item["assignment_id"], item["status"]) for item in work["listed"]] == [(NAME, "released")], kind
        statuses = {item["status"] for item in work["submitted"]}
        assert "submitted" in statuses, (kind, work["submitted"])


def test_a_check_cell_runs_on_the_students_own_kernel_and_says_what_it_found(hub_run):
    checks = {kind: work["check"] for kind, work in hub_run["work"].items()}
    passed = f"✓ Task {FIRST} passed"
    assert checks["honest"].startswith(passed) and checks["partial"].startswith(passed), checks
    assert f"Task {FIRST}" in checks["blank"] and "✓" not in checks["blank"], checks["blank"]


def test_a_submission_written_in_another_students_name_is_set_aside_and_noted_against_its_writer(hub_run):
    status, output = hub_run["collect"]
    victim, writer = hub_run["students"]["honest"], hub_run["students"]["blank"]
    assert status == 0 and f"names {victim} but was written by {writer}: moved to" in output, output
    assert all(f"Collecting submission: {name}" in output for name in hub_run["students"].values()), output
    assert f"in {victim}'s name" in hub_run["report"][writer]  # the victim's own submission was graded (scores test)


def test_the_grades_are_those_an_lms_download_of_the_same_notebooks_gets(hub_run):
    assert hub_run["grade"][0] == 0, hub_run["grade"][1][-3000:]
    names = hub_run["students"]
    totals = {kind: sum(score for (student, _), score in hub_run["hub"].items() if student == names[kind])
              for kind in names}
    assert totals == {"honest": sum(POINTS.values()), "partial": sum(POINTS[task] for task in PARTIAL_TASKS),
                      "blank": 0}, hub_run["hub"]
    assert hub_run["hub"] == hub_run["lms"]


def test_each_student_fetches_their_own_feedback_and_cannot_reach_anyone_elses(hub_run):
    assert hub_run["feedback"][0] == 0, hub_run["feedback"][1]
    names = hub_run["students"]
    for kind, pages in hub_run["pages"].items():
        assert len(pages) == 1, (kind, list(pages))
        own = sum(score for (student, _), score in hub_run["hub"].items() if student == names[kind])
        assert f"(Score: {own:.1f} / {float(sum(POINTS.values())):.1f})" in next(iter(pages.values())), kind
    refused = {attempt: outcome[0] for attempt, outcome in hub_run["others"].items()}
    assert all(status not in (0, 200) for status in refused.values()), hub_run["others"]


def test_the_students_jupyterlab_and_feedback_page_look_right(hub_run):
    assert NAME in hub_run["shots"]["assignment_list"][1]
    assert "Score:" in hub_run["shots"]["feedback"][1]
    for path, _ in hub_run["shots"].values():
        pixels = matplotlib.image.imread(path)  # (H, W, channels) in [0, 1]
        drawn = (pixels[..., :3] < 0.8).any(axis=-1).mean()  # the share of pixels that are not white or near it
        assert pixels.shape[:2] == (900, 1400) and drawn > 0.01, (path, drawn)  # a drawn page, not a blank one
