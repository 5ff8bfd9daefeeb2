"""Red team: submissions that attack the grader's containment, graded beside honest ones.

Each attack is one extra cell, put before the first answer cell of the reference answers of the
definition tasks of the registry's first assignment (course_paths; nothing to train): whatever the
attack does, it must be contained and reported, and the honest cells around it must still score
their points. The vehicle's full solution is graded in the same run, the course's one grading of it: it trains while
the attackers run in the other slot (among them a CPU hog that spins to its cell's limit, a fork bomb and the memory
and disk hogs) and must keep full marks, name no limit and need nobody's attention: limits count CPU time, not the
machine's load (in `make test-all` the other worker loads the machine too). The attacks print
"ESCAPE: ..." for anything that got out and "ATTACK RAN <name>" when they finished, so a test
can tell "contained" from "never ran".

Fast tests (the clock, file reading, the training limit, the command line) run anywhere; the
end-to-end ones need root and bubblewrap and are skipped with the reason otherwise
(`pytest -rs` shows it). Select them with `pytest -m grading tests/test_redteam_containment.py`.
"""
import copy
import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from course_paths import DEFINITION_TASKS, NAME, POINTS, ROOT, SOURCE, VEHICLE
from grading.folders import Course
from grading.sandbox import sandbox, supervise
from grading.match.notebook import read
from grading.match.program import ProgramCell
from submissions import (DEFINITION_POINTS, GRADING_RUNAWAY, SCRATCH_CELL_SECONDS, answer_id, csv_rows,
                         definitions_only, hidden_lines_in_feedback, index_of, limits_section, report_sections,
                         scratch_course, seconds_per_submission)

BWRAP = sandbox.bwrap_version()
CGROUP = sandbox.choose("auto").cgroup[0] if BWRAP else None  # without one, memory is capped by RLIMIT_AS
needs_bwrap = pytest.mark.skipif(
    BWRAP is None, reason="containment not testable here: needs root and bubblewrap (`apt-get install bubblewrap`; "
                          ".ci/run installs it when it runs as root)")
TOKEN = uuid.uuid4().hex[:12]
MEMORY_GIB, SCRATCH_GIB = 3, 0.5  # smaller than the defaults: this machine is shared

# ----- The attacks: one cell each --------------------------------------------------------------------------------

ATTEMPTS = '''import os, socket, ctypes
escaped, contained = [], 0
def attempt(what, action):
    global contained
    try:
        result = action()
    except Exception:
        contained += 1
        return
    escaped.append(f"{{what}}: {{str(result)[:60]!r}}")
def write(path):
    with open(path, "w") as file:
        file.write("{token}")
    return path
'''

ESCAPE = ATTEMPTS + '''for path in {reads}:
    attempt("read " + path, lambda: open(path, "rb").read(64))
for path in {writes}:
    attempt("write " + path, lambda: write(path))
for path in {listings}:
    attempt("list " + path, lambda: os.listdir(path))
attempt("connect to the internet", lambda: socket.create_connection(("1.1.1.1", 53), timeout=3))
attempt("connect to the host", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=3))
attempt("signal the grader", lambda: os.kill({grader}, 0))
attempt("ptrace pid 1", lambda: 1 / (ctypes.CDLL(None).ptrace(16, 1, 0, 0) + 1))
attempt("hard link to the gradebook", lambda: os.link("{gradebook}", "../out/task_{linked}.pt"))
os.symlink("{gradebook}", "../out/task_{symlinked}.pt")  # a link where the grader looks for records: never followed
for line in escaped:
    print("ESCAPE:", line)
print(f"contained {{contained}} of {{contained + len(escaped)}}; ATTACK RAN escape")
'''

SURVIVOR = '''import os, signal, threading, time
if os.fork() == 0:
    os.setsid()
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGALRM, signal.SIGUSR1, signal.SIGPIPE):
        signal.signal(number, signal.SIG_IGN)
    if os.fork() == 0:  # a grandchild in its own session, orphaned: it must not outlive grading
        threads = 0
        try:
            while threads < 2000:  # as many threads as the uid may have (the EAGAIN of the next submission)
                threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
                threads += 1
        except RuntimeError:
            pass
        with open("../out/survivor.txt", "w") as file:
            file.write(str(threads))
        while True:
            time.sleep(1)
    os._exit(0)
time.sleep(3)
print("survivor threads:", open("../out/survivor.txt").read(), "ATTACK RAN survivor")
'''

