"""How many torch threads a notebook's training should use:
`python -m tools.measure_threads [--load N] [--assignment NAME]`.

Times the notebook's training step (a batch from its DataLoader, forward, backward, AdamW) and one evaluation
pass (its validation data) of its default model on the CPU, with torch on 1 and on 2 threads. The assignment's
bench says how its notebook trains (course/<name>/bench.py: thread_setup); the default is the first registered
assignment whose bench does. It measures twice: on the machine as it is, then with N busy-loop processes of its
own (default 1: one other program keeping a core busy, as on a shared 2-core machine). Within a condition the
thread settings alternate in short rounds, so a change in the rest of the machine's load hits both alike.
Prints one table, with the load average (os.getloadavg, 1 minute) before and after each condition: a load
above 0 before the idle condition means it was not idle. Takes well under two minutes.
"""
import argparse
import multiprocessing
import os
import platform
import statistics
import time
from contextlib import contextmanager

import torch

from course import registry
from course.reference import reference_of
from course.slices import slice_of
from course_lib.device import cpu_threads
from course_lib.training import evaluate

THREADS = (1, 2)
WARMUP_STEPS = 10  # per thread setting and condition, not timed
ROUND_SECONDS, MIN_STEPS = 2.0, 3  # a slow setting times fewer steps per round, so a run stays short
TRAIN_SEQUENCES = 4_096  # enough batches for every round; the notebook draws more, of the same shape


def busy_loop():
    while True:
        pass


@contextmanager
def synthetic_load(processes):
    """Run `processes` busy-loop processes for the duration of the block."""
    workers = [multiprocessing.get_context("fork").Process(target=busy_loop, daemon=True) for _ in range(processes)]
    for worker in workers:
        worker.start()
    try:
        time.sleep(1.0 if workers else 0.0)  # let the scheduler settle them on the cores
        yield
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()


def notebook_setup(name=None):
    """The training the assignment's bench describes (see course/<name>/bench.py: thread_setup), and its name.

    name: the assignment; None: the first registered one whose bench has a thread_setup.
    """
    names = [name] if name else [assignment.name for assignment in registry.assignments()]
    name = next(name for name in names if hasattr(slice_of(name).bench, "thread_setup"))
    return slice_of(name).bench.thread_setup(reference_of(name), TRAIN_SEQUENCES), name


def seconds_per_step(setup, steps, budget=ROUND_SECONDS):
    """Wall time per training step, the batch's loading included, as a student waits for it.

    Runs `steps` steps, or fewer (at least MIN_STEPS) once `budget` seconds have passed.
    """
    model, optimizer = setup["model"], setup["optimizer"]
    model.train()
    start, done = time.perf_counter(), 0
    while done < steps and (done < MIN_STEPS or time.perf_counter() - start < budget):
        inputs, labels = next(setup["batches"])
        loss = setup["loss"](model(inputs), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        done += 1
    return (time.perf_counter() - start) / done


def seconds_per_evaluation(model, val_loader):
    start = time.perf_counter()
    evaluate(model, val_loader, torch.device("cpu"))
    return time.perf_counter() - start


def measure_condition(setup, rounds, steps):
    """{threads: (step times, evaluation times)}: `rounds` rounds, each timing every thread setting in turn."""
    times = {threads: ([], []) for threads in THREADS}
    for threads in THREADS:
        with cpu_threads(threads):
            seconds_per_step(setup, min(WARMUP_STEPS, steps))
    for _ in range(rounds):
        for threads in THREADS:
            with cpu_threads(threads):
                times[threads][0].append(seconds_per_step(setup, steps))
                times[threads][1].append(seconds_per_evaluation(setup["model"], setup["val_loader"]))
    return times


def table_rows(condition, times, load_before, load_after):
    """One line per thread setting: median and range over rounds, in ms, and the ratio to 1 thread."""
    one_thread = statistics.median(times[1][0])
    rows = []
    for threads, (steps, evaluations) in times.items():
        step = statistics.median(steps)
        rows.append(f"{condition:<26} {threads:>7} {1e3 * step:>9.1f} {1e3 * min(steps):>6.1f}-{1e3 * max(steps):<6.1f}"
                    f" {step / one_thread:>8.2f} {1e3 * statistics.median(evaluations):>9.0f}"
                    f"   {load_before:.2f} -> {load_after:.2f}")
    return rows


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=int, default=1, help="busy-loop processes for the loaded condition (0: skip it)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per condition (each times every setting)")
    parser.add_argument("--steps", type=int, default=40,
                        help=f"training steps per setting and round (fewer once {ROUND_SECONDS:g} s have passed)")
    parser.add_argument("--assignment", help="whose notebook's training (default: the first whose bench has one)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    default_threads = torch.get_num_threads()
    setup, name = notebook_setup(args.assignment)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} "
          f"(its default: {default_threads} threads); {name}: {setup['about']}; {args.rounds} rounds x {args.steps} "
          "steps")
    print(f"{'condition':<26} {'threads':>7} {'ms/step':>9} {'range':^13} {'vs 1 thr':>8} {'ms/eval':>9}"
          "   load avg (1 min) before -> after")
    conditions = {"machine as it is": 0, f"+ {args.load} busy process(es)": args.load}
    for condition, processes in conditions.items():
        if condition != "machine as it is" and processes == 0:
            continue
        load_before = os.getloadavg()[0]
        with synthetic_load(processes):
            times = measure_condition(setup, args.rounds, args.steps)
        print("\n".join(table_rows(condition, times, load_before, os.getloadavg()[0])), flush=True)
    print("ms/step: median over rounds (range: fastest-slowest round); vs 1 thr: median ms/step / 1 thread's; "
          "ms/eval: one pass over the validation data.")


if __name__ == "__main__":
    main()
