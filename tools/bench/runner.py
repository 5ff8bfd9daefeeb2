"""Measured performance of one assignment's reference answers (run by `make bench`, one assignment at a time).

Usage: `python -m tools.bench --assignment NAME [--quick] [--out DIR] [--threads N]` (DIR defaults to results/NAME).
Runs the sections of the assignment's bench module on the device in use (CUDA if available, else CPU), prints one
table (each goal with its measured figure and PASS / MISS), and writes DIR/bench.json, DIR/bench.log (the
profiler's native stderr) and the module's figures.

An assignment's bench module is course/<NAME>/bench.py (course/slices.py lists it as a part of every slice). It defines:
  SETTINGS   {"full": dict, "quick": dict}: JSON-ready settings of a full run and of a --quick smoke run.
  SECTIONS   {section name: section(reference, settings, device) -> JSON-ready dict}, run in this order;
             reference is the namespace of the assignment's reference answers (course.reference.reference_of(NAME)).
  goals      goals(report, settings) -> list of tools.bench.goals.Goal, the table's rows; report holds "meta"
             and every section's result under its name.
  figures    optional: figures(report, out) -> list of the paths of the plots it wrote under the folder out.
The shared measurements live beside it: timing.py (equal outputs, alternating timing), training.py (time to a target
accuracy), scaling.py (memory and time against length), native.py (torch-native layers with a reference's weights),
goals.py (the table).
"""
import argparse
import contextlib
import json
import os
import platform
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # the bench writes PNGs; it never opens a window

import torch

from course import registry
from course.reference import reference_of
from course.slices import slice_of
from course_lib.device import get_device
from tools.bench.goals import format_table, goals_as_dicts

INTERFACE = ("SETTINGS", "SECTIONS", "goals")  # what a bench module must define; figures is optional


class BenchError(Exception):
    """The assignment cannot be benched; the message says, in one line, what to add."""


def load_bench(name, root=None):
    """The bench module of the registered assignment called name, checked to define INTERFACE.

    Args:
        name: the assignment's name in course.toml.
        root: the checkout whose course.toml is read (default: this one).

    Returns:
        The module course.<name>.bench.

    Raises:
        BenchError: name is not registered, has no module course/<name>/bench.py, or the module lacks part of INTERFACE.
    """
    path = f"course/{name}/bench.py"
    try:
        registry.assignment(name, root)
    except registry.RegistryError as error:
        raise BenchError(f"{error}: register it in course.toml, then add {path}") from None
    module = slice_of(name).optional("bench")
    if module is None:
        raise BenchError(f"{name} has no bench module: add {path} defining {', '.join(INTERFACE)} "
                         "(see tools/bench/runner.py)")
    lacking = [attribute for attribute in INTERFACE if not hasattr(module, attribute)]
    if lacking:
        raise BenchError(f"{path} defines no {', '.join(lacking)} (see tools/bench/runner.py)")
    return module


@contextlib.contextmanager
def native_stderr_to(path):
    """Point file descriptor 2 at a log file for a while.

    torch.profiler's C++ side writes a line to stderr at every start and stop (hundreds here);
    the log keeps them, and the table on stdout stays readable.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "w") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def describe_run(assignment, device, quick, settings):
    """Where and how the bench ran, for the JSON's meta section."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    return dict(assignment=assignment, device=str(device), device_name=name, torch=torch.__version__,
                python=platform.python_version(), threads=torch.get_num_threads(), cpu_count=os.cpu_count(),
                quick=quick, settings=settings, load_average_start=list(os.getloadavg()))


def run_sections(sections, ref, settings, device, log_path):
    """Run every section, printing one progress line each; returns (results, seconds per section)."""
    results, seconds = {}, {}
    with native_stderr_to(log_path):
        for name, section in sections.items():
            print(f"bench: {name} ...", flush=True)
            start = time.perf_counter()
            results[name] = section(ref, settings, device)
            seconds[name] = time.perf_counter() - start
    return results, seconds


def choose_threads(device, threads):
    """Set torch's intra-op threads: `threads` if given, else 1 on CPU.

    One thread on CPU because the course's tensors (B * L * D = 32 * 33 * 16 elements) are too small
    to gain from more, and because on a shared machine a second thread that loses its core makes
    every parallel op wait for it: on the course's 2-core machine, with one other busy process, a
    forward + backward of the classifier took about 15 ms with 2 threads against 3 ms with 1.
    """
    if threads:
        torch.set_num_threads(threads)
    elif device.type == "cpu":
        torch.set_num_threads(1)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", required=True, help="the assignment of course.toml to bench")
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes, one seed, short training")
    parser.add_argument("--out", default=None, help="folder for bench.json and the plots (default: results/NAME)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads; default 1 on CPU (see choose_threads), torch's choice on CUDA")
    return parser.parse_args(argv)


def table_title(meta):
    """First line of the table: what ran where, how long it took, and how busy the machine was."""
    load = "/".join(f"{value:.1f}" for value in meta["load_average_start"] + meta["load_average_end"][:1])
    quick = " -- QUICK smoke run, not the goals' conditions" if meta["quick"] else ""
    return (f"Measured performance of {meta['assignment']} on {meta['device']} ({meta['device_name']}, "
            f"{meta['threads']} thread(s), torch {meta['torch']}): {meta['wall_seconds']:.0f} s; load average "
            f"before 1/5/15 min, after 1 min {load}{quick}")


def bench(name, quick, out, threads=None):
    """Run the bench of the assignment called name, print the table, write out/bench.json and the figures.

    Returns:
        The report: dict with meta, every section's result under its name, and goals (JSON-ready rows).
    """
    module, device = load_bench(name), get_device()
    settings = module.SETTINGS["quick" if quick else "full"]
    choose_threads(device, threads)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    report = dict(meta=describe_run(name, device, quick, settings))
    results, seconds = run_sections(module.SECTIONS, reference_of(name), settings, device, out / "bench.log")
    report.update(results)
    goals = module.goals(report, settings)
    plots = module.figures(report, out) if hasattr(module, "figures") else []
    report["meta"].update(section_seconds=seconds, wall_seconds=time.perf_counter() - start,
                          load_average_end=list(os.getloadavg()), plots=[str(path) for path in plots])
    report["goals"] = goals_as_dicts(goals)
    (out / "bench.json").write_text(json.dumps(report, indent=1))
    print(format_table(goals, table_title(report["meta"])))
    return report


def main(argv=None):
    """Command line: bench one assignment; a registry or bench module that cannot serve stops with one line."""
    args = parse_args(argv)
    out = Path(args.out) if args.out else Path("results") / args.assignment
    try:
        return bench(args.assignment, args.quick, out, args.threads)
    except BenchError as error:
        sys.exit(f"bench: {error}")
