"""Red team, end to end: the costly and the sleeping attacks graded in one class beside an honest notebook.

One `grade --jobs 2` run (3 GiB of memory and 0.5 GiB of scratch per sandbox: this machine is shared; an allowance of
IDLE s asleep per notebook) grades the attacks whose mechanisms tests/test_redteam_budget.py and
tests/test_redteam_hidden.py test at unit level:
- manycells: 100,000 added cells, cut to the release's bound and flagged;
- linger: a thread and an atexit handler left running, torn down at the last record in one attempt;
- bigmodel: a trained model far above its task's defaults, refused unbuilt and flagged;
- asleep: cells that sleep past the allowance, stopped until grading gives up;
- hugemodel: a saved model too large for the grader to read, flagged as too large and not as tampering.
Each keeps the points of its honest answers. They share one run because the sleeper spends about a minute asleep:
graded beside the others (its name puts it first), that minute overlaps their CPU time. The vehicle is the registry's
first assignment (course_paths), with that assignment's own attacks (course/<name>/tests/vehicle.py). Needs root and
bubblewrap (marker `grading`); `pytest -s` prints the seconds per submission.
"""
import copy
import json
import re
import subprocess
import sys
import time

import pytest

from course_paths import DEFINITION_TASKS, NAME, RELEASE, ROOT, VEHICLE, vehicle_parts
from grading.match.notebook import read
from grading.sandbox import sandbox
from redteam_builders import extra_cell, many_cells
from submissions import (DEFINITION_POINTS, answer_id, csv_rows, definitions_only, edit_cell, flagged_section,
                         index_of, limits_section, report_sections, scratch_course, seconds_per_submission, without)

pytestmark = pytest.mark.full

LINGER = '''import atexit, threading, time
threading.Thread(target=time.sleep, args=(3600,)).start()  # not a daemon: Python's exit waits for it
atexit.register(time.sleep, 3600)  # and then for this
print("ATTACK RAN linger")
'''

# The course allows IDLE s asleep in all; SLEEPS cells of SLEEP s each, under the scratch course's cells' backstop
# (cpuclock.BACKSTOP x SCRATCH_CELL_SECONDS + GRACE = 40 s wall) and over GRACE (10 s), sleep past it: the first
# sleeps to its end, the second is stopped GRACE after the allowance is spent, and each later attempt's first
# sleep GRACE after it starts, until the fourth stopped cell ends grading (about a minute of wall-clock time in all).
IDLE, SLEEPS, SLEEP = 15, 6, 12
MEMORY_GIB, SCRATCH_GIB = 3, 0.5


