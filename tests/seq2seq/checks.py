"""What the seq2seq check tests share: the reference namespace, a mutant's namespace, timing a check."""
import contextlib
import functools
import io
import statistics
import time

from course.reference import load_reference, reference_source
from course.registry import assignment


@functools.lru_cache(maxsize=1)
def source():
    """The source of the seq2seq reference answers (provided cells included)."""
    return reference_source(assignment("seq2seq"))


@functools.lru_cache(maxsize=1)
def reference():
    """The namespace of the seq2seq reference answers (loaded once per test session)."""
    return load_reference(source())


def variant(change):
    """The namespace of the reference after a change: a known mistake (a Mutant) or an edit(source) -> source."""
    edit = change.apply if hasattr(change, "apply") else change
    return load_reference(edit(source()))


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
