"""Grade submissions several at a time, each on a sandbox uid of its own, and say how far the run has got and how
busy the machine was."""
import os
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .sandbox import lease_slots
from .sandbox.cpuclock import cores as usable_cores


class Progress:
    """One line per finished submission: done / total, failures so far, the estimated time left."""

    def __init__(self, total, clock=time.monotonic, out=print):
        self.total, self.clock, self.out = total, clock, out
        self.started, self.done, self.failed, self.lock = clock(), 0, 0, threading.Lock()

    def finished(self, result):
        """Count a finished submission (failed: it could not be run and judged) and print the line."""
        with self.lock:
            self.done += 1
            self.failed += bool(result.error)
            elapsed = self.clock() - self.started
            left = elapsed / self.done * (self.total - self.done)
            self.out(f"[{self.done}/{self.total}] graded {result.student}: {result.score:g}/{result.max_score:g} in "
                     f"{result.seconds:.0f} s; {self.failed} failed so far; about {left:.0f} s left", flush=True)


def grade_all(submissions, grade_one, jobs, progress):
    """grade_one(submission, slot) for every submission, jobs at a time, longest first; results in student order."""
    slots, (leased, locks) = queue.Queue(), lease_slots(jobs)
    for slot in leased:  # uids no other grading run on this machine uses while this one runs
        slots.put(slot)

    def task(submission):
        """Grade one submission on a free slot (its probe's uid)."""
        slot = slots.get()
        try:
            result = grade_one(submission, slot)
        finally:
            slots.put(slot)
        progress.finished(result)
        return result

    ordered = sorted(submissions, key=lambda s: -training_cells(s))
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(task, ordered))
    finally:
        for lock in locks:
            lock.close()
    return sorted(results, key=lambda result: result.student)


def load_warning(jobs, cores=None, load=None):
    """A warning when JOBS asks for more probes at once than the machine has free cores, else ''.

    Free cores: the CPUs this process may use minus the 1-minute load average, to the nearest whole core. Limits
    count CPU time, so a busy machine costs no points, only time (and re-runs alone of cells stopped by the
    wall-clock backstop).
    """
    cores = cores or usable_cores()
    load = os.getloadavg()[0] if load is None else load
    free = max(0, round(cores - load))
    if jobs <= free:
        return ""
    return (f"WARNING: JOBS={jobs} but only {free} of {cores} cores are free (load average {load:.1f}): cells are "
            "limited by CPU time, so scores do not change, but grading takes longer, and a cell stopped by its "
            f"wall-clock backstop is re-run alone. JOBS={max(1, free)} would grade as fast with less waiting.")


class LoadSampler:
    """The 1-minute load average, sampled every `every` seconds in a thread while grading runs (a context manager)."""

    def __init__(self, every=10.0):
        self.every, self.samples, self.stop = every, [], threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self):
        while True:
            self.samples.append(os.getloadavg()[0])
            if self.stop.wait(self.every):
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def summary(self):
        """{"cores", "mean", "max", "samples", "every"}: the load during grading, for the report."""
        samples = self.samples or [os.getloadavg()[0]]
        return {"cores": usable_cores(), "mean": sum(samples) / len(samples), "max": max(samples),
                "samples": len(samples), "every": self.every}


def training_cells(submission):
    """How many cells of the submission call train(...): a cheap guess of how long its probe takes."""
    try:
        return submission.notebook.read_text(errors="replace").count("train(") if submission.notebook else 0
    except OSError:
        return 0