FORKBOMB = '''import os, time
started, children = time.time(), 0
while time.time() - started < 8:
    try:
        if os.fork() == 0:
            while True:  # every child tries to fork too, politely
                try:
                    if os.fork() == 0:
                        time.sleep(3600)
                except OSError:
                    time.sleep(0.2)
        children += 1
    except OSError:
        time.sleep(0.2)
print("forks:", children, "ATTACK RAN forkbomb")
'''

STUCK = '''import signal, time
signal.signal(signal.SIGALRM, signal.SIG_IGN)  # the probe's own alarms: only the supervisor's clock is left
signal.signal(signal.SIGPROF, signal.SIG_IGN)
while True:
    try:
        time.sleep(1)
    except BaseException:
        pass
'''

FAKE_END = '''import json, os
program = json.load(open("../input/program.json"))  # readable: how the cell finds its own index
me = next(index for index, cell in enumerate(program) if "FAKE-END" in cell["source"])
for event in ({{"event": "end", "cell": me}}, {{"event": "start", "cell": me, "limit": 1e9}},
              {{"event": "start", "cell": me + 5, "limit": 1e9}}, {{"event": "done"}}):
    os.write(int(os.environ["GRADING_PROGRESS_FD"]), (json.dumps(event) + "\\n").encode())
''' + STUCK

TRAIN_COMMENT = '''# history = train(model, train_loader, val_loader)  <- a comment, not a call
text = "train(model)"
''' + STUCK

# Where records are written: a task beyond the last, the first training task's and the last definition task's
RECORDS = [f"task_{max(POINTS) + 1}.pt", f"task_{VEHICLE.training_tasks[0]}.pt.part",
           f"task_{DEFINITION_TASKS[-1]}.pt.part"]
FIFO = '''import os
# FIFOs (a reader that opens one blocks until a writer comes: forever) wherever the probe or the grader writes or reads
for name in ["progress.jsonl"] + ''' + repr(RECORDS) + ''' + \\
        [f"cell_{index}.json{part}" for index in range(300) for part in ("", ".part")]:
    if not os.path.exists("../out/" + name):
        os.mkfifo("../out/" + name)
print("ATTACK RAN fifo")
'''

SILENCE = '''import os
os.dup2(os.open("/dev/null", os.O_WRONLY), int(os.environ["GRADING_PROGRESS_FD"]))  # the probe's events: gone
print("ATTACK RAN silence")
'''

MEMORY_HOG = '''import torch
hog = torch.ones(6 << 30, dtype=torch.uint8)  # 6 GiB, every page written
print("ESCAPE: allocated", hog.numel() >> 30, "GiB")
'''

CPU_HOG = '''while True:  # a core's worth of CPU until the cell's limit stops it: load beside the full solution
    pass
'''

DISK_HOG = '''written, chunk = 0, b"x" * (1 << 24)
try:
    for number in range(3 * 64):  # 3 GiB in 16 MiB pieces, 64 files
        with open(f"hog_{number % 64}.bin", "ab") as file:
            file.write(chunk)
        written += len(chunk)
except OSError as error:
    print(f"disk full after {written >> 20} MiB: {type(error).__name__}")
print("ATTACK RAN diskhog")
'''


