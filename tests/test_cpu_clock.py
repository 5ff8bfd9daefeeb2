"""The grader's CPU clock (grading/sandbox/cpuclock.py, supervise.py): a cell's limit counts the CPU time its sandbox
used, read from outside it; a wall-clock backstop stops what sleeps; a cell the backstop stops on an oversubscribed
machine runs again alone; `make grade` warns about JOBS beyond the free cores; the report names every limit reached.

A stand-in probe (PROBE) runs each cell's source as the real probe would, in the order and with the skips the
supervisor asks for, so these tests need neither torch in the sandbox nor a notebook. They run without a sandbox
(the /proc meter), and, with root and bubblewrap, in the sandbox with the /proc meter and with the cgroup one.
No assertion here is about wall-clock time: which limit stopped a cell is what the supervisor records.
"""
import os
import subprocess
import sys
import threading

import pytest

from course_paths import VEHICLE
from grading.publish.report import write_report
from grading.sandbox import cgroups, cpuclock, sandbox, supervise
from grading.match.program import ProgramCell
from grading.jobs import load_warning

BWRAP = sandbox.bwrap_version()
SLOT = 7  # a sandbox uid no other test grades with

PROBE = '''import json, os, sys
scratch = sys.argv[1]
program = json.load(open(os.path.join(scratch, "input", "program.json")))
skip = json.load(open(os.path.join(scratch, "input", "resume.json")))["skip"]
def event(kind, cell=-1):
    os.write(int(os.environ["GRADING_PROGRESS_FD"]), (json.dumps({"event": kind, "cell": cell}) + "\\n").encode())
for index, cell in enumerate(program):
    if index not in skip:
        event("start", index)
        exec(cell["source"], {})
        event("end", index)
event("done")
'''

BURN = '''import time
while True:
    pass
'''

SLEEP = '''import time
time.sleep(3600)
'''

# The cell's own process sleeps; children burn CPU until it kills them (and reaps them).
KILLED_CHILDREN = '''import os, signal, time
while True:
    child = os.fork()
    if child == 0:
        while True:
            pass
    time.sleep(0.3)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
'''

# Grandchildren orphaned at once burn a little each, then kill themselves; nobody of the cell's waits for them.
ORPHANS = '''import os, signal, time
while True:
    child = os.fork()
    if child == 0:
        if os.fork() == 0:
            end = time.process_time() + 0.1
            while time.process_time() < end:
                pass
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(0)
    os.waitpid(child, 0)
    time.sleep(0.05)
'''


def boxes():
    """The ways a probe can be run and metered here: (id, Sandbox factory)."""
    found = [pytest.param(lambda: sandbox.Sandbox("none"), id="none-proc")]
    needs = pytest.mark.skipif(BWRAP is None, reason="needs root and bubblewrap")
    found.append(pytest.param(lambda: sandbox.Sandbox("bwrap"), id="bwrap-proc", marks=needs))
    found.append(pytest.param(lambda: sandbox.choose("auto"), id="bwrap-cgroup", marks=[needs, pytest.mark.skipif(
        not cgroups.own_group("cpuacct")[0], reason="no cpuacct cgroup here")]))
    return found


def grade(tmp_path, box, *sources, limit=1.0):
    """run_probe on the stand-in probe with one cell per source; the ProbeRun."""
    runtime = tmp_path / "runtime"
    (runtime / "mpl").mkdir(parents=True, exist_ok=True)
    (runtime / "probe.py").write_text(PROBE)
    os.chmod(runtime, 0o755)
    program = [ProgramCell("given", source, limit) for source in sources]
    job = supervise.Job(program, tmp_path / "scratch" / "someone", runtime, box, slot=SLOT)
    return supervise.run_probe(job)


@pytest.fixture
def quick(monkeypatch):
    """A short grace, and a backstop so far off (60x the limit) that only the CPU limit can stop a busy cell."""
    monkeypatch.setattr(supervise, "GRACE", 0.5)
    monkeypatch.setattr(cpuclock, "BACKSTOP", 60.0)
    monkeypatch.setattr(supervise, "MAX_TOTAL", 30.0)


