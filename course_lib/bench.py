"""Measured performance: speed against other implementations, time to a target accuracy, attention scaling.

Model-agnostic on purpose: every function takes the modules, factories or callables to measure as
arguments, so no answer of the workbook lives in this package (tools/bench.py passes the reference in).
"""
import contextlib
import io
import math
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Optional

import numpy as np
import torch

from .device import seed_everything
from .metrics import classification_loss, predictions
from .scaling import measure_attention_scaling
from .training import train

FLOAT32_BYTES = 4
# Passes of the scaling study: what measure_attention_scaling's backward flag means, by name.
PASSES = {"forward": False, "forward_backward": True}


@dataclass
class Goal:
    """One row of the bench's table: a measured figure, and the goal it is held to (if any).

    Args:
        section: part of the bench, e.g. "training step".
        name: what was measured.
        measured: the figure, as shown (already formatted, unit included).
        goal: the target in words, e.g. "<= 1.3"; "" for a figure reported without a goal.
        passed: True / False against the goal; None for a figure without one.
    """

    section: str
    name: str
    measured: str
    goal: str = ""
    passed: Optional[bool] = None

    @property
    def verdict(self) -> str:
        """PASS, MISS, or "-" for a figure without a goal."""
        return "-" if self.passed is None else ("PASS" if self.passed else "MISS")


def goals_as_dicts(goals):
    """The goals as JSON-ready dicts (verdict included)."""
    return [dict(asdict(goal), verdict=goal.verdict) for goal in goals]


