"""The gpt assignment's bench (`make bench ASSIGNMENT=gpt`; interface: tools/bench/runner.py).

Three sections, on the device in use (CUDA if available, else CPU):
  training    the notebook's Task 7 run (gpt_defaults, train() with answer_loss, answer_accuracy on the validation
              problems, stopped at STOP_AT_ACCURACY), one run per seed: seconds and steps to the first evaluation at
              check_task_7's 95% and to the stop; then the stopped model's exact answers on fresh problems written by
              the reference generate at temperature 0 (real decoding, not the teacher-forced verdict);
  attention   the reference CausalSelfAttention against the same projections and RoPE around
              F.scaled_dot_product_attention(is_causal=True), at the training batch's size: outputs and input
              gradients checked equal, then a training step's forward + backward and a no-grad forward, in alternation;
  generation  the reference generate with and without the KV cache (the notebook's model, a batch of prompts, 256
              new tokens, greedy, alternating runs): identical tokens, the speed-up, and each step's time against the
              sequence's length (a forward pre-hook stamps every step) with log-log exponents.
Each goal is one row of the table; figures() writes the per-step plot.
The SDPA route lives here, not in course_lib: it restates Task 2's answer.
"""
import statistics
import time

import matplotlib

matplotlib.use("Agg")  # the bench writes PNGs; it never opens a window

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from checkers.gpt.trained import CHECK_SEED, CHECK_SIZE, TARGET_ACCURACY
from course_lib import gpt as defaults
from course_lib.gpt import PROMPT_LEN, SEQ_LEN, AdditionDataset, answer_accuracy, answer_loss
from course_lib.device import seed_everything
from course_lib.training import stop_at_accuracy
from tools.bench import scaling as bench_scaling, timing as bench_timing, training as bench_training
from tools.bench.figures import saved
from tools.bench.goals import Goal, ms, seconds_or_not_reached, seeds_to_target

TRAINING_SECONDS_GOAL = 30.0  # median seconds of training to check_task_7's mark (issue 13)
WORST_SECONDS_GOAL = 60.0  # no seed's whole notebook run over DEVELOPERS.md's ceiling for a training task
ATTENTION_RATIO_GOAL = 1.3  # reference CausalSelfAttention / the SDPA route (issue 13)
SPEEDUP_GOAL = 5.0  # generate without the cache / with it, 256 new tokens (issue 13)
# Log-log exponent of a step's time against the length it extends. Measured at batch 8 before this bench (RESULTS.md
# of the groundwork, 2 runs): cached 0.19 / 0.23, uncached 1.10 / 1.14; over batches 1 to 16: cached 0.02-0.31,
# uncached 0.61-1.24. The cached one is not 0: attention over the cache and its torch.cat grow with the length.
CACHED_EXPONENT_MAX, UNCACHED_EXPONENT_MIN = 0.35, 0.8
# The stopped models are judged as check_task_7 judges them: its pass mark, on its own fresh problems.
FRESH_SEED = CHECK_SEED
TRAIN_SEED, VAL_SEED = 1, 2  # the notebook's data cell

COURSE = dict(batch_size=defaults.BATCH_SIZE, seq_len=SEQ_LEN - 1, embed_dim=defaults.MODEL["embed_dim"],
              num_heads=defaults.MODEL["num_heads"], max_len=defaults.MODEL["max_len"])  # a training batch
SETTINGS = {
    "full": dict(seeds=(0, 1, 2), max_seconds=120.0, fresh_size=CHECK_SIZE, attention_size=COURSE, rounds=15,
                 prompts=8, new_tokens=256, generate_repeats=5, length_bins=16),
    "quick": dict(seeds=(0,), max_seconds=0.5, fresh_size=200, attention_size=COURSE, rounds=3,
                  prompts=8, new_tokens=24, generate_repeats=1, length_bins=4),
}


# ----------------------------------------------------------------------------- training to the target


def notebook_data():
    """The notebook's data cell: the training loader (seed 1, shuffled) and the validation problems (seed 2)."""
    train_data = AdditionDataset(defaults.TRAIN_SIZE, seed=TRAIN_SEED)
    loader = DataLoader(train_data, batch_size=defaults.BATCH_SIZE, shuffle=True)
    return loader, AdditionDataset(defaults.VAL_SIZE, seed=VAL_SEED)