@pytest.mark.full
@pytest.mark.parametrize("make_box", boxes())
def test_a_cell_that_burns_cpu_is_stopped_by_its_cpu_limit(tmp_path, quick, make_box):
    run = grade(tmp_path, make_box(), BURN, "print('after')")
    assert [limit["kind"] for limit in run.limits] == ["CPU limit"], run.limits
    assert run.limits[0]["cpu"] >= 1.5 and run.limits[0]["then"] == "stopped"
    assert run.cells[0]["error"]["ename"] == "CellTimeoutError" and "limit of CPU time" in run.notes[0]
    assert len(run.notes) == 1, run.notes  # the next attempt, without the cell, ran to the end


@pytest.mark.full
@pytest.mark.parametrize("make_box", boxes())
@pytest.mark.parametrize("source", [KILLED_CHILDREN, ORPHANS], ids=["killed-children", "orphans"])
def test_cpu_of_processes_the_cell_forks_and_kills_is_counted(tmp_path, quick, make_box, source, request):
    """The cell itself sleeps: only the CPU of its dead children and orphans, counted from outside, stops it."""
    if source == ORPHANS and "none" in request.node.callspec.id:
        pytest.skip("without a sandbox an orphan leaves the probe's process tree (the sandbox's PID namespace and "
                    "uid are what keep it counted)")
    run = grade(tmp_path, make_box(), source)
    assert [limit["kind"] for limit in run.limits] == ["CPU limit"], run.limits


@pytest.mark.full
def test_a_cell_that_sleeps_is_stopped_by_the_backstop_not_the_cpu_limit(tmp_path, monkeypatch):
    """However busy the machine, a cell that sleeps was not starved: the backstop stops it once, for good."""
    monkeypatch.setattr(supervise, "GRACE", 0.5)
    run = grade(tmp_path, sandbox.Sandbox("none"), SLEEP, "print('after')", limit=0.4)  # backstop: 1.2 s + GRACE
    (limit,) = run.limits
    assert limit["kind"] == "wall-clock backstop" and limit["cpu"] < 1.0 and limit["then"] == "stopped", limit
    assert "it slept or waited" in run.cells[0]["error"]["evalue"]


@pytest.mark.fast
@pytest.mark.parametrize("waits, spent, starved", [
    (True, {"cpu": 30.0, "waited": 70.0, "load": 0.5}, True),  # runnable most of the time, on a CPU a third of it
    (True, {"cpu": 0.1, "waited": 0.2, "load": 6.0}, False),  # asleep on a busy machine
    (True, {"cpu": 60.0, "waited": 20.0, "load": 3.0}, False),  # got most of what it asked for: it hung later
    (False, {"cpu": 0.1, "waited": 0.0, "load": 1.5}, True),  # no run-queue waits here: the load decides
    (False, {"cpu": 0.1, "waited": 0.0, "load": 0.8}, False)])
def test_a_cell_is_starved_when_it_waited_for_a_cpu_longer_than_it_ran(monkeypatch, waits, spent, starved):
    monkeypatch.setattr(cpuclock, "WAITS", waits)
    assert cpuclock.oversubscribed(spent) is starved


@pytest.mark.full
@pytest.mark.skipif(not cpuclock.WAITS, reason="the kernel reports no run-queue waits (/proc/<pid>/schedstat)")
def test_run_queue_waits_of_starved_processes_are_measured():
    """Two busy processes pinned to one CPU: each waits while the other runs, and the meter sees it."""
    burn = (f"import os, time\nos.sched_setaffinity(0, {{{min(os.sched_getaffinity(0))}}})\n"
            "end = time.process_time() + 1.0\nwhile time.process_time() < end:\n    pass\n")
    meter = cpuclock.ProcessMeter(os.getpid())
    before = meter.read()
    children = [subprocess.Popen([sys.executable, "-c", burn]) for _ in range(2)]
    while any(child.poll() is None for child in children):
        meter.read()
        threading.Event().wait(0.1)
    cpu, waited = (after - start for after, start in zip(meter.read(), before))
    assert cpu > 1.9 and waited > 0.5, (cpu, waited)


