"""Run one submission's probe to the end, whatever its code does, on the grader's own clock.

The probe reports when each cell starts through a pipe; student code can write to it too, so events only
say which cell the probe claims to have reached, never how long it may take. The clock is the
supervisor's, and counts CPU time (cpuclock.py: the sandbox's cgroup, or /proc, read from outside): when
the next cell of the program (in order, none skipped, none twice) starts, the cell may use its limit plus
a grace in CPU seconds (times the probe's threads), and a wall-clock backstop of cpuclock.BACKSTOP times
its limit stops it if it sleeps or hangs; an "end" event stops no clock. A fake start can only spend the
limits of cells that follow, never add time, and MAX_TOTAL bounds all attempts from this side (a timer
thread kills the sandbox at its wall-clock backstop even if reading stalls). A cell that runs past its
limit, or a process that dies inside a cell (os._exit, a crash, the memory cap), gets the whole sandbox
killed; the probe then starts again without that cell, skipping tasks already recorded, at most
MAX_ATTEMPTS times. A cell stopped by the backstop while the machine was oversubscribed is first run
again alone (no other probe of this grading run meanwhile). The "done" event (counted only once the
program's last cell has started) ends an attempt at once and the sandbox is killed: threads or atexit
handlers the notebook left are never waited for. Everything read back is
untrusted: events are read without blocking and size-capped; files as regular files only (no links,
FIFOs or devices), opened without blocking, size-capped,
tensors loaded with weights_only=True. The scratch folder is deleted once read.
"""
import io
import json
import os
import signal
import stat
import subprocess
import threading
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from course.registry import Limits

from ..match.cells import DEFINES
from ..match.program import cell_label
from ..records import MAX_FILE, STOPPED_ERRORS, ProbeRun
from . import cgroups, cpuclock, sandbox

GRACE = 10.0  # seconds past a cell's limit before the sandbox is killed (CPU seconds per thread; on the backstop, wall)
STARTUP = 90.0  # CPU seconds per thread for the probe to start (torch, IPython) and reach its first cell
MAX_ATTEMPTS = 4
MAX_TOTAL = 1200.0  # CPU seconds per thread for all attempts of one submission (wall-clock backstop: BACKSTOP times)
# Wall-clock seconds a submission may spend neither running nor waiting for a CPU (asleep or blocked), over all its
# attempts: an honest notebook spends a few (reading files); without this bound, cells that each sleep just under
# their backstop held a grading slot for the whole notebook's wall-clock backstop (an hour) at no CPU cost. Once it is
# spent, a cell that idles GRACE seconds more is stopped as one that slept (the probe's start: its own backstop).
# The course sets it (course.toml's [limits] idle_seconds); its default is the registry's, one source for both.
MAX_IDLE = float(Limits.idle_seconds)
MAX_CELL = 1 << 20  # a cell's output as the probe writes it (two streams of 20,000 characters, five displays) is less
MAX_PICKLE = 1 << 20  # the pickle in a task file (records of tensors by reference: about 12 kB for 33 cases)
MAX_PROGRESS = 4 << 20  # bytes of progress log read per attempt; beyond it events are ignored (the clock is not)
MAX_LOG = 64 << 10  # the end of the probe's log kept in build/grading/logs/
ALARM_SLACK = 0.5  # CPU seconds per thread: the meters' ticks (/proc counts in hundredths) and the probe's own


@dataclass
class Job:
    """One submission's probe: its program and where and how it runs."""

    program: list  # [ProgramCell]
    scratch: Path
    runtime: Path
    box: sandbox.Sandbox  # see grading/sandbox/sandbox.py
    slot: int = 0
    threads: int = 1
    deadline: float = 0.0
    cap: object = None  # the memory cgroup (grading/sandbox/cgroups.py), when there is one
    account: object = None  # the cgroup that counts the sandbox's CPU time, when there is one
    used: int = 0  # most bytes the scratch folder held after an attempt
    cpu: float = 0.0  # CPU seconds the sandbox used in the attempts before this one
    meter: object = None  # this attempt's cpuclock meter
    stopped: dict = None  # what the last cell stopped at a limit had used: cpu, wall, waited, load
    begun: float = 0.0  # when grading this submission began (time.monotonic())
    idle: float = 0.0  # wall seconds its sandbox spent neither running nor waiting for a CPU, all attempts (max_idle)
    max_idle: float = MAX_IDLE  # what idle may reach before a cell that idles GRACE seconds more is stopped
    finished: dict = field(default_factory=dict)  # cell index -> what it used by its "end" event (Clock.spent)

    def recorded_tasks(self):
        """Tasks of the program's check cells whose records the probe has written so far (looked up by name: a
        notebook that fills out/ with a million task_N.pt files costs the grader nothing)."""
        tasks = {cell.task for cell in self.program if cell.kind == "check"}
        return {task for task in tasks if os.path.lexists(self.scratch / "out" / f"task_{task}.pt")}


