"""Measure the peak memory and the wall time of one call, on CPU or on CUDA.

On CUDA the caching allocator keeps exact statistics, so we read them. On CPU
nothing keeps a high-water mark, so we replay the allocator's own records of
every allocation and free that the profiler saw during the call. It is the
autograd profiler that torch.profiler.profile drives, used directly: the
wrapper's start imports torch._inductor, 0.8 s of CPU time in a fresh process
(torch 2.13), to read a CUDA-graph setting a CPU measurement never uses.
"""
import os
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch.autograd import profiler as autograd_profiler

from .calls import student_call

BYTES_PER_MIB = 2**20
CUDA_METHOD = "torch.cuda.max_memory_allocated"
CPU_METHOD = "torch.autograd.profiler memory events (CPU allocator)"

# Name the profiler gives to the records of single allocations and frees.
_MEMORY_RECORD_NAME = "[memory]"
# Records on these device types come from host-memory allocators.
_HOST_DEVICE_TYPES = {
    torch.autograd.DeviceType.CPU,
    torch.autograd.DeviceType.MKLDNN,
    torch.autograd.DeviceType.IDEEP,
}


@dataclass
class Measurement:
    """Peak memory and median time of one callable.

    Args:
        peak_bytes: peak of the memory allocated during the call, above what was
            allocated before it (what the call returns counts: it is allocated then).
        seconds: median wall time of the call over the timed runs.
        method: how the memory was measured, in words.
    """

    peak_bytes: int
    seconds: float
    method: str

    @property
    def peak_mib(self) -> float:
        """Peak memory in MiB (2**20 bytes)."""
        return self.peak_bytes / BYTES_PER_MIB


@student_call
def measure(fn, device, repeats=3, warmup=1):
    """Run fn() (no args) on `device` (torch.device or str), return peak memory and median time.

    Timing goes first so that its warmup runs also warm up caches, lazy inits
    and allocators before the memory run: the peak is that of a steady-state call.
    Every result of fn() is dropped as soon as it has been measured, so an
    autograd graph hanging off it is freed and nothing outlives `measure`.
    fn itself owns any state it mutates (e.g. parameter .grad buffers: call
    zero_grad(set_to_none=True) inside fn if each call should allocate them).

    Args:
        fn: callable taking no arguments, e.g. a forward or forward+backward pass.
        device: where fn runs: "cpu", "cuda", "cuda:1" or a torch.device.
        repeats: number of timed runs; their median is reported.
        warmup: number of untimed runs before the timed ones.

    Returns:
        Measurement with peak_bytes, seconds and method.
    """
    seconds = median_seconds(fn, device, repeats=repeats, warmup=warmup)
    peak_bytes, method = peak_memory_bytes(fn, device)
    return Measurement(peak_bytes=peak_bytes, seconds=seconds, method=method)


def peak_memory_bytes(fn, device):
    """Run fn() once and return the peak memory it allocated above the prior level.

    Args:
        fn: callable taking no arguments.
        device: torch.device or str; "cuda..." reads the CUDA allocator's
            statistics, "cpu" replays the profiler's allocation records.

    Returns:
        (peak_bytes, method): peak_bytes >= 0, method names the measurement.
    """
    device = torch.device(device)
    if device.type == "cuda":
        return _cuda_peak_bytes(fn, device), CUDA_METHOD
    if device.type == "cpu":
        return _cpu_peak_bytes(fn), CPU_METHOD
    raise ValueError(f"peak memory is measured on cpu or cuda only, not {device.type}")


@student_call
def median_seconds(fn, device, repeats=3, warmup=1):
    """Median wall time of fn() over `repeats` runs, after `warmup` untimed runs.

    CUDA kernels run asynchronously, so the device is synchronized before the
    clock starts (nothing earlier leaks in) and before it stops (the call's
    kernels are all included).

    Args:
        fn: callable taking no arguments.
        device: torch.device or str the work runs on.
        repeats: number of timed runs (at least 1).
        warmup: number of untimed runs before them.

    Returns:
        Median of the timed runs, in seconds.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    device = torch.device(device)
    for _ in range(warmup):
        fn()  # the result is dropped at once
    return statistics.median(_time_one_call(fn, device) for _ in range(repeats))


def _time_one_call(fn, device):
    _synchronize(device)
    start = time.perf_counter()
    result = fn()
    _synchronize(device)
    elapsed = time.perf_counter() - start
    # Freeing the result is left out of the clock: it is not part of the call.
    del result
    return elapsed


def _synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _cuda_peak_bytes(fn, device):
    # Pending kernels may still allocate or free; settle them before the baseline.
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    baseline = torch.cuda.memory_allocated(device)
    result = fn()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - baseline
    del result
    return max(peak, 0)


def _cpu_peak_bytes(fn):
    # The profiler cannot size a free of a block allocated before it started, so
    # it drops such frees: memory the call frees from before it does not offset
    # what it allocates (CUDA's statistics would net the two).
    with _quiet_native_stderr(), autograd_profiler.profile(use_cpu=True, profile_memory=True) as prof:
        # Dropping the result inside the window records its free too; the
        # running maximum already includes its allocation, so the peak is unchanged.
        fn()
    return _peak_of_running_total(_host_memory_records(prof))


@contextmanager
def _quiet_native_stderr():
    """Silence C++-level writes to stderr: the profiler prints two log lines per run, which a notebook would show."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _host_memory_records(prof):
    """Every host allocation (+bytes) and free (-bytes) the profiler saw, in time order.

    The FunctionEvents of prof.events() cannot be used: they fold each record
    that falls inside an op into the net cpu_memory_usage of that op and of all
    its parents, so a temporary that an op allocates and frees internally
    vanishes, and only records outside any op stay as "[memory]" events. The
    raw kineto events keep one "[memory]" record per allocation and per free.

    Args:
        prof: a finished torch.autograd.profiler.profile run with profile_memory=True.

    Returns:
        List of signed byte counts, ordered by the time they happened.
    """
    raw_events = prof.kineto_results.events()
    records = [
        (event.start_ns(), event.nbytes())
        for event in raw_events
        if event.name() == _MEMORY_RECORD_NAME and event.device_type() in _HOST_DEVICE_TYPES
    ]
    # A stable sort keeps the emission order of records with equal timestamps.
    records.sort(key=lambda record: record[0])
    return [nbytes for _, nbytes in records]


def _peak_of_running_total(signed_byte_counts):
    # The total starts at 0, the level before the call: frees of memory that
    # existed before can push it below 0, but the peak above the start is >= 0.
    running_total = 0
    peak = 0
    for nbytes in signed_byte_counts:
        running_total += nbytes
        peak = max(peak, running_total)
    return peak