def class_submissions():
    """{student: (notebook, {task: expected score})}: the honest notebook (the reference answers of the definition
    tasks) and the attacks, each on it.

    The sleeper's cells come after the vehicle's SLEEP_AFTER check cell and re-run in every attempt: past the
    allowance each is stopped, and after MAX_ATTEMPTS stopped cells grading gives up, so the task after them
    (UNREACHED_AFTER_SLEEP) is not reached. The big and the huge model answer the first training task."""
    parts, honest = vehicle_parts(), definitions_only()
    linger = copy.deepcopy(honest)
    linger["cells"].insert(index_of(linger, answer_id(linger, DEFINITION_TASKS[0])), {
        "cell_type": "code", "metadata": {}, "source": LINGER, "outputs": [], "execution_count": None})
    trained = answer_id(honest, VEHICLE.training_tasks[0])
    asleep = honest
    for number in range(SLEEPS):
        asleep = extra_cell(asleep, parts.SLEEP_AFTER, f"import time\ntime.sleep({SLEEP})  # {number}")
    return {"honest": (honest, DEFINITION_POINTS), "manycells": (many_cells(honest), DEFINITION_POINTS),
            "linger": (linger, DEFINITION_POINTS),
            "bigmodel": (edit_cell(copy.deepcopy(honest), trained, lambda _: parts.BIG_MODEL), DEFINITION_POINTS),
            "asleep": (asleep, without(DEFINITION_POINTS, parts.UNREACHED_AFTER_SLEEP)),
            "hugemodel": (extra_cell(honest, trained, parts.HUGE_MODEL), DEFINITION_POINTS)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(course, grade's stdout, seconds) after `grade --jobs 2` of the class."""
    if sandbox.bwrap_version() is None:
        pytest.skip("needs root and bubblewrap (`apt-get install bubblewrap`)")
    course = scratch_course(tmp_path_factory.mktemp("redteam"), idle_seconds=IDLE)
    for student, (notebook, _) in class_submissions().items():
        folder = course / "submitted" / student / NAME
        folder.mkdir(parents=True)
        (folder / f"{NAME}.ipynb").write_text(json.dumps(notebook))
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "grading.grade", "--jobs", "2", "--course", str(course),
                          "--assignment", NAME, "--memory", str(MEMORY_GIB), "--scratch", str(SCRATCH_GIB)],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    seconds = time.monotonic() - started
    print(f"\nred-team class, grade --jobs 2: {seconds:.0f} s; each: {seconds_per_submission(run.stdout)}")
    return course, run.stdout


def flagged_part(course):
    return flagged_section((course / f"grading_report_{NAME}.md").read_text().replace("\\", ""))


@pytest.mark.grading
def test_every_attacker_keeps_the_points_of_its_honest_answers(graded):
    course, _ = graded
    by_task = {(row["student_id"], int(row["task"])): float(row["score"])
               for row in csv_rows(course / "grades_by_task.csv")}
    for student, (_, expected) in class_submissions().items():
        assert {task: by_task[(student, task)] for task in expected} == expected, student


@pytest.mark.grading
def test_each_costly_submission_says_why_it_was_flagged(graded):
    course, _ = graded
    flagged = flagged_part(course)
    assert not re.search(r"\*\*(honest|linger|asleep)\*\*", flagged), flagged
    bound = len(read(RELEASE)["cells"]) * 4 + 50
    for task in DEFINITION_POINTS:
        assert f"**manycells**, task {task}: the notebook holds more than an honest one ({bound} cells" in flagged
    assert "left out" in flagged
    assert (f"**bigmodel**, task {VEHICLE.training_tasks[0]}: model settings beyond the task's defaults, not "
            f"evaluated: {vehicle_parts().BIG_MODEL_REFUSED}") in flagged


@pytest.mark.grading
def test_a_thread_and_atexit_left_running_end_at_the_last_record(graded):
    """The lingering notebook's probe was torn down at its done event, in one attempt, with no cell stopped."""
    course, _ = graded
    log = (course / "build" / "grading" / "logs" / "linger.log").read_text()
    assert log.endswith("[grader] attempts ended: done\n"), log[-500:]
    sections = report_sections((course / f"grading_report_{NAME}.md").read_text())
    assert "ran past" not in sections.get("linger", "") and "outlived" not in sections.get("linger", "")
    rendered = (course / "build" / "grading" / "rendered" / "linger" / NAME / f"{NAME}.ipynb").read_text()
    assert "ATTACK RAN linger" in rendered  # the attack did run


@pytest.mark.grading
def test_a_sleeper_is_stopped_at_its_allowance_and_a_huge_model_is_flagged_as_too_large(graded):
    course, _ = graded
    report = (course / f"grading_report_{NAME}.md").read_text()
    limits = limits_section(report)
    assert f"limit on sleeping ({IDLE} s without CPU use in all)" in limits and "**asleep**" in limits
    # The huge model's 50 M weights can take a provided cell after its training past the scratch course's 10 s limit
    # (the probe's alarm stops it there, and the report names every limit reached): allowed, not required.
    others = [student for student in class_submissions() if f"**{student}**" in limits]
    assert not set(others) - {"asleep", "hugemodel"}, limits
    assert "honest" not in report_sections(report)
    assert "idle" in (course / "build" / "grading" / "logs" / "asleep.log").read_text()
    flagged = flagged_part(course)
    assert f"**hugemodel**, task {VEHICLE.training_tasks[0]}: the saved model" in flagged
    assert "exceeds the 256 MiB" in flagged
    assert "tampering" not in flagged.split("**hugemodel**", 1)[1].split("\n- **", 1)[0]
