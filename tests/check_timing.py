"""How the check-speed tests time a check: one warm-up call, then timed calls, the checks' printed output silenced."""
import contextlib
import io
import statistics
import time


def timings(run, runs=5):
    """Seconds of `runs` calls of run() after one warm-up call; prints their median and maximum (`pytest -s`)."""
    seconds = []
    with contextlib.redirect_stdout(io.StringIO()):
        run()
        for _ in range(runs):
            start = time.perf_counter()
            run()
            seconds.append(time.perf_counter() - start)
    print(f"median {statistics.median(seconds) * 1e3:.1f} ms, max {max(seconds) * 1e3:.1f} ms")
    return seconds
