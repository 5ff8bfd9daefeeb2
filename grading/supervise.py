"""Run one submission's probe to the end, whatever its code does.

The probe logs when each cell starts and ends. A cell that runs past its limit (plus a grace, so
the probe's own alarm normally stops it first) or a process that dies inside a cell (os._exit, a
crash, memory) gets the whole sandbox killed; the probe then starts again without that cell,
skipping tasks already recorded, at most MAX_ATTEMPTS times. Everything read back is untrusted:
files are opened without following links, size-capped, and tensors loaded with weights_only=True.
"""
import io
import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from . import sandbox
from .match import DEFINES
from .program import cell_label

GRACE = 10.0  # seconds past a cell's limit before the sandbox is killed
MAX_ATTEMPTS = 4
MAX_TOTAL = 1200.0  # seconds for all attempts of one submission
MAX_FILE = 256 << 20


@dataclass
class Job:
    """One submission's probe: its program and where and how it runs."""

    program: list  # [ProgramCell]
    scratch: Path
    runtime: Path
    course_root: Path
    mode: str  # sandbox mode, see grading/sandbox.py
    slot: int = 0
    threads: int = 1
    deadline: float = 0.0

    def recorded_tasks(self):
        """Tasks whose records the probe has written so far."""
        names = (path.stem.partition("_")[2] for path in (self.scratch / "out").glob("task_*.pt"))
        return {int(name) for name in names if name.isdigit()}


@dataclass
class ProbeRun:
    """What came back from a submission's probe."""

    cells: dict = field(default_factory=dict)  # program index -> output (stdout, stderr, error, ...)
    records: dict = field(default_factory=dict)  # task -> [record per case]
    notes: list = field(default_factory=list)  # for the report
    seconds: float = 0.0


def read_untrusted(path):
    """The bytes of a regular file the probe wrote, without following a link it may have planted."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(handle, "rb") as file:
        if not os.path.isfile(path) or os.fstat(file.fileno()).st_size > MAX_FILE:
            return None
        return file.read()


def read_events(path, offset):
    """New complete lines of the progress log since offset: ([event], new offset)."""
    data = read_untrusted(path) or b""
    end = data.rfind(b"\n", offset) + 1
    events = []
    for line in data[offset:end].splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events, max(end, offset)


def kill(process):
    """Kill the sandbox: its process group, hence every process in its PID namespace."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def watch(process, progress, program, deadline):
    """Follow one attempt until it finishes: ("done" | "died" | "timeout" | "total", cell index or -1)."""
    offset, current, started, done = 0, -1, 0.0, False
    while True:
        finished = process.poll() is not None  # before reading, so the last events of a finished probe are seen
        events, offset = read_events(progress, offset)
        for event in events:
            kind, cell = event.get("event"), event.get("cell", -1)
            if kind == "start" and isinstance(cell, int) and 0 <= cell < len(program):
                current, started = cell, time.monotonic()
            elif kind == "end":
                current = -1
            done = done or kind == "done"
        if finished:
            return ("done" if done else "died"), current
        if current >= 0 and time.monotonic() - started > program[current].limit + GRACE:
            kill(process)
            return "timeout", current
        if time.monotonic() > deadline:
            kill(process)
            return "total", current
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
    "timeout": ("CellTimeoutError",
                "the cell ran past its {limit:.0f} s limit and was stopped; grading went on without it"),
    "died": ("KernelDied", "the Python process exited while running this cell (os._exit, a crash, or out of memory); "
                           "grading went on without it"),
}


def stopped_output(kind, cell):
    ename, text = STOPPED[kind]
    return {"stdout": "", "stderr": "", "displays": [], "tampered": [], "seconds": cell.limit,
            "error": {"ename": ename, "evalue": text.format(limit=cell.limit), "frames": []}}


def attempt(job, skip):
    """Start the probe once with these cells skipped; (how it ended, cell index)."""
    done = sorted(job.recorded_tasks())
    (job.scratch / "input" / "resume.json").write_text(json.dumps({"skip": resume_plan(job.program, skip, done)}))
    argv, env, cwd = sandbox.command(job.mode, job.scratch, job.runtime, job.course_root, job.slot, job.threads)
    with open(job.scratch / "probe.log", "ab") as log:
        process = subprocess.Popen(argv, env=env or None, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        return watch(process, job.scratch / "out" / "progress.jsonl", job.program, job.deadline)


def run_probe(job):
    """Run a submission's probe, restarting past cells that hang or kill it; return what it recorded."""
    started, skip, run = time.monotonic(), [], ProbeRun()
    job.deadline = started + MAX_TOTAL
    sandbox.prepare_scratch(job.scratch, job.mode, job.slot, job.runtime / "mpl")
    program = [asdict(cell) for cell in job.program]
    (job.scratch / "input" / "program.json").write_text(json.dumps(program))
    for _ in range(MAX_ATTEMPTS):
        ended, cell = attempt(job, skip)
        if ended == "done":
            break
        if cell < 0 or ended == "total":
            run.notes.append(probe_failure(job, ended))
            break
        kind = "timeout" if ended == "timeout" else "died"
        run.cells[cell] = stopped_output(kind, job.program[cell])
        run.notes.append(f"{cell_label(job.program[cell])}: {run.cells[cell]['error']['evalue']}")
        skip.append(cell)
    else:
        run.notes.append(f"grading gave up after {MAX_ATTEMPTS} stopped cells; cells not reached count as not run")
    collect(job, run)
    run.seconds = time.monotonic() - started
    return run


def probe_failure(job, ended):
    """A note for an attempt that ended outside any cell (the sandbox failed, or the total limit)."""
    if ended == "total":
        return f"grading stopped after {MAX_TOTAL:.0f} s in all; cells not reached count as not run"
    log = (read_untrusted(job.scratch / "probe.log") or b"").decode(errors="replace").strip().splitlines()
    return "the probe stopped outside any cell: " + (log[-1][:200] if log else "no output")


def collect(job, run):
    """Read back every cell output and task record the probe left (keeping outputs of stopped cells)."""
    for index in range(len(job.program)):
        data = read_untrusted(job.scratch / "out" / f"cell_{index}.json")
        if data is not None and index not in run.cells:
            try:
                run.cells[index] = json.loads(data)
            except ValueError:
                continue
    for task in job.recorded_tasks():
        try:
            records = torch.load(io.BytesIO(read_untrusted(job.scratch / "out" / f"task_{task}.pt")), weights_only=True)
        except Exception:  # noqa: BLE001 -- a damaged or forged file: the task counts as not graded
            continue
        if isinstance(records, list) and all(isinstance(record, dict) for record in records):
            run.records[task] = records