def generated_accuracy(ref, model, sequences, device):
    """Fraction of problems (N, SEQ_LEN) whose answer the reference generate writes exactly at temperature 0."""
    sequences = sequences.to(device)  # (N, SEQ_LEN)
    written = ref["generate"](model, sequences[:, :PROMPT_LEN], SEQ_LEN - PROMPT_LEN, temperature=0)  # (N, SEQ_LEN)
    return (written == sequences).all(dim=1).float().mean().item()


def notebook_run(ref, seed, data, fresh, device, max_seconds):
    """Task 7's cell as the notebook runs it, with seed in place of its 0; then the stopped model on fresh problems.

    Returns:
        dict with seed, seconds and steps (training time to the stop, evaluations excluded), accuracy (the last
        validation accuracy), reached (the stop was reached), target_seconds / target_steps (first evaluation at
        >= TARGET_ACCURACY; None if none), fresh_accuracy, step_ms and wall_seconds.
    """
    loader, val = data
    seed_everything(seed)
    model = ref["GPT"](**defaults.MODEL).to(device)
    history, wall_seconds = bench_training.quiet_train(
        model, loader, None, device=device, **defaults.TRAINING, max_seconds=max_seconds, batch_loss=answer_loss,
        evaluate_fn=lambda model: answer_accuracy(model, val.sequences), callbacks=[
            stop_at_accuracy(defaults.STOP_AT_ACCURACY)])
    target_seconds, target_steps = bench_training.first_reaching(history, TARGET_ACCURACY)
    seconds, steps = history.seconds[-1], history.step[-1]
    return dict(seed=seed, seconds=seconds, steps=steps, accuracy=history.val_accuracy[-1],
                reached=history.val_accuracy[-1] >= defaults.STOP_AT_ACCURACY, target_seconds=target_seconds,
                target_steps=target_steps, fresh_accuracy=generated_accuracy(ref, model, fresh.sequences, device),
                step_ms=1e3 * seconds / max(steps, 1), wall_seconds=wall_seconds)


def training_section(ref, settings, device):
    """The notebook's Task 7 run for every seed, each stopped model scored on the same fresh problems.

    Returns:
        dict with the settings, runs, summarize_runs's figures (to the stop) and the medians to TARGET_ACCURACY.
    """
    data, fresh = notebook_data(), AdditionDataset(settings["fresh_size"], seed=FRESH_SEED)
    runs = [notebook_run(ref, seed, data, fresh, device, settings["max_seconds"]) for seed in settings["seeds"]]
    reached = [run for run in runs if run["target_seconds"] is not None]
    target = dict(target_all_reached=len(reached) == len(runs),
                  target_median_seconds=statistics.median(r["target_seconds"] for r in reached) if reached else None,
                  target_median_steps=statistics.median(r["target_steps"] for r in reached) if reached else None)
    return dict(model=defaults.MODEL, training=defaults.TRAINING, batch_size=defaults.BATCH_SIZE,
                stop_at=defaults.STOP_AT_ACCURACY, target=TARGET_ACCURACY, fresh_size=settings["fresh_size"],
                fresh_seed=FRESH_SEED, runs=runs, **bench_training.summarize_runs(runs), **target)


# ----------------------------------------------------------------------------- attention against SDPA