def with_cell(notebook, source):
    """notebook with an extra code cell (no nbgrader metadata) just before the first answer cell."""
    notebook = copy.deepcopy(notebook)
    notebook["cells"].insert(index_of(notebook, answer_id(notebook, DEFINITION_TASKS[0])), {
        "cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None})
    return notebook


# {student: (attack cell, words of the report's note, whether the cell prints "ATTACK RAN")}
def attacks(course, decoy, port):
    """The attack cells, with the paths of this run (the course, a decoy copy of the repository) filled in."""
    gradebook = str(course / "gradebook.db")
    reads = [str(decoy / "solutions" / NAME / f"{NAME}.ipynb"), str(course / "solutions" / NAME
             / f"{NAME}.ipynb"), str(ROOT / "solutions" / NAME / f"{NAME}.ipynb"), gradebook,
             "/etc/shadow", "/etc/passwd", "/proc/1/environ", "/root/.bash_history",
             str(course / "build" / "grading" / "scratch" / "honest" / "input" / "program.json")]
    writes = [f"/run/lock/redteam-{TOKEN}", f"/tmp/../run/redteam-{TOKEN}", f"/dev/shm/redteam-{TOKEN}",
              str(course / f"redteam-{TOKEN}"), str(course / "build" / "grading" / "runtime" / "checkers" / "x.py"),
              os.path.join(sys.prefix, f"redteam-{TOKEN}.pth"), f"/redteam-{TOKEN}", "../redteam"]
    listings = [str(decoy), str(course), str(ROOT / "solutions"), "/home", "/opt", "/etc", "/sys/fs/cgroup",
                str(course / "build" / "grading" / "scratch")]
    escape = ESCAPE.format(token=TOKEN, reads=reads, writes=writes, listings=listings, port=port,
                           grader=os.getpid(), gradebook=gradebook, symlinked=max(POINTS) + 1,
                           linked=max(POINTS) + 2)  # tasks beyond the last
    # Graded in name order after the full solution: the CPU hog beside its training, then the two cells that sleep to
    # their backstop (40 s each) beside its training and the other attacks, rather than last and alone
    return {"cpuhog": (CPU_HOG, f"ran past its {SCRATCH_CELL_SECONDS} s limit", False),
            "escape": (escape, None, True),
            "survivor": (SURVIVOR, None, True),
            "forkbomb": (FORKBOMB, None, True),
            "deadline-fakeend": (FAKE_END.format(), f"ran past its {SCRATCH_CELL_SECONDS} s limit", False),
            "deadline-traincomment": (TRAIN_COMMENT, f"ran past its {SCRATCH_CELL_SECONDS} s limit", False),
            "fifo": (FIFO, None, True),
            "silence": (SILENCE, "tampered with the probe's progress log", False),
            "memoryhog": (MEMORY_HOG, f"more than the sandbox's {MEMORY_GIB:g} GiB of memory" if CGROUP else None,
                          False),  # under RLIMIT_AS the allocation fails inside the cell instead
            "diskhog": (DISK_HOG, f"filled its {SCRATCH_GIB:g} GiB scratch space", False)}


# ----- One grading run of every attack beside honest submissions ------------------------------------------------

@pytest.fixture(scope="module")
def redteam(tmp_path_factory):
    """(course, attacks, grade's stdout, stderr, seconds, host listener) after `grade --jobs 2`."""
    course = scratch_course(tmp_path_factory.mktemp("redteam"))
    decoy = Path(f"/opt/redteam-{TOKEN}")  # another copy of the repository elsewhere on the machine
    shutil.copytree(ROOT / "solutions", decoy / "solutions")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    cases = attacks(course, decoy, listener.getsockname()[1])
    honest = definitions_only()
    notebooks = {student: with_cell(honest, source) for student, (source, _, _) in cases.items()}
    notebooks.update(honest=honest, full=read(SOURCE))
    for student, notebook in notebooks.items():
        folder = course / "submitted" / student / NAME
        folder.mkdir(parents=True)
        (folder / f"{NAME}.ipynb").write_text(json.dumps(notebook))
    started = time.monotonic()
    try:
        run = subprocess.run([sys.executable, "-m", "grading.grade", "--jobs", "2", "--course", str(course),
                              "--assignment", NAME,
                              "--memory", str(MEMORY_GIB), "--scratch", str(SCRATCH_GIB)],
                             cwd=ROOT, capture_output=True, text=True, timeout=GRADING_RUNAWAY)
    finally:
        shutil.rmtree(decoy)
    assert run.returncode == 0, run.stdout + run.stderr
    yield course, cases, run.stdout, time.monotonic() - started, listener
    listener.close()


def rendered_text(course, student):
    """Everything the student's cells printed, as the graded notebook holds it (outputs only, not the source)."""
    notebook = json.loads((course / "build" / "grading" / "rendered" / student / NAME /
                           f"{NAME}.ipynb").read_text())
    outputs = [output for cell in notebook["cells"] for output in cell.get("outputs", [])]
    return json.dumps(outputs, ensure_ascii=False)


@pytest.mark.full
@needs_bwrap
@pytest.mark.grading
def test_attacks_cost_nothing_but_themselves(redteam):
    """Every attacker keeps the points of its honest cells and the full solution all of its own; the three records
    agree."""
    course, cases, output, _, _ = redteam
    expected = {student: DEFINITION_POINTS for student in [*cases, "honest"]}
    expected["full"] = POINTS
    by_task = {(row["student_id"], int(row["task"])): float(row["score"])
               for row in csv_rows(course / "grades_by_task.csv")}
    wrong = {(student, task): (by_task.get((student, task)), score) for student, points in expected.items()
             for task, score in points.items() if by_task.get((student, task)) != score}
    assert not wrong, f"(student, task): (graded, expected) = {wrong}"
    totals = {row["student_id"]: float(row["score"]) for row in csv_rows(course / "grades.csv")}
    assert totals == {student: float(sum(points.values())) for student, points in expected.items()}
    assert "PROBLEM" not in output  # grade.py compares the gradebook with its own scores and says so


@pytest.mark.full
@needs_bwrap
@pytest.mark.grading
def test_the_full_solution_beside_the_attackers_is_graded_as_on_a_quiet_machine(redteam):
    """Trained beside the hogs, it reaches no limit, needs nobody's attention, and its feedback shows no hidden case;
    the report gives the load it was graded under."""
    course, _, output, _, _ = redteam
    report = (course / f"grading_report_{NAME}.md").read_text()
    limits = limits_section(report)
    load = [line for line in report.splitlines() if line.startswith("Load during grading (1-minute load average")]
    print(f"\nthe full solution beside the attackers: {seconds_per_submission(output).get('full')} s; {load}")
    assert load
    assert "**full**" not in limits, limits
    assert "full" not in report_sections(report)
    assert not hidden_lines_in_feedback(course, NAME, ["full", "honest"])


@pytest.mark.full
@needs_bwrap
@pytest.mark.grading
def test_nothing_got_out(redteam):
    """No attack read, wrote, listed or reached anything outside its sandbox, and each of them did run."""
    course, cases, _, _, listener = redteam
    for student, (_, _, prints) in cases.items():
        text = rendered_text(course, student)
        escapes = re.findall(r"ESCAPE[^\\]*", text)
        assert not escapes, f"{student}: {escapes}"
        if prints:
            assert f"ATTACK RAN {student}" in text, f"{student} never ran: the test would prove nothing"
    assert re.search(r"contained (\d+) of \1;", rendered_text(course, "escape"))
    assert not Path(f"/run/lock/redteam-{TOKEN}").exists() and not Path(f"/dev/shm/redteam-{TOKEN}").exists()
    assert not list(course.glob("redteam-*")) and not Path(sys.prefix, f"redteam-{TOKEN}.pth").exists()
    assert not (course / "build" / "grading" / "runtime" / "checkers" / "x.py").exists()
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody connected to the host


def held_by_another_run(slot):
    """Whether another grading run on this machine holds the slot's lease now (its processes are its own), else
    processes of the slot's uid are left over from the runs before (sandbox.lease_slots: one flock per slot)."""
    folder = sandbox.LOCKS if os.access(sandbox.LOCKS.parent, os.W_OK) else Path(tempfile.gettempdir()) / \
        sandbox.LOCKS.name
    with open(folder / f"uid-{sandbox.FIRST_UID + slot}.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


@pytest.mark.full
@needs_bwrap
@pytest.mark.grading
def test_no_process_outlives_grading(redteam):
    """setsid, ignored signals, threads up to the uid's limit, a fork bomb: nothing of the sandbox users is left."""
    course, _, _, _, _ = redteam
    assert "survivor threads:" in rendered_text(course, "survivor")
    for slot in range(8):  # the run took the lowest free slots: these, unless six other runs hold slots now
        left = sandbox.processes_of(sandbox.FIRST_UID + slot)
        assert not left or held_by_another_run(slot), f"slot {slot}: processes {left} left"
    forks = int(re.search(r"forks: (\d+)", rendered_text(course, "forkbomb")).group(1))
    assert 10 < forks < 520  # it forked, and RLIMIT_NPROC stopped it


@pytest.mark.full
@needs_bwrap
@pytest.mark.grading
def test_limits_are_reported_and_come_from_the_clock(redteam):
    """Fake events, a `# train(` comment, a silenced progress pipe, 6 GiB of memory, 3 GiB of disk: each stopped
    and named; FIFOs where the probe and the grader write and read block nothing."""
    course, cases, output, _, _ = redteam
    sections = report_sections((course / f"grading_report_{NAME}.md").read_text())
    for student, (_, words, _) in cases.items():
        if words:
            assert words in sections.get(student, ""), f"{student}: {sections.get(student)}"
    print(f"\nseconds per submission (grade --jobs 2, shared machine): {seconds_per_submission(output)}")
    limits = limits_section((course / f"grading_report_{NAME}.md").read_text())
    # Stopped at the scratch limit's backstop: not the training cells' 300 s, not MAX_TOTAL
    for student in ("deadline-fakeend", "deadline-traincomment"):
        assert f"**{student}**, an added cell" in limits and \
            f"ran past its {SCRATCH_CELL_SECONDS} s limit: it was still running after" in sections[student], \
            (limits, sections[student])
    assert "fifo" not in sections and "fifo" not in limits, sections.get("fifo")  # FIFOs block nothing
    assert "whole notebook" not in limits
    assert "outlived" not in "".join(sections.values())  # the PID namespace ended them all, as it should


@pytest.mark.full
@needs_bwrap
@pytest.mark.grading
def test_scratch_is_deleted_and_containment_is_announced(redteam):
    """No scratch folder or tmpfs is left; grade said what containment it found."""
    course, _, output, _, _ = redteam
    scratch = course / "build" / "grading" / "scratch"
    assert not scratch.exists() or not any(scratch.iterdir())
    assert str(course) not in Path("/proc/self/mountinfo").read_text()
    assert "containment: bubblewrap" in output and "memory: 3 GiB per submission" in output
    print("\n" + "\n".join(line for line in output.splitlines() if line.startswith(("containment", "memory", "disk"))))
    assert (course / "build" / "grading" / "logs" / "diskhog.log").is_file()


# ----- Fast: the pieces, no sandbox needed -----------------------------------------------------------------------

def cells(*limits):
    return [ProgramCell("given", "", limit) for limit in limits]


@pytest.mark.fast
def test_events_cannot_extend_a_cells_deadline():
    """End, a repeated start, a skip ahead and done move no deadline; only the next cell's start does."""
    backstop = supervise.cpuclock.BACKSTOP
    clock = supervise.Clock(cells(20, 20, 300, 20), skip=[2], started=0.0, threads=2)
    clock.see({"event": "start", "cell": 0}, now=1.0, used=(4.0, 0.0))
    assert clock.deadline == 1.0 + backstop * 20 + supervise.GRACE
    assert clock.cpu_deadline == 4.0 + (20 + supervise.GRACE) * 2  # CPU seconds of both threads add up
    for event in ({"event": "end", "cell": 0}, {"event": "start", "cell": 0}, {"event": "start", "cell": 3},
                  {"event": "start", "cell": 2}, {"event": "done"}, {"event": "start", "cell": "1"}, {}):
        clock.see(event, now=50.0, used=(30.0, 0.0))
    assert clock.deadline == 1.0 + backstop * 20 + supervise.GRACE and not clock.done
    assert clock.cpu_deadline == 4.0 + (20 + supervise.GRACE) * 2
    assert clock.expired(50.0, (30.0, 0.0)) is None and clock.expired(50.0, (65.0, 0.0)) == "timeout"
    assert clock.expired(1.0 + backstop * 20 + supervise.GRACE + 1, (30.0, 0.0)) == "backstop"
    clock.see({"event": "start", "cell": 1}, now=60.0, used=(30.0, 0.0))
    assert clock.deadline == 60.0 + backstop * 20 + supervise.GRACE and clock.current == 1
    clock.see({"event": "start", "cell": 3}, now=61.0, used=(31.0, 0.0))  # cell 2 is skipped here: 3 comes next
    assert clock.deadline == 61.0 + backstop * 20 + supervise.GRACE
    assert clock.cpu_deadline == 31.0 + (20 + supervise.GRACE) * 2


@pytest.mark.fast
def test_a_cell_its_own_alarm_stopped_is_reported_as_a_limit_reached():
    """The probe's alarm stops a cell at its limit, before the supervisor's kill: listed when the clock saw the
    whole limit used and the cell says CellTimeout; a CellTimeout raised early, or another error at the limit, is
    not."""
    program = cells(10, 10, 10, 10)
    job = supervise.Job(program=program, scratch=Path("/nonexistent"), runtime=Path("/nonexistent"),
                        box=sandbox.Sandbox("none"), threads=2)
    clock = supervise.Clock(program, skip=[], started=0.0, threads=2, finished=job.finished)
    for index, (cpu, wall) in enumerate([(19.8, 12.0), (3.0, 3.0), (20.0, 20.0), (1.0, 1.0)]):
        clock.see({"event": "start", "cell": index}, now=100.0 * index, used=(100.0 * index, 0.0))
        clock.see({"event": "end", "cell": index}, now=100.0 * index + wall, used=(100.0 * index + cpu, 0.0))
    stopped = {"ename": "CellTimeout", "evalue": "the cell ran past its time limit and was stopped", "frames": []}
    other = {"ename": "ValueError", "evalue": "x", "frames": []}
    run = supervise.ProbeRun(cells={0: {"error": stopped}, 1: {"error": stopped}, 2: {"error": other},
                                    3: {"error": None}})
    supervise.stopped_by_alarm(job, run)
    assert [(limit["cell"], limit["kind"], limit["cpu"], limit["wall"]) for limit in run.limits] == \
        [(supervise.cell_label(program[0]), "CPU limit", 19.8, 12.0)]
    assert run.notes == [f"{supervise.cell_label(program[0])}: the cell ran past its 10 s limit of CPU time (20 CPU s "
                         "in 12 s) and was stopped; grading went on without it"]


class _Late:
    """A probe whose one cell spins 10 CPU s and is stopped by its own alarm, watched by a supervisor that reads the
    cell's start 4 CPU s late (a busy machine): each poll's events and the meter's readings, in order."""

    polls = [[], [{"event": "start", "cell": 0}], [{"event": "end", "cell": 0}, {"event": "done"}]]
    readings = [0.5, 0.6, 4.6, 4.7, 10.6, 10.7]  # two a poll: before and after the events are read

    def __init__(self):
        self.polls, self.readings = list(self.polls), list(self.readings)

    def poll(self):
        return None

    def events(self):
        return self.polls.pop(0)

    def read(self):
        return self.readings.pop(0), 0.0


@pytest.mark.fast
def test_a_cell_stopped_by_its_alarm_is_reported_when_its_start_was_read_late(monkeypatch):
    """The grader bug behind a CPU hog stopped with no note at a load average of 2.5-4.6: the clock counted the cell's
    CPU from the poll that read its start, 4 of its 10 CPU s too late, so stopped_by_alarm did not list it. Counted
    from the poll before, the whole limit is there, and the report says so."""
    monkeypatch.setattr(supervise.time, "sleep", lambda seconds: None)
    program, late = cells(10), _Late()
    job = supervise.Job(program=program, scratch=Path("/nonexistent"), runtime=Path("/nonexistent"),
                        box=sandbox.Sandbox("none"), meter=late, deadline=time.monotonic() + 3600)
    clock = supervise.Clock(program, skip=[], started=time.monotonic(), used=(0.4, 0.0), finished=job.finished)
    assert supervise.watch(late, late, job, clock) == ("done", -1)
    assert job.finished[0]["cpu"] == pytest.approx(6.0)  # from the late read: short of the limit
    stopped = {"ename": "CellTimeout", "evalue": "the cell ran past its time limit and was stopped", "frames": []}
    run = supervise.ProbeRun(cells={0: {"error": stopped}})
    supervise.stopped_by_alarm(job, run)
    assert [(limit["cell"], limit["kind"], limit["cpu"]) for limit in run.limits] == \
        [(supervise.cell_label(program[0]), "CPU limit", 10.2)]
    assert run.notes and "ran past its 10 s limit of CPU time (10 CPU s" in run.notes[0]


@pytest.mark.fast
def test_reading_never_blocks_on_what_the_student_left(tmp_path):
    """A FIFO, a link and an oversized file are refused at once, without blocking."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "real").write_bytes(b"1234")
    os.symlink(tmp_path / "real", tmp_path / "link")
    result = {}
    reader = threading.Thread(target=lambda: result.update(fifo=supervise.read_untrusted(tmp_path / "fifo")))
    reader.start()
    reader.join(5)
    assert not reader.is_alive() and result["fifo"] is None
    assert supervise.read_untrusted(tmp_path / "link") is None
    assert supervise.read_untrusted(tmp_path / "real") == b"1234"
    assert supervise.read_untrusted(tmp_path / "real", limit=2) is None
    assert supervise.read_untrusted(tmp_path / "real", offset=2, limit=2) == b"34"


def bomb(kind):
    """A task file a few MB long that torch.load would turn into GBs in the grader's process (if it loaded it)."""
    import io
    import zipfile

    import torch
    buffer = io.BytesIO()
    torch.save([{"structure": "tensor", "outputs": [[torch.zeros(1 << 20)]]}], buffer)
    source, out = zipfile.ZipFile(io.BytesIO(buffer.getvalue())), io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for entry in source.infolist():
            data = source.read(entry)
            if kind == "pickle" and entry.filename.endswith("data.pkl"):
                data = b"\x80\x02]q\x00(" + b"}" * (2 << 20) + b"e."  # 2 MB: 2 million empty dicts, 150 MB
            if kind == "deflate" and "/data/" in entry.filename:
                entry.compress_type = zipfile.ZIP_DEFLATED  # 8 MB of zeros in 8 kB (the same ratio reaches TBs)
            archive.writestr(entry, data)
    return out.getvalue()


@pytest.mark.fast
@pytest.mark.parametrize("kind", ["pickle", "deflate"])
def test_records_that_would_blow_up_in_the_graders_memory_are_refused(tmp_path, kind):
    """Task files are parsed in the grader's own process: a pickle or deflate bomb is refused unread, not loaded."""
    import torch
    out = tmp_path / "scratch" / "out"
    out.mkdir(parents=True)
    bombed, honest = 1, 2  # two check cells' tasks: the grader looks up only those (Job.recorded_tasks)
    (out / f"task_{bombed}.pt").write_bytes(bomb(kind))
    torch.save([{"outputs": [1]}], out / f"task_{honest}.pt")  # read beside it: the lookup is not what refuses
    (out / "cell_0.json").write_text("[" + "{}," * (1 << 20) + "{}]")  # 3 MB of JSON: 100 MB of dicts
    (out / "cell_1.json").write_text("[" * 100_000 + "]" * 100_000)  # nested too deep for json
    program = cells(1, 1) + [ProgramCell("check", "", 1.0, task=task) for task in (bombed, honest)]
    job, run = supervise.Job(program, tmp_path / "scratch", tmp_path, sandbox.Sandbox("none")), supervise.ProbeRun()
    supervise.collect(job, run)
    assert run.records == {honest: [{"outputs": [1]}]} and run.cells == {}


@pytest.mark.fast
def test_a_huge_line_in_an_error_keeps_the_cells_output_under_the_graders_cap():
    """The probe cuts a traceback's source line, so a 3 MB one-liner that fails still has its error shown."""
    path = list(sys.path)
    sys.path.insert(0, str(ROOT / "grading"))  # recipes.py, which the runtime holds beside probe.py
    from grading.probe import probe  # it puts grading/probe/ first on sys.path for its own imports: taken back at once
    sys.path[:] = path
    error = SyntaxError("invalid syntax", ("<ipython-input-1>", 1, 1, "y = (" + "1 + " * 750_000))
    assert len(json.dumps(probe.describe_error(error))) < supervise.MAX_CELL // 100


@pytest.mark.fast
def test_progress_pipe_is_read_without_blocking_and_capped():
    """Events come whole, garbage is skipped, an idle pipe returns at once, a flood stops being read."""
    reader, writer = os.pipe()
    progress = supervise.Progress(reader)
    assert progress.events() == []
    os.write(writer, b'{"event": "start", "cell": 0}\nnot json\n[1]\n{"event": "en')
    assert progress.events() == [{"event": "start", "cell": 0}]
    os.write(writer, b'd", "cell": 0}\n')
    assert progress.events() == [{"event": "end", "cell": 0}]
    progress.total = supervise.MAX_PROGRESS
    os.write(writer, b'{"event": "done"}\n')
    assert progress.events() == []
    os.close(reader)
    os.close(writer)


@pytest.mark.fast
@pytest.mark.parametrize("source, seconds", [
    ("history = train(model, train_loader, val_loader)", 300), ("h = course_lib.training.train(model)", 300),
    ("# train(model)\nx = 1", 60), ('text = "train(model)"', 60), ("model.train()", 60),
    ("def broken(:\n    train(model)", 60), ("%%time\nx = 1  # train(", 60)])
def test_training_limit_only_for_cells_that_call_train(source, seconds):
    assert Course(ROOT, NAME).limit_for(source) == seconds


@pytest.mark.fast
def test_grading_without_a_sandbox_needs_the_flag_and_says_so():
    """Without bubblewrap, grade refuses and says how to install it; --sandbox none warns loudly."""
    script = "from grading.sandbox import sandbox\ntry:\n    sandbox.choose('auto')\n" \
             "except sandbox.SandboxUnavailable as e:\n    print(e)"
    refused = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                             env=dict(os.environ, PATH="/nonexistent"))
    assert "apt-get install bubblewrap" in refused.stdout and "--sandbox none" in refused.stdout
    box = sandbox.choose("none")
    assert box.mode == "none" and "UNISOLATED" in box.warning


@pytest.mark.fast
def test_one_failed_trial_of_bubblewrap_does_not_refuse_the_run(monkeypatch):
    """A busy machine can fail one trial (a make test run saw a whole grading run refused once): grade is refused
    only when every trial fails, and the refusal says what bubblewrap said."""
    said = iter(["bwrap: Can't mount tmpfs: Cannot allocate memory", ""])
    monkeypatch.setattr(sandbox, "bwrap_trial", lambda: next(said))
    monkeypatch.setattr(sandbox.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: "/usr/bin/bwrap")
    monkeypatch.setattr(sandbox.subprocess, "run", lambda *args, **kwargs: subprocess.CompletedProcess(
        args, 0, stdout="bubblewrap 0.8.0\n"))  # only `bwrap --version` is left to run
    assert sandbox.bwrap_version() == "bubblewrap 0.8.0"
    monkeypatch.setattr(sandbox, "bwrap_trial", lambda: "bwrap: Creating new namespace failed: Operation not permitted")
    assert sandbox.bwrap_version() is None
    with pytest.raises(sandbox.SandboxUnavailable, match="one more said: bwrap: Creating new namespace failed"):
        sandbox.choose("auto")


FOREVER = '''import json, os, time
for cell in range(1000):  # claims one cell after another, each within its limit: only the total limit is left
    os.write(int(os.environ["GRADING_PROGRESS_FD"]), (json.dumps({"event": "start", "cell": cell}) + "\\n").encode())
    time.sleep(0.5)
'''


@pytest.mark.full
def test_watchdog_bounds_a_submission_that_keeps_claiming_progress(tmp_path, monkeypatch):
    """A probe that reports a new cell every half second, using no CPU, still ends at MAX_TOTAL's wall-clock
    backstop, by the grader's clock."""
    runtime = tmp_path / "runtime"
    (runtime / "mpl").mkdir(parents=True)
    (runtime / "probe.py").write_text(FOREVER)
    monkeypatch.setattr(supervise, "MAX_TOTAL", 1.0)
    job = supervise.Job(cells(*[1.0] * 1000), tmp_path / "scratch" / "someone", runtime, sandbox.Sandbox("none"))
    run = supervise.run_probe(job)
    assert any("grading stopped at the limit for the whole notebook (1 s of CPU time" in note for note in run.notes)
    (limit,) = run.limits
    assert limit["cell"] == "the whole notebook" and limit["wall"] >= supervise.cpuclock.BACKSTOP * 1.0, limit
    assert not job.scratch.exists() and (tmp_path / "logs" / "someone.log").is_file()


@pytest.mark.full
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to start a "
                    "process as another uid")
def test_a_uid_is_swept_before_reuse():
    """A process left running as a job's uid is found in /proc, killed and counted (for the report)."""
    (slot,), leases = sandbox.lease_slots(1)  # no grading run of this machine (another test's, in parallel) uses it
    uid = sandbox.FIRST_UID + slot
    try:
        sandbox.sweep(uid, settle=0)  # what an earlier run may have left, as the grader sweeps a slot it leases
        # left behind as a sandbox's process is: orphaned (a child of this test would stay a zombie until waited for,
        # and the sweep would wait for it to go)
        subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sh", "-c",
                        "sleep 60 > /dev/null 2>&1 &"], check=True, start_new_session=True)
        deadline = time.monotonic() + 5
        while not sandbox.processes_of(uid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sandbox.sweep(uid, settle=0) == 1
        assert sandbox.processes_of(uid) == []
    finally:
        for handle in leases:
            handle.close()


@pytest.mark.full
def test_two_grading_runs_at_once_never_share_a_sandbox_uid(tmp_path, monkeypatch):
    """Two runs (two assignments, two checkouts) lease disjoint slots; a slot frees when its run ends, even killed."""
    monkeypatch.setattr(sandbox, "LOCKS", tmp_path / "locks")
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]); "
                               "from grading.sandbox import sandbox; from pathlib import Path; "
                               "sandbox.LOCKS = Path(sys.argv[2]); held = sandbox.lease_slots(2); "
                               "print(*held[0], flush=True); time.sleep(60)", str(ROOT), str(tmp_path / "locks")],
                              stdout=subprocess.PIPE, text=True)
    try:
        theirs = [int(slot) for slot in holder.stdout.readline().split()]
        mine, files = sandbox.lease_slots(2)
        assert len(theirs) == 2 and not set(mine) & set(theirs), (mine, theirs)
    finally:
        holder.kill()
        holder.wait()
    for handle in files:
        handle.close()
    again, files = sandbox.lease_slots(4)
    assert set(theirs) <= set(again)  # the killed run's slots are free again
    for handle in files:
        handle.close()
