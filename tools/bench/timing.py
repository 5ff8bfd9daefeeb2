"""Timing for the bench: alternating rounds, forward + backward and optimizer steps, op counts, equal outputs.

Model-agnostic: the modules to time are arguments (an assignment's bench module passes its reference in).
"""
import math
import statistics
import time

import torch

from course_lib.metrics import classification_loss


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


def no_grad_forward(module, inputs):
    """Callable running module(inputs) without autograd (inference: generate, an accuracy), in the module's mode.

    Args:
        module: nn.Module mapping inputs to its output.
        inputs: its input tensor.

    Returns:
        Callable taking no arguments.
    """
    def call():
        with torch.no_grad():
            module(inputs)

    return call


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