class Output(nn.Module):
    """The reference CausalSelfAttention called on x alone, its output kept (the cache it returns dropped)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        """x (B, L, D) -> out (B, L, D)."""
        return self.layer(x)[0]


class SDPAAttention(nn.Module):
    """The reference layer's projections and RotaryEmbedding around F.scaled_dot_product_attention(is_causal=True).

    Args:
        layer: the reference CausalSelfAttention (q_proj, k_proj, v_proj, o_proj, rotary, num_heads, head_dim);
            shared, not copied, so both routes hold the same weights.
    """

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        """x (B, L, D) -> out (B, L, D)."""
        layer, (batch_size, seq_len, embed_dim) = self.layer, x.shape
        heads = lambda t: t.view(batch_size, seq_len, layer.num_heads, layer.head_dim).transpose(1, 2)
        query, key = layer.rotary(heads(layer.q_proj(x))), layer.rotary(heads(layer.k_proj(x)))  # (B, H, L, head_dim)
        out = F.scaled_dot_product_attention(query, key, heads(layer.v_proj(x)), is_causal=True)  # (B, H, L, head_dim)
        return layer.o_proj(out.transpose(1, 2).reshape(batch_size, seq_len, embed_dim))  # (B, L, D)


def attention_pair(ref, size, device):
    """(reference route, SDPA route, input x (B, L, D)) for one reference CausalSelfAttention of the given size."""
    torch.manual_seed(0)
    layer = ref["CausalSelfAttention"](size["embed_dim"], size["num_heads"], size["max_len"]).to(device)
    x = torch.randn(size["batch_size"], size["seq_len"], size["embed_dim"], device=device)  # (B, L, D)
    return Output(layer), SDPAAttention(layer), x


def attention_section(ref, settings, device):
    """Outputs and input gradients checked equal, then fwd + bwd and no-grad forward timed in alternation.

    Returns:
        dict with size, match, max_abs_diff, grad_max_abs_diff, per pass ("forward_backward", "forward") the
        compare_speed figures (reference_seconds, other_seconds, ratio, rounds), and forward_ops: the tensor ops
        of one no-grad forward of each route ({"reference": n, "sdpa": m}, torch.profiler's outermost aten ops).
    """
    ours, sdpa, x = attention_pair(ref, settings["attention_size"], device)
    check = bench_timing.output_difference(ours, sdpa, x)
    passes = {"forward_backward": bench_timing.forward_backward, "forward": bench_timing.no_grad_forward}
    speeds = {name: bench_timing.compare_speed(make(ours, x), make(sdpa, x), device, settings["rounds"])
              for name, make in passes.items()}
    ops = {route: bench_timing.profile_ops(bench_timing.no_grad_forward(module, x))["ops"]
           for route, module in (("reference", ours), ("sdpa", sdpa))}  # warmed up by the timing above
    return dict(size=settings["attention_size"], **check, **speeds, forward_ops=ops)


# ----------------------------------------------------------------------------- generation with and without the cache


def step_seconds(ref, model, prompts, new_tokens, use_cache):
    """One greedy generate call: (tokens (B, P + N), its seconds, each step's seconds from one model call to the next).

    A forward pre-hook stamps the clock as each step calls the model; the last step ends when generate returns.
    On CUDA each stamp waits for the work queued before it, so a step's time is its work, not its launches.
    """
    stamps = []

    def stamp(*_):
        if prompts.is_cuda:
            torch.cuda.synchronize(prompts.device)
        stamps.append(time.perf_counter())

    handle = model.register_forward_pre_hook(stamp)
    try:
        stamp()
        start = stamps.pop()
        tokens = ref["generate"](model, prompts, new_tokens, temperature=0, use_cache=use_cache)  # (B, P + N)
        stamp()
    finally:
        handle.remove()
    return tokens, stamps[-1] - start, [later - earlier for earlier, later in zip(stamps, stamps[1:])]


def generation_runs(ref, model, prompts, new_tokens, repeats):
    """Cached and uncached calls in alternation after a warm-up: {True: [(tokens, seconds, steps)], False: [...]}."""
    for use_cache in (True, False):
        ref["generate"](model, prompts, 8, temperature=0, use_cache=use_cache)
    runs = {True: [], False: []}
    for _ in range(repeats):
        for use_cache in (True, False):  # alternating, so a change of load hits both
            runs[use_cache].append(step_seconds(ref, model, prompts, new_tokens, use_cache))
    return runs


def length_bins(lengths, seconds, bins):
    """Medians of (length, seconds) over `bins` runs of consecutive steps whose lengths grow by equal factors.

    A step that the scheduler preempted on a shared machine lasts several times its neighbours; a median over a
    bin of neighbouring lengths ignores it, where a fit through every step would bend towards it.

    Returns:
        (bin lengths, bin seconds): two lists of equal length (empty bins left out).
    """
    edges = np.geomspace(lengths[0], lengths[-1] + 1, bins + 1)
    index = np.searchsorted(edges, lengths, side="right") - 1  # the bin of each step
    kept = [i for i in range(bins) if (index == i).any()]
    return ([float(np.median(np.asarray(lengths)[index == i])) for i in kept],
            [float(np.median(np.asarray(seconds)[index == i])) for i in kept])


def per_step_curve(runs, lengths, bins):
    """Median over the runs of each step's seconds, and its log-log exponent over the steps after the first.

    The first cached step feeds the whole prompt (P positions, every later one feeds 1): it is left out of the fit
    for both routes alike. The exponent is fitted to the medians of `bins` length bins (length_bins), and, for
    comparison, to every step (exponent_every_step).
    """
    median_steps = [statistics.median(steps[index] for _, _, steps in runs) for index in range(len(lengths))]
    bin_lengths, bin_seconds = length_bins(lengths[1:], median_steps[1:], bins)
    return dict(step_seconds=median_steps, seconds=statistics.median(seconds for _, seconds, _ in runs),
                bin_lengths=bin_lengths, bin_seconds=bin_seconds,
                exponent=bench_scaling.loglog_slope(bin_lengths, bin_seconds),
                exponent_every_step=bench_scaling.loglog_slope(lengths[1:], median_steps[1:]))


def generation_section(ref, settings, device):
    """generate on the notebook's validation prompts with the untrained default model (time does not depend on
    the weights), with and without the cache.

    Returns:
        dict with prompts, prompt_len, new_tokens, repeats, lengths (the length each step extends), identical (every
        run's tokens equal), speedup (median uncached / median cached seconds), cached and uncached per_step_curve.
    """
    seed_everything(0)
    model = ref["GPT"](**defaults.MODEL).to(device)
    val = AdditionDataset(defaults.VAL_SIZE, seed=VAL_SEED)  # the notebook times its first validation prompts
    prompts = val.sequences[:settings["prompts"], :PROMPT_LEN].to(device)  # (B, P)
    runs = generation_runs(ref, model, prompts, settings["new_tokens"], settings["generate_repeats"])
    lengths = list(range(PROMPT_LEN, PROMPT_LEN + settings["new_tokens"]))  # step t extends P + t tokens
    first = runs[True][0][0]
    identical = all(torch.equal(tokens, first) for use_cache in runs for tokens, _, _ in runs[use_cache])
    cached, uncached = (per_step_curve(runs[use_cache], lengths, settings["length_bins"])
                        for use_cache in (True, False))
    return dict(prompts=settings["prompts"], prompt_len=PROMPT_LEN, new_tokens=settings["new_tokens"],
                repeats=settings["generate_repeats"], lengths=lengths, identical=identical,
                speedup=uncached["seconds"] / cached["seconds"], cached=cached, uncached=uncached)


def figures(report, out):
    """Log-log plot of a generation step's time against the length it extends (the fitted bin medians), slopes 0
    and 1 drawn; returns [its path]."""
    generation = report["generation"]
    cached, uncached = generation["cached"], generation["uncached"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, curve, slope in (("with cache", cached, 0), ("without cache", uncached, 1)):
        lengths = np.asarray(curve["bin_lengths"])
        line, = ax.plot(lengths, [s * 1e3 for s in curve["bin_seconds"]], "o-",
                        label=f"{label} (fitted exponent {curve['exponent']:.2f})")
        ax.plot(lengths, curve["bin_seconds"][0] * 1e3 * (lengths / lengths[0]) ** slope, ":", color=line.get_color(),
                label=f"slope {slope} (ideal)")
    ax.set(xscale="log", yscale="log", xlabel="sequence length the step extends (tokens)",
           ylabel="time per step (ms)", title=(
               f"generate: time of one step against the sequence length\n({generation['prompts']} prompts of "
               f"{generation['prompt_len']} tokens, untrained default model; medians of {generation['repeats']} "
               "run(s) and of each length bin)"))
    ax.legend()
    return [saved(fig, out / "generation_step_time.png")]


# ----------------------------------------------------------------------------- goals and table


def training_goals(training):
    """The notebook's run: median seconds to 95%, the worst seed's whole run, and the stopped models on fresh data."""
    runs, target = training["runs"], training["target"]
    label = f"Task 7 as in the notebook, first validation accuracy >= {target:.0%}"
    each = seeds_to_target(runs)
    median = training["target_median_seconds"]
    worst = max(runs, key=lambda run: run["seconds"])
    fresh = min(run["fresh_accuracy"] for run in runs)
    return [
        Goal("training", f"{label}: median of {len(runs)} seeds",
             f"{seconds_or_not_reached(median)} ({training['target_median_steps']} steps); {each}",
             f"<= {TRAINING_SECONDS_GOAL:.0f} s",
             training["target_all_reached"] and median <= TRAINING_SECONDS_GOAL),
        Goal("training", f"the notebook's stop at {training['stop_at']:.0%}: median, worst seed",
             f"{training['median_seconds']:.1f} s ({training['median_steps']:.0f} steps), worst "
             f"{worst['seconds']:.1f} s (seed {worst['seed']}, {worst['steps']} steps, acc {worst['accuracy']:.1%})",
             f"worst <= {WORST_SECONDS_GOAL:.0f} s",
             training["all_reached"] and worst["seconds"] <= WORST_SECONDS_GOAL),
        Goal("training", "training step time, per seed", ", ".join(f"{run['step_ms']:.1f} ms" for run in runs)),
        Goal("training", f"stopped models, reference generate (temperature 0) exactly right on "
             f"{training['fresh_size']:,} fresh problems (seed {training['fresh_seed']}): worst of {len(runs)}",
             f"{fresh:.1%} (all: {', '.join(format(run['fresh_accuracy'], '.1%') for run in runs)})",
             f">= {target:.0%}", fresh >= target),
    ]


def attention_goals(attention):
    """Outputs equal; the training step (fwd + bwd) held to ATTENTION_RATIO_GOAL; the no-grad forward reported."""
    size = attention["size"]
    section = f"attention B{size['batch_size']} L{size['seq_len']} D{size['embed_dim']} H{size['num_heads']}"
    pair = "CausalSelfAttention vs the same projections and RoPE with SDPA(is_causal=True)"
    step, forward = attention["forward_backward"], attention["forward"]
    return [
        Goal(section, f"{pair}: outputs, input grads",
             f"max|diff| {attention['max_abs_diff']:.0e}, grad {attention['grad_max_abs_diff']:.0e}", "allclose",
             attention["match"]),
        Goal(section, f"training step (fwd+bwd) ref / SDPA, medians of {step['rounds']} alternating rounds",
             f"{step['ratio']:.2f} ({ms(step['reference_seconds'])} / {ms(step['other_seconds'])})",
             f"<= {ATTENTION_RATIO_GOAL}", step["ratio"] <= ATTENTION_RATIO_GOAL),
        Goal(section, "forward only, no grad: ref / SDPA (tensor ops of one call)",
             f"{forward['ratio']:.2f} ({ms(forward['reference_seconds'])} / {ms(forward['other_seconds'])}; "
             f"{attention['forward_ops']['reference']} / {attention['forward_ops']['sdpa']} ops)"),
    ]


def generation_goals(generation):
    """Identical tokens, the cache's speed-up, and the per-step exponents with and without the cache."""
    section = f"generate B{generation['prompts']} P{generation['prompt_len']} +{generation['new_tokens']} tokens"
    cached, uncached = generation["cached"], generation["uncached"]
    steps = lambda curve: f"{ms(curve['bin_seconds'][0])} -> {ms(curve['bin_seconds'][-1])}"
    return [
        Goal(section, f"tokens with and without the cache, {generation['repeats']} run(s) each",
             "identical" if generation["identical"] else "DIFFERENT", "identical", generation["identical"]),
        Goal(section, "speed-up: median seconds without / with the cache",
             f"{generation['speedup']:.2f}x ({cached['seconds']:.3f} s / {uncached['seconds']:.3f} s with / without)",
             f">= {SPEEDUP_GOAL:.0f}x", generation["speedup"] >= SPEEDUP_GOAL),
        Goal(section, f"step time ~ length^p with the cache (first step excluded); bins {steps(cached)}",
             f"{cached['exponent']:.2f} (every step: {cached['exponent_every_step']:.2f})",
             f"<= {CACHED_EXPONENT_MAX}", cached["exponent"] <= CACHED_EXPONENT_MAX),
        Goal(section, f"step time ~ length^p without the cache; bins {steps(uncached)}",
             f"{uncached['exponent']:.2f} (every step: {uncached['exponent_every_step']:.2f})",
             f">= {UNCACHED_EXPONENT_MIN}", uncached["exponent"] >= UNCACHED_EXPONENT_MIN),
    ]


def goals(report, settings):
    """Every row of the table, section by section."""
    return (training_goals(report["training"]) + attention_goals(report["attention"])
            + generation_goals(report["generation"]))


SECTIONS = {"training": training_section, "attention": attention_section, "generation": generation_section}
