"""How the check-speed tests time a check: one warm-up call, then timed calls, the checks' printed output silenced.

A check is timed in CPU seconds on one torch thread (time.process_time counts every thread of this process), not
on the wall clock: a busy machine does not change it, and on one thread it is about the wall time the check takes
on an idle core (a student's Colab has two).

The tests compare the median of the timed calls with the limit. A check does the same work on every call, so a lone
slow call is the machine's doing, not the check's: on CI one call of a trained model's check took 1.17 s of CPU
time between four of 0.30-0.43 s, and the maximum failed the run.
"""
import contextlib
import io
import statistics
import time

import torch


def timings(run, runs=5):
    """CPU seconds of `runs` calls of run() after one warm-up call; prints their median and maximum (`pytest -s`)."""
    seconds, threads = [], torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            run()
            for _ in range(runs):
                start = time.process_time()
                run()
                seconds.append(time.process_time() - start)
    finally:
        torch.set_num_threads(threads)
    print(f"median {statistics.median(seconds) * 1e3:.1f} ms, max {max(seconds) * 1e3:.1f} ms of CPU time")
    return seconds


def cpu_seconds(run, runs=5):
    """The median CPU seconds of `runs` timed calls of run() (see timings); the number the tests hold to a limit."""
    return statistics.median(timings(run, runs))
