"""What the seq2seq check tests share: the reference namespace, a mutant's namespace, timing a check."""
import contextlib
import functools
import io
import statistics
import time

from course.reference import load_reference, reference_source
from course.registry import assignment


@functools.lru_cache(maxsize=None)
def reference():
    """The namespace of the seq2seq reference answers (provided cells included)."""
    return load_reference(reference_source(assignment("seq2seq")))


def variant(mutant):
    """The namespace of the reference with one known mistake planted."""
    return load_reference(mutant.apply(reference_source(assignment("seq2seq"))))


def timings(run, runs=5):
    """Seconds of `runs` calls of run() after one warm-up call, their printed output silenced."""
    seconds = []
    with contextlib.redirect_stdout(io.StringIO()):
        run()
        for _ in range(runs):
            start = time.perf_counter()
            run()
            seconds.append(time.perf_counter() - start)
    print(f"median {statistics.median(seconds) * 1e3:.1f} ms, max {max(seconds) * 1e3:.1f} ms")
    return seconds
