"""Grade submissions several at a time, each on a sandbox uid of its own, and say how far the run has got."""
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .run import lease_slots


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


def training_cells(submission):
    """How many cells of the submission call train(...): a cheap guess of how long its probe takes."""
    try:
        return submission.notebook.read_text(errors="replace").count("train(") if submission.notebook else 0
    except OSError:
        return 0