def read_untrusted(path, offset=0, limit=MAX_FILE):
    """Up to limit bytes from offset of a regular file the probe wrote, or None for anything else.

    Never follows a link it planted, never blocks on a FIFO or device: opened with O_NOFOLLOW and
    O_NONBLOCK, checked with fstat before a byte is read. A file larger than offset + limit is refused.
    """
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    with os.fdopen(handle, "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_size > offset + limit:
            return None
        file.seek(offset)
        return file.read(limit)


class Progress:
    """The probe's progress events, read from the pipe it writes them to, never blocking, size-capped."""

    def __init__(self, handle):
        self.handle, self.pending, self.total = handle, b"", 0
        os.set_blocking(handle, False)

    def events(self):
        """The complete event lines that arrived since the last call."""
        chunks = []
        while self.total < MAX_PROGRESS:
            try:
                chunk = os.read(self.handle, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            self.total += len(chunk)
            chunks.append(chunk)
        lines = (self.pending + b"".join(chunks)).split(b"\n")
        self.pending = lines.pop()[-4096:]
        events = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
        return events


class Clock:
    """The supervisor's clock for one attempt: which cell runs, and the CPU and wall-clock time it may still take.

    Args:
        used: the meter's (CPU seconds, run-queue seconds) when the attempt started.
        threads: the threads the probe may use: CPU time of several threads adds up, so a cell's CPU limit is
            its limit times threads (the same as comparing its CPU time divided by threads with its limit).
    """

    def __init__(self, program, skip, started, used=(0.0, 0.0), threads=1, finished=None):
        self.program, self.skip, self.threads = program, set(skip), threads
        self.top, self.ended, self.done = -1, set(), False
        self.finished = {} if finished is None else finished  # cell index -> what it used by its end
        self.begin(started, used, STARTUP)

    def begin(self, now, used, limit, floor=None):
        """A cell (or the probe's start) begins now: its CPU limit and its wall-clock backstop count from here;
        floor: the meter's reading before the start can have happened (see `see`), else used."""
        self.started, self.used, self.loads, self.idle = now, tuple(used), [], 0.0
        self.floor = tuple(floor or used)
        self.cpu_deadline = used[0] + (limit + GRACE) * self.threads
        self.deadline = now + cpuclock.BACKSTOP * limit + GRACE

    def next_cell(self):
        return next((i for i in range(self.top + 1, len(self.program)) if i not in self.skip), None)

    def see(self, event, now, used=(0.0, 0.0), floor=None):
        """Take one event into account: only the start of the next cell moves the deadlines.

        Args:
            now, used: the time and the meter's reading when the event was read, after it was written.
            floor: the meter's reading before the previous read of events, so before the event was written. On a
                busy machine the supervisor may read an event seconds late: the cell's CPU time lies between
                `used` and `floor` at its start (Clock.spent's "cpu" and "cpu_most").
        """
        kind, cell = event.get("event"), event.get("cell")
        if kind == "start" and isinstance(cell, int) and cell == self.next_cell():
            self.top = cell
            self.begin(now, used, self.program[cell].limit, floor)
        elif kind == "end" and cell == self.top:
            self.ended.add(cell)
            self.finished[cell] = self.spent(now, used)  # the last end wins: the probe's own comes after the cell
        elif kind == "done" and self.next_cell() is None:
            self.done = True

    @property
    def current(self):
        """The cell the probe is in, as far as the clock knows (-1: between cells or before the first)."""
        return self.top if self.top >= 0 and self.top not in self.ended else -1

    def expired(self, now, used):
        """"timeout" past the cell's CPU limit, "backstop" past its wall-clock backstop, else None."""
        return "timeout" if used[0] > self.cpu_deadline else "backstop" if now > self.deadline else None

    def spent(self, now, used):
        """What the current cell used so far: CPU (counted from when its start was read; "cpu_most": from the
        floor, so at least what it used), wall and run-queue seconds, and the mean load per core."""
        load = sum(self.loads) / len(self.loads) if self.loads else cpuclock.load_per_core()
        return {"cpu": used[0] - self.used[0], "cpu_most": used[0] - self.floor[0], "wall": now - self.started,
                "waited": used[1] - self.used[1], "load": load, "idle": self.idle}


def idle_seconds(before, after):
    """Wall seconds between two samples (time, (CPU s, run-queue s)) in which the sandbox neither ran nor waited for
    a CPU: the elapsed time less what its threads used or queued for (0 where no run-queue waits are known, since a
    starved thread would look idle)."""
    if not cpuclock.WAITS:
        return 0.0
    busy = (after[1][0] - before[1][0]) + (after[1][1] - before[1][1])
    return max(0.0, (after[0] - before[0]) - busy)


def kill(process, job):
    """Kill the sandbox: its process group (bwrap, whose PID namespace then ends) and its cgroups."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for group in dict.fromkeys([job.cap, job.account]):
        if group is not None:
            cgroups.kill_pids(group.members())


def watch(process, progress, job, clock):
    """Follow one attempt until it finishes: ("done" | "died" | "timeout" | "backstop" | "idle" | "total", cell or
    -1)."""
    sample, floor = None, clock.used
    while True:
        finished = process.poll() is not None  # before reading, so the last events of a finished probe are seen
        before = job.meter.read()  # the floor of the events the next read finds: they are written after it
        events = progress.events()
        now, used = time.monotonic(), job.meter.read()
        for event in events:
            clock.see(event, now, used, floor)
        floor = before
        idle = idle_seconds(sample, (now, used)) if sample else 0.0
        sample, job.idle, clock.idle = (now, used), job.idle + idle, clock.idle + idle
        if finished or clock.done:  # done: the last records are written; what the notebook left running is not
            return ("done" if clock.done else "died"), clock.current  # waited for (attempt's finally kills it)
        clock.loads.append(cpuclock.load_per_core())
        job.stopped = clock.spent(now, used)
        if now > job.deadline or job.cpu + used[0] > MAX_TOTAL * job.threads:
            kill(process, job)
            return "total", clock.top
        asleep = job.idle > job.max_idle and clock.idle > GRACE and clock.current >= 0  # a start has its own backstop
        ended = clock.expired(now, used) or ("idle" if asleep else None)
        if ended:
            kill(process, job)
            return ended, clock.top
        time.sleep(0.2)


def resume_plan(program, skip, done_tasks):
    """Cells to skip on the next attempt: the failed ones, and work for tasks already recorded."""
    plan = set(skip)
    for index, cell in enumerate(program):
        training = cell.kind == "answer" and not DEFINES.search(cell.source)  # defines nothing later cells use
        if cell.task in done_tasks and (cell.kind == "check" or training):
            plan.add(index)
    return sorted(plan)


STOPPED = {
    "timeout": (STOPPED_ERRORS["timeout"],
                "the cell ran past its {limit:.0f} s limit of CPU time ({cpu:.0f} CPU s in {wall:.0f} s) and was "
                "stopped; grading went on without it"),
    "backstop": (STOPPED_ERRORS["backstop"],
                 "the cell ran past its {limit:.0f} s limit: it was still running after {wall:.0f} s, "
                 f"{cpuclock.BACKSTOP:g} times its limit, having used {{cpu:.0f}} s of CPU time (it slept or waited),"
                 " and was stopped; grading went on without it"),
    "idle": (STOPPED_ERRORS["idle"],
             "the cell slept or waited {idle:.0f} s without using the CPU after the notebook had spent its "
             "{max_idle:.0f} s of wall-clock time allowed for that, and was stopped; grading went on without it"),
    "died": (STOPPED_ERRORS["died"],
             "the Python process exited while running this cell (os._exit, a crash, a signal), or the cell tampered "
             "with the probe's progress log; grading went on without it"),
    "disk": (STOPPED_ERRORS["disk"],
             "the cell filled the sandbox's {disk:g} GiB scratch space, so the probe could not write its results "
             "and stopped; grading went on without the cell"),
    "memory": (STOPPED_ERRORS["memory"],
               "the cell used more than the sandbox's {memory:g} GiB of memory and was stopped; grading went on "
               "without it"),
}


def stopped_output(kind, cell, box, spent=None, max_idle=MAX_IDLE):
    """The output of a cell the supervisor stopped; spent: what it used (cpu, wall seconds), for the limits;
    max_idle: the notebook's allowance of idle seconds (Job.max_idle)."""
    ename, text = STOPPED[kind]
    spent = spent or {"cpu": 0.0, "wall": cell.limit}
    evalue = text.format(limit=cell.limit, memory=box.memory / sandbox.GIB, disk=box.scratch / sandbox.GIB,
                         cpu=spent["cpu"], wall=spent["wall"], idle=spent.get("idle", 0.0), max_idle=max_idle)
    return {"stdout": "", "stderr": "", "displays": [], "tampered": [], "seconds": round(spent["wall"], 3),
            "error": {"ename": ename, "evalue": evalue, "frames": []}}


def attempt(job, skip, alone=False):
    """Start the probe once with these cells skipped, alone or beside other probes; (how it ended, cell index)."""
    waiting = time.monotonic()
    with cpuclock.SOLO.alone() if alone else cpuclock.SOLO.shared():
        job.deadline += time.monotonic() - waiting  # time spent waiting for other probes is not this submission's
        return run_attempt(job, skip)


def run_attempt(job, skip):
    """Start the probe once with these cells skipped; (how it ended, cell index)."""
    plan = resume_plan(job.program, skip, sorted(job.recorded_tasks()))
    (job.scratch / "input" / "resume.json").write_text(json.dumps({"skip": plan}))
    groups = [group.procs for group in dict.fromkeys([job.cap, job.account]) if group is not None]
    argv, env, cwd = sandbox.command(job.box, job.scratch, job.runtime, job.slot, job.threads, groups)
    reader, writer = os.pipe()  # the progress channel: a cell can write to it, but not replace or block it
    try:
        with open(job.scratch / "probe.log", "ab") as log:
            process = subprocess.Popen(argv, env=dict(env, GRADING_PROGRESS_FD=str(writer)), cwd=cwd, stdout=log,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                       pass_fds=(writer,))
    finally:
        os.close(writer)
    job.meter = cpuclock.GroupMeter(job.account) if job.account else \
        cpuclock.ProcessMeter(process.pid, sandbox.uid_of(job.box, job.slot))
    watchdog = threading.Timer(max(0.0, job.deadline - time.monotonic()) + 5, kill, (process, job))
    watchdog.daemon = True
    watchdog.start()  # the total limit holds even if watching stalls
    try:
        clock = Clock(job.program, plan, time.monotonic(), job.meter.read(), job.threads, job.finished)
        return watch(process, Progress(reader), job, clock)
    finally:
        watchdog.cancel()
        kill(process, job)  # whatever is left of a finished probe
        process.wait()
        os.close(reader)
        job.cpu += job.meter.read()[0]


def run_probe(job):
    """Run a submission's probe, restarting past cells that hang or kill it; return what it recorded."""
    started, run = time.monotonic(), ProbeRun()
    job.begun, job.deadline = started, started + cpuclock.BACKSTOP * MAX_TOTAL
    uid = sandbox.uid_of(job.box, job.slot)
    left = sandbox.sweep(uid, settle=0)
    if left:
        run.notes.append(f"{left} process(es) of the sandbox user {uid} were still running before this probe "
                         "started and were killed")
    sandbox.prepare_scratch(job.scratch, job.box, job.slot, job.runtime / "mpl")
    if job.box.cgroup[0]:
        job.cap, _ = cgroups.try_cap(f"grading-{os.getpid()}-{job.slot}", job.box.memory)
    job.account = cpu_account(job)
    try:
        (job.scratch / "input" / "program.json").write_text(json.dumps([asdict(cell) for cell in job.program]))
        attempts(job, run, uid)
        collect(job, run)
        stopped_by_alarm(job, run)
        run.notes += scratch_notes(job)
    finally:
        keep_log(job, run.endings)
        sandbox.release_scratch(job.scratch)
        for group in dict.fromkeys([job.cap, job.account]):
            if group is not None:
                group.remove()
    run.seconds = time.monotonic() - started
    return run


def cpu_account(job):
    """The cgroup that counts the sandbox's CPU time: the memory cap's own on v2, else a cpuacct group; or None."""
    if job.cap is not None and job.cap.cpu_seconds() is not None:
        return job.cap
    if not job.box.cpuacct[0]:
        return None
    return cgroups.try_account(f"grading-cpu-{os.getpid()}-{job.slot}")[0]


def attempts(job, run, uid):
    """Attempts until the probe finishes, restarting past each stopped cell; notes say what was stopped.

    A cell stopped by the backstop while the machine was oversubscribed runs again, once per submission, alone;
    the attempts after it run alone too. That re-run is not counted in MAX_ATTEMPTS.
    """
    skip, alone = [], False
    while len(skip) < MAX_ATTEMPTS:
        kills = job.cap.oom_kills() if job.cap else 0
        ended, cell = attempt(job, skip, alone)
        run.endings.append(ended)
        survivors = sandbox.sweep(uid)
        if survivors:
            run.notes.append(f"{survivors} process(es) of the sandbox user outlived the probe and were killed")
        job.used = max(job.used, sandbox.scratch_usage(job.scratch))
        if ended == "done":
            return
        rerun = ended == "backstop" and cell >= 0 and not alone and cpuclock.oversubscribed(job.stopped)
        if ended in ("timeout", "backstop", "idle", "total"):
            run.limits.append(limit_reached(job, ended, cell, alone, rerun))
        if cell < 0 or ended == "total":
            run.notes.append(probe_failure(job, ended))
            return
        if rerun:  # the machine starved it: no note for the student, the report's limits section says so
            alone = True
            sandbox.reset_scratch(job.scratch, job.box, job.slot, job.runtime / "mpl")
            continue
        full = job.box.mode == "bwrap" and sandbox.scratch_usage(job.scratch) >= 0.9 * job.box.scratch
        kind = ended if ended in ("timeout", "backstop", "idle") else \
            "memory" if job.cap and job.cap.oom_kills() > kills else "disk" if full else "died"
        run.cells[cell] = stopped_output(kind, job.program[cell], job.box, job.stopped, job.max_idle)
        run.notes.append(f"{cell_label(job.program[cell])}: {run.cells[cell]['error']['evalue']}")
        skip.append(cell)
        sandbox.reset_scratch(job.scratch, job.box, job.slot, job.runtime / "mpl")
    run.notes.append(f"grading gave up after {MAX_ATTEMPTS} stopped cells; cells not reached count as not run")


def limit_reached(job, ended, cell, alone, rerun, spent=None):
    """The report's entry for a limit reached: which cell (or the whole notebook), the CPU and wall seconds (spent,
    else what the last stopped cell used), the load per core, whether the probe ran alone, and what followed."""
    spent = spent or job.stopped or {"cpu": 0.0, "wall": 0.0, "load": cpuclock.load_per_core()}
    if ended == "total":
        spent = dict(spent, cpu=job.cpu, wall=time.monotonic() - job.begun)
    where = "the whole notebook" if ended == "total" else cell_label(job.program[cell]) if cell >= 0 else \
        "the probe's start"
    kinds = {"timeout": "CPU limit", "backstop": "wall-clock backstop", "total": "limit for the whole notebook",
             "idle": f"limit on sleeping ({job.max_idle:.0f} s without CPU use in all)"}
    return {"cell": where, "kind": kinds[ended],
            "cpu": round(spent["cpu"], 1), "wall": round(spent["wall"], 1), "load": round(spent["load"], 2),
            "waited": round(spent.get("waited", 0.0), 1), "alone": alone,
            "then": "run again alone (the machine was oversubscribed)" if rerun else "stopped"}


def stopped_by_alarm(job, run):
    """Report the cells the probe's own alarm stopped at their CPU limit (the gentler stop, before the supervisor's
    kill at the limit plus GRACE): their error says CellTimeout, and the grader's clock saw their whole limit used
    (less ALARM_SLACK), so neither a raised CellTimeout alone nor a cell's honest use of its time is listed. The clock
    may read a start late on a busy machine: "cpu_most", counted from before the start, still holds the whole limit
    ("cpu", counted from the read, lost the note of a CPU hog at a load average of 2.5-4.6)."""
    for index, spent in sorted(job.finished.items()):
        cell, output = job.program[index], run.cells.get(index)
        error = output.get("error") if isinstance(output, dict) else None
        if not isinstance(error, dict) or error.get("ename") != "CellTimeout" or \
                spent["cpu_most"] < (cell.limit - ALARM_SLACK) * job.threads:
            continue
        spent = dict(spent, cpu=spent["cpu_most"])  # what the report gives: the reading that holds the whole cell
        run.limits.append(limit_reached(job, "timeout", index, False, False, spent))
        run.notes.append(f"{cell_label(cell)}: {stopped_output('timeout', cell, job.box, spent)['error']['evalue']}")


def probe_failure(job, ended):
    """A note for an attempt that ended outside any cell (the sandbox failed, or the total limit)."""
    if ended == "total":
        return (f"grading stopped at the limit for the whole notebook ({MAX_TOTAL * job.threads:.0f} s of CPU time, "
                f"{cpuclock.BACKSTOP * MAX_TOTAL:.0f} s of wall-clock time) after {job.cpu:.0f} s of CPU time; "
                "cells not reached count as not run")
    log = (read_untrusted(job.scratch / "probe.log", max(0, log_size(job) - MAX_LOG), MAX_LOG) or b"")
    lines = log.decode(errors="replace").strip().splitlines()
    return "the probe stopped outside any cell: " + (lines[-1][:200] if lines else "no output")


def log_size(job):
    return file_size(job.scratch / "probe.log")


def file_size(path):
    """Bytes of a regular file the probe left (0 for anything else: a link, a FIFO, nothing)."""
    try:
        status = os.lstat(path)
    except OSError:
        return 0
    return status.st_size if stat.S_ISREG(status.st_mode) else 0


def scratch_notes(job):
    """What the notebook did to its scratch space, when it matters: filling it up."""
    used = max(job.used, sandbox.scratch_usage(job.scratch))
    if job.box.mode == "bwrap" and used >= 0.9 * job.box.scratch:
        return [f"the notebook filled its {job.box.scratch / sandbox.GIB:g} GiB scratch space "
                f"({used / sandbox.GIB:.2f} GiB used): writes beyond it failed; the space was deleted after grading"]
    return []


def keep_log(job, endings=()):
    """The end of the probe's log, kept in build/grading/logs/<student>.log before the scratch folder goes, and a
    last line of the grader's own: how each attempt ended."""
    folder = job.scratch.parent.parent / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    tail = read_untrusted(job.scratch / "probe.log", max(0, log_size(job) - MAX_LOG), MAX_LOG) or b""
    ended = f"\n[grader] attempts ended: {', '.join(endings)}\n".encode()
    (folder / f"{job.scratch.name}.log").write_bytes(tail + ended)


def load_records(data):
    """The records in a task file's bytes, or None unless it is the zip torch.save writes, with no bomb in it.

    Parsing happens in the grader's process: a deflated entry (a few MB that inflate to a huge tensor) or a
    large pickle (a byte per empty dict) could exhaust its memory and stop every submission's grading.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, TypeError, ValueError):
        return None
    if any(entry.compress_type != zipfile.ZIP_STORED or entry.filename.endswith(".pkl") and
           entry.file_size > MAX_PICKLE for entry in entries):
        return None
    return torch.load(io.BytesIO(data), weights_only=True)


def collect(job, run):
    """Read back every cell output and task record the probe left (keeping outputs of stopped cells)."""
    for index in range(len(job.program)):
        data = read_untrusted(job.scratch / "out" / f"cell_{index}.json", limit=MAX_CELL)
        if data is not None and index not in run.cells:
            try:
                run.cells[index] = json.loads(data)
            except (ValueError, RecursionError):  # RecursionError: nested a million deep
                continue
    for task in job.recorded_tasks():
        size = file_size(job.scratch / "out" / f"task_{task}.pt")
        if size > MAX_FILE:  # a model far beyond the task's sizes: said so, not mistaken for a forged file
            run.oversized[task] = size
            continue
        try:
            records = load_records(read_untrusted(job.scratch / "out" / f"task_{task}.pt"))
        except Exception:  # noqa: BLE001 -- a damaged or forged file: the task counts as not graded
            continue
        if isinstance(records, list) and all(isinstance(record, dict) for record in records):
            run.records[task] = records