def format_table(goals, title="Measured performance"):
    """Plain-text table of the goals, one row each, with PASS / MISS where a goal applies.

    Args:
        goals: list of Goal.
        title: line printed above the table.

    Returns:
        The table as one string.
    """
    header = ("section", "measurement", "measured", "goal", "result")
    rows = [header] + [(g.section, g.name, g.measured, g.goal or "-", g.verdict) for g in goals]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = [" | ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    rule = "-+-".join("-" * width for width in widths)
    return "\n".join([title, lines[0], rule, *lines[1:]])


# ----------------------------------------------------------------------------- timing


def _synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def seconds_per_call(fn, device, number=1):
    """Wall time of one call of fn(), averaged over `number` back-to-back calls.

    Args:
        fn: callable taking no arguments.
        device: torch.device the work runs on (CUDA is synchronized around the clock).
        number: calls timed together; more calls make the clock's resolution and jitter negligible.

    Returns:
        Seconds per call.
    """
    _synchronize(device)
    start = time.perf_counter()
    for _ in range(number):
        fn()
    _synchronize(device)
    return (time.perf_counter() - start) / number


def calls_per_sample(fns, device, min_seconds=0.02):
    """How many back-to-back calls make every timed sample last at least min_seconds.

    Args:
        fns: callables taking no arguments (already warmed up).
        device: torch.device they run on.
        min_seconds: shortest sample wanted.

    Returns:
        int >= 1, the same for every callable so they are timed alike.
    """
    fastest = min(seconds_per_call(fn, device) for fn in fns)
    return max(1, math.ceil(min_seconds / max(fastest, 1e-9)))


def alternating_seconds(fns, device, rounds=15, warmup=3, min_sample_seconds=0.02):
    """Time several callables in alternation (A B A B ...), so a change of machine load hits all alike.

    Args:
        fns: dict name -> callable taking no arguments.
        device: where they run: "cpu", "cuda" or a torch.device.
        rounds: timed samples per callable.
        warmup: untimed calls of each callable first (lazy inits, caches, allocator).
        min_sample_seconds: each sample repeats the call until it lasts about this long.

    Returns:
        dict name -> list of `rounds` seconds-per-call samples, in round order.
    """
    device = torch.device(device)
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    number = calls_per_sample(fns.values(), device, min_sample_seconds)
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(seconds_per_call(fn, device, number))
    return samples


def compare_speed(reference_fn, other_fn, device, rounds=15, min_sample_seconds=0.02):
    """Median time of two callables measured in alternation, and the median of their per-round ratios.

    Args:
        reference_fn, other_fn: callables taking no arguments.
        device: where they run.
        rounds: alternating rounds (one sample of each per round).
        min_sample_seconds: shortest timed sample.

    Returns:
        dict with reference_seconds, other_seconds (medians, per call) and ratio (reference / other:
        > 1 means the reference is slower), from rounds adjacent in time.
    """
    samples = alternating_seconds({"reference": reference_fn, "other": other_fn}, device, rounds,
                                  min_sample_seconds=min_sample_seconds)
    ratios = [ref / other for ref, other in zip(samples["reference"], samples["other"])]
    return dict(reference_seconds=statistics.median(samples["reference"]),
                other_seconds=statistics.median(samples["other"]), ratio=statistics.median(ratios),
                rounds=rounds)


def forward_backward(module, inputs):
    """Callable running one forward and backward pass of module on inputs (gradients reset each time).

    Args:
        module: nn.Module mapping inputs to one tensor.
        inputs: its input tensor, e.g. (B, L, D).

    Returns:
        Callable taking no arguments.
    """
    def step():
        module.zero_grad(set_to_none=True)
        module(inputs).sum().backward()

    return step


def optimizer_step(model, inputs, labels, lr=1e-3, loss_fn=classification_loss):
    """Callable running one full training step (forward, loss, backward, AdamW update) of model.

    The optimizer is AdamW with the betas of course_lib.train, so the step is the one train() takes.

    Args:
        model: classifier mapping inputs (B, ...) to logits (B, num_classes).
        inputs: one batch of inputs.
        labels: (B,) labels of the batch.
        lr: learning rate.
        loss_fn: loss_fn(logits, labels) -> scalar tensor.

    Returns:
        Callable taking no arguments.
    """
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98))

    def step():
        loss = loss_fn(model(inputs), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def _is_outermost_op(event):
    """Whether a profiler event is a tensor op not called from inside another tensor op."""
    if not event.name.startswith("aten::"):
        return False
    parent = event.cpu_parent
    while parent is not None:  # backward and optimizer ops sit under non-aten events: look past those
        if parent.name.startswith("aten::"):
            return False
        parent = parent.cpu_parent
    return True


def profile_ops(fn):
    """Where the time of one call goes: how many tensor ops it runs and how long they take.

    Args:
        fn: callable taking no arguments (warmed up).

    Returns:
        dict with ops (outermost aten op calls: forward, backward and optimizer), op_seconds (their
        total CPU time) and wall_seconds, both under the profiler; the rest of the wall time is spent
        outside tensor ops (Python, autograd bookkeeping, the profiler's own records).
    """
    start = time.perf_counter()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    wall = time.perf_counter() - start
    outermost = [event for event in prof.events() if _is_outermost_op(event)]
    op_seconds = sum(event.cpu_time_total for event in outermost) / 1e6  # microseconds -> seconds
    return dict(ops=len(outermost), op_seconds=op_seconds, wall_seconds=wall)


# ----------------------------------------------------------------------------- equivalence


def output_difference(reference, other, inputs, rtol=1e-4, atol=1e-5):
    """Whether two modules compute the same function: outputs and input gradients on the same inputs.

    Args:
        reference, other: nn.Modules mapping inputs to one tensor.
        inputs: input tensor (float); a copy of it is differentiated.
        rtol, atol: torch.allclose tolerances (float32 sums in another order differ in the last bits).

    Returns:
        dict with match (bool: outputs and input gradients allclose), max_abs_diff (outputs)
        and grad_max_abs_diff (gradients with respect to the inputs).
    """
    outputs, grads = [], []
    for module in (reference, other):
        x = inputs.detach().clone().requires_grad_(True)
        out = module(x)
        # A fixed random cotangent checks every output element's gradient, not only their sum's.
        cotangent = torch.randn(out.shape, generator=torch.Generator().manual_seed(0)).to(out.device)
        out.backward(cotangent)
        module.zero_grad(set_to_none=True)
        outputs.append(out.detach())
        grads.append(x.grad)
    match = all(torch.allclose(a, b, rtol=rtol, atol=atol) for a, b in (outputs, grads))
    return dict(match=bool(match), max_abs_diff=float((outputs[0] - outputs[1]).abs().max()),
                grad_max_abs_diff=float((grads[0] - grads[1]).abs().max()))


# ----------------------------------------------------------------------------- time to accuracy


@torch.no_grad()
def held_out_accuracy(model, inputs, labels, batch_size=500):
    """Accuracy of model on a fixed set of examples, in eval mode (the mode is restored).

    Args:
        model: classifier mapping inputs (N, ...) to logits (N, num_classes).
        inputs: (N, ...) examples, on any device (moved in batches to the model's).
        labels: (N,) labels.
        batch_size: examples per forward pass.

    Returns:
        Fraction correct, a Python float.
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    predicted = torch.cat([predictions(model(batch.to(device))).cpu() for batch in inputs.split(batch_size)])
    model.train(was_training)
    return (predicted == labels.long().cpu()).float().mean().item()


class AccuracyStop:
    """train() callback: accuracy on fixed held-out data at every evaluation; stops at the target.

    Args:
        model: the model being trained.
        inputs, labels: the held-out data, e.g. the checker's (N, L, vocab) one-hot inputs and (N,) labels.
        target: accuracy at which training stops.
    """

    def __init__(self, model, inputs, labels, target):
        self.model, self.inputs, self.labels, self.target = model, inputs, labels, target
        self.accuracies = []

    def __call__(self, history):
        self.accuracies.append(held_out_accuracy(self.model, self.inputs, self.labels))
        return self.accuracies[-1] >= self.target


def train_to_accuracy(make_model, loaders, held_out, seed, target, device, training, max_seconds=None):
    """Train one freshly built model until its accuracy on held-out data reaches target.

    Args:
        make_model: callable returning a new nn.Module; called right after seed_everything(seed).
        loaders: (train_loader, val_loader) as train() takes them.
        held_out: (inputs, labels) the stopping accuracy is measured on.
        seed: seeds the model's initialization and the loader's shuffling.
        target: accuracy to reach, e.g. 0.95.
        device: where to train.
        training: keyword arguments of course_lib.train (num_epochs, lr, warmup_steps, ...).
        max_seconds: give up after this much training time.

    Returns:
        dict with seed, seconds (training time, evaluations excluded), steps, accuracy (the last one
        measured), reached (bool) and wall_seconds (the whole call, evaluations and data loading included).
    """
    seed_everything(seed)
    model = make_model().to(device)
    stop = AccuracyStop(model, *held_out, target)
    # train() draws a progress bar on stderr; the bench prints one table, so the bars are swallowed.
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        history = train(model, *loaders, device=torch.device(device), eval_every=50, max_seconds=max_seconds,
                        callbacks=[stop], **training)
    return dict(seed=seed, seconds=history.seconds[-1], steps=history.step[-1], accuracy=stop.accuracies[-1],
                reached=stop.accuracies[-1] >= target, wall_seconds=time.perf_counter() - start)


def summarize_runs(runs):
    """Median and worst training time over the runs of several seeds.

    Args:
        runs: list of train_to_accuracy results.

    Returns:
        dict with median_seconds, worst_seconds, median_steps, worst_steps and all_reached.
    """
    seconds, steps = [run["seconds"] for run in runs], [run["steps"] for run in runs]
    return dict(median_seconds=statistics.median(seconds), worst_seconds=max(seconds),
                median_steps=statistics.median(steps), worst_steps=max(steps),
                all_reached=all(run["reached"] for run in runs))


# ----------------------------------------------------------------------------- attention scaling


def attention_tensor_count(backward):
    """How many score-sized tensors attention holds at its peak.

    Forward: the scores and their softmax. Forward + backward: the softmax saved for backward, the
    gradient arriving at it and the gradient of the scores computed from both (the scores themselves
    are freed in the forward pass: softmax's backward needs only its output).
    """
    return 3 if backward else 2


def full_attention_bytes(batch_size, num_heads, seq_len, backward=False, element_bytes=FLOAT32_BYTES):
    """Bytes of full attention's (B, H, L, L) tensors at the peak of a forward (or forward + backward) pass.

    Returns:
        n * B * H * L**2 * element_bytes with n = attention_tensor_count(backward), an int.
    """
    return attention_tensor_count(backward) * batch_size * num_heads * seq_len**2 * element_bytes


def linformer_attention_bytes(batch_size, num_heads, seq_len, proj_dim, head_dim, backward=False,
                              element_bytes=FLOAT32_BYTES):
    """Bytes of Linformer's attention tensors: score-sized (B, H, L, k) ones and the projected K, V (B, H, k, d).

    Args:
        backward: count forward + backward (three score-sized tensors, and the gradients of the
            projected K and V) instead of the forward pass alone.

    Returns:
        (n * B * H * L * k + m * B * H * k * d) * element_bytes with n = attention_tensor_count(backward)
        and m = 4 with backward else 2, an int.
    """
    scores = attention_tensor_count(backward) * batch_size * num_heads * seq_len * proj_dim
    projected = (4 if backward else 2) * batch_size * num_heads * proj_dim * head_dim
    return (scores + projected) * element_bytes


def loglog_slope(xs, ys):
    """Least-squares slope of log(y) against log(x): the exponent p of y ~ c * x**p.

    Args:
        xs, ys: positive numbers, same length (at least 2).

    Returns:
        The fitted slope, a Python float.
    """
    log_x, log_y = np.log(np.asarray(xs, dtype=float)), np.log(np.asarray(ys, dtype=float))
    slope, _ = np.polyfit(log_x, log_y, 1)
    return float(slope)


def timed_runs(previous_lens, previous_seconds, seq_len, repeats, long_call_seconds):
    """Timed runs for the next point of a curve: 1 if it will be a long call, else `repeats`.

    A call of a second or more averages out its own jitter, and every extra run of the longest full
    attention costs as much as all the short points together. The next call's time is extrapolated
    quadratically (the fastest growth measured here) from the curve's last point.
    """
    if long_call_seconds is None or not previous_seconds:
        return repeats
    predicted = previous_seconds[-1] * (seq_len / previous_lens[-1]) ** 2
    return 1 if predicted > long_call_seconds else repeats


def scaling_curves(layers, seq_lens, batch_size, embed_dim, device, repeats=3, long_call_seconds=None):
    """Peak memory and time of each attention layer, forward only and forward + backward, at each length.

    Args:
        layers: dict name -> factory(seq_len) returning a (B, L, D) -> (B, L, D) module.
        seq_lens: increasing sequence lengths L.
        batch_size, embed_dim: size of the random input (B, L, D).
        device: where to run.
        repeats: timed runs per point (median).
        long_call_seconds: points expected to take longer than this are timed once (see timed_runs).

    Returns:
        dict with method (how memory was measured) and, per pass in PASSES, dict name ->
        {"peak_bytes": [...], "seconds": [...]} with one entry per length.
    """
    curves = {pass_name: {name: dict(peak_bytes=[], seconds=[]) for name in layers} for pass_name in PASSES}
    method = None
    for index, seq_len in enumerate(seq_lens):
        for pass_name, backward in PASSES.items():
            for name, make_layer in layers.items():
                curve = curves[pass_name][name]
                runs = timed_runs(seq_lens[:index], curve["seconds"], seq_len, repeats, long_call_seconds)
                (measured,) = measure_attention_scaling({name: make_layer}, [seq_len], batch_size=batch_size,
                                                        embed_dim=embed_dim, device=device, backward=backward,
                                                        repeats=runs)[name]
                curve["peak_bytes"].append(measured.peak_bytes)
                curve["seconds"].append(measured.seconds)
                method = measured.method
    return dict(method=method, **curves)