@pytest.mark.full
def test_a_cell_stopped_by_the_backstop_on_a_busy_machine_runs_again_alone(tmp_path, monkeypatch):
    """The first stop of a starved cell is not final: it runs again with SOLO held alone, then it is stopped."""
    monkeypatch.setattr(supervise, "GRACE", 0.5)
    monkeypatch.setattr(cpuclock, "oversubscribed", lambda spent: True)  # as if starved (a sleep stands in)
    alone, original = [], cpuclock.SOLO.alone
    monkeypatch.setattr(cpuclock.SOLO, "alone", lambda: alone.append(True) or original())
    run = grade(tmp_path, sandbox.Sandbox("none"), SLEEP, "print('after')", limit=0.4)  # backstop: 1.2 s + GRACE
    assert [(limit["kind"], limit["alone"]) for limit in run.limits] == [("wall-clock backstop", False),
                                                                          ("wall-clock backstop", True)]
    assert run.limits[0]["then"].startswith("run again alone") and run.limits[1]["then"] == "stopped"
    assert alone == [True, True]  # the re-run and the attempt after it (cell 1) ran alone
    assert not any("alone" in note for note in run.notes)  # the student's notes do not mention the machine


@pytest.mark.fast
def test_a_probe_alone_waits_for_the_others_and_holds_them_back():
    """SOLO: an alone attempt starts once the running ones end; a shared one asked for meanwhile waits for it."""
    solo, order, events = cpuclock.Solo(), [], {name: threading.Event() for name in ("a_in", "a_out", "b_in", "c_in")}

    def shared(name, release=None):
        with solo.shared():
            order.append(name)
            events[f"{name}_in"].set()
            if release:
                release.wait(60)

    def alone():
        with solo.alone():
            order.append("b")
            events["b_in"].set()

    first = threading.Thread(target=shared, args=("a", events["a_out"]))
    first.start()
    assert events["a_in"].wait(60)
    second = threading.Thread(target=alone)
    second.start()
    while not solo.waiting:  # b asks while a runs
        threading.Event().wait(0.01)
    third = threading.Thread(target=shared, args=("c",))
    third.start()
    assert not events["b_in"].wait(0.3) and not events["c_in"].is_set()
    events["a_out"].set()
    for thread in (first, second, third):
        thread.join(60)
    assert order == ["a", "b", "c"]


@pytest.mark.fast
def test_proc_meter_counts_a_reaped_child_once():
    """counted(): a child's time that its parent reaps moves to the parent's cutime; only the rest is new."""
    parent, child = (1, 100), (2, 200)
    before = {parent: cpuclock.Stat(100, 0, 0, own=1.0, children=0.0),
              child: cpuclock.Stat(200, 1, 0, own=2.0, children=0.0)}
    after = {parent: cpuclock.Stat(100, 0, 0, own=1.5, children=2.25)}  # the child used 0.25 s more, then was reaped
    assert cpuclock.counted(before, after) == pytest.approx(0.5 + 0.25)
    assert cpuclock.counted({}, before) == pytest.approx(3.0)


@pytest.mark.fast
def test_jobs_beyond_the_free_cores_are_warned_about():
    assert load_warning(2, cores=2, load=0.3) == "" and load_warning(1, cores=2, load=1.4) == ""
    warning = load_warning(2, cores=2, load=1.4)
    assert warning.startswith("WARNING: JOBS=2") and "only 1 of 2 cores are free" in warning and "JOBS=1" in warning
    assert "only 0 of 2 cores" in load_warning(1, cores=2, load=7.0)


class Graded:
    def __init__(self, student, limits):
        self.student, self.limits, self.verdicts, self.notes, self.seconds, self.flags = student, limits, {}, [], 1, {}
        self.info = []  # collect's notes that need no one (grading.judge.Result.info)
        self.score, self.max_score = 10, 10


@pytest.mark.fast
def test_report_gives_the_load_and_every_limit_reached(tmp_path):
    cell = f"task {VEHICLE.training_tasks[0]} training cell"  # as the grader names a cell: any assignment's will do
    limit = {"cell": cell, "kind": "wall-clock backstop", "cpu": 41.2, "wall": 912.0, "load": 3.4,
             "alone": False, "then": "run again alone (the machine was oversubscribed)"}
    path = tmp_path / "report.md"
    write_report(path, VEHICLE.name, [Graded("ada", [limit]), Graded("bob", [])],
                 {"jobs": 2, "sandbox": "bubblewrap", "seconds": 5, "load": {"cores": 2, "mean": 6.8, "max": 9.1,
                                                                            "samples": 12, "every": 10.0}})
    text = path.read_text()
    assert "mean 6.8, highest 9.1, on 2 cores" in text
    section = text.split("## Time limits reached", 1)[1].split("##", 1)[0]
    assert f"**ada**, {cell}: wall-clock backstop reached after 41 s of CPU time in 912 s" in section
    assert "run again alone" in section and "bob" not in section
