"""Figures used by the notebook; every helper returns the matplotlib Figure it drew."""
import time

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
import numpy as np
import torch

from .attention_stats import explained_variance
from .calls import student_call
from .schedule import warmup_cosine_factor


@student_call
def use_plot_style():
    """The course's look for every figure: seaborn's white grid and deep palette, from the style sheets matplotlib
    ships (matplotlib's own sizes kept), so that a notebook need not import seaborn (about 1 s: it imports scipy.stats
    and pandas) until the one figure of the course that seaborn draws."""
    plt.style.use(["seaborn-v0_8-whitegrid", "seaborn-v0_8-deep"])


@student_call
def plot_positional_encoding(pe):
    """Heatmap of a positional-encoding table.

    Args:
        pe: tensor (max_len, embed_dim) or (1, max_len, embed_dim).
    """
    table = torch.as_tensor(pe).detach().cpu().reshape(-1, pe.shape[-1]).numpy()  # (max_len, embed_dim)
    fig, ax = plt.subplots(figsize=(10, 4))
    image = ax.imshow(table.T, aspect="auto", cmap="RdBu", vmin=-1, vmax=1, interpolation="nearest")
    ax.set(title="Sinusoidal positional encoding", xlabel="position in sequence (token index)",
           ylabel="embedding dimension")
    ax.grid(False)
    fig.colorbar(image, ax=ax, label="value")
    return fig


@student_call
def plot_lr_schedule(base_lr, warmup_steps, max_steps, zoom_steps=None):
    """Learning rate against optimizer step: the warm-up enlarged on the left, the whole schedule on the right.

    Args:
        base_lr: peak learning rate.
        warmup_steps: length of the linear warm-up.
        max_steps: step at which the schedule reaches 0.
        zoom_steps: steps shown in the left panel; defaults to 5 * warmup_steps (at most max_steps).
    """
    zoom_steps = min(zoom_steps or 5 * max(warmup_steps, 1), max_steps)
    steps = np.arange(max_steps + 1)
    rates = np.array([base_lr * warmup_cosine_factor(step, warmup_steps, max_steps) for step in steps])
    fig, (zoom_ax, full_ax) = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained",
                                           gridspec_kw={"width_ratios": [1, 1.6]})
    zoom_ax.plot(steps[: zoom_steps + 1], rates[: zoom_steps + 1])
    zoom_ax.set(title=f"Warm-up: the first {zoom_steps:,} steps", xlim=(0, zoom_steps))
    full_ax.plot(steps, rates)
    full_ax.axvspan(0, zoom_steps, color="tab:orange", alpha=0.2, label=f"left panel (steps 0-{zoom_steps:,})")
    full_ax.set(title=f"Whole schedule: {max_steps:,} steps", xlim=(0, max_steps))
    for ax in (zoom_ax, full_ax):
        ax.axvline(warmup_steps, color="grey", linestyle="--", label=f"end of warm-up (step {warmup_steps:,})")
        ax.set(xlabel="optimizer step", ylabel="learning rate", ylim=(0, base_lr * 1.08))
        ax.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
        ax.legend(loc="lower right" if ax is zoom_ax else "upper right")
    fig.suptitle("Warm-up + cosine learning-rate schedule")
    return fig


def percent(fraction):
    """A fraction as a percentage with the fewest decimals (up to 2) that state it: 0.95 -> '95%', 0.998 -> '99.8%'."""
    for digits in range(3):
        text = f"{fraction:.{digits}%}"
        if abs(float(text[:-1]) / 100 - fraction) < 1e-12:
            return text
    return text


def plot_history(history, target_accuracy=0.95,
                 chance_loss=np.log(2),  # noqa: B008 -- a float, immutable: a default computed once is safe
                 chance_label="ln 2 (chance, binary)", target_label="target", check_accuracy=None,
                 eval_label="validation", accuracy_title="Validation accuracy"):
    """Loss, validation accuracy and learning rate against optimizer step.

    Args:
        history: a training History.
        target_accuracy: drawn as the accuracy's target line, labelled target_label and the number; None draws none.
        chance_loss, chance_label: the loss of a uniform guess, drawn as a dotted line, and its legend entry.
        check_accuracy: optional, what the task's check asks, drawn as its own line where it differs from the target.
        eval_label, accuracy_title: what the evaluated data is called in the loss legend, and the accuracy panel's
            title (an assignment scoring held-out text rather than a validation set says so).
    """
    fig, (loss_ax, acc_ax, lr_ax) = plt.subplots(1, 3, figsize=(15, 3.8))
    loss_ax.plot(history.step[1:], history.train_loss[1:], label="train (mean since last eval)")
    loss_ax.plot(history.step, history.val_loss, label=eval_label)
    loss_ax.axhline(chance_loss, color="grey", linestyle=":", label=chance_label)
    loss_ax.set(title="Loss", xlabel="optimizer step", ylabel="cross-entropy (nats)")
    loss_ax.legend()
    acc_ax.plot(history.step, history.val_accuracy, color="tab:green")
    if target_accuracy is not None:  # None: a task judged by another measure (a language model's bits per byte)
        acc_ax.axhline(target_accuracy, color="red", linestyle="--", label=f"{target_label} {percent(target_accuracy)}")
    if check_accuracy is not None and check_accuracy != target_accuracy:
        acc_ax.axhline(check_accuracy, color="tab:orange", linestyle=":",
                       label=f"the check needs {percent(check_accuracy)}")
    acc_ax.set(title=accuracy_title, xlabel="optimizer step", ylabel="accuracy",
               ylim=accuracy_limits(history.val_accuracy, target_accuracy, check_accuracy))
    if acc_ax.get_legend_handles_labels()[0]:
        acc_ax.legend()
    step_lr = getattr(history, "step_lr", None)  # every step's rate, where the History recorded it
    if step_lr and history.lr:
        lr_ax.plot(range(history.step[0], history.step[0] + len(step_lr) + 1), [history.lr[0], *step_lr],
                   color="tab:purple")
    else:
        lr_ax.plot(history.step, history.lr, color="tab:purple")
    lr_ax.set(title="Learning rate", xlabel="optimizer step", ylabel="learning rate")
    fig.tight_layout()
    return fig


def accuracy_limits(accuracies, *lines):
    """The accuracy panel's y-limits: up to 1 where a target line is drawn (lines: its levels, None for none drawn),
    else up to the highest accuracy with a tenth of the range as headroom (a language model's next-token accuracy
    stays far below 1); from at most 0.4."""
    measured = [accuracy for accuracy in accuracies if accuracy == accuracy]  # NaN skipped
    lowest = min([0.4, *measured]) - 0.01
    if any(line is not None for line in lines) or not measured:
        return lowest, 1.01
    return lowest, min(1.01, max(measured) + 0.1 * (max(measured) - lowest) + 0.01)


class LiveCurves:
    """train() callback that redraws plot_history in place in a notebook (does nothing elsewhere).

    Drawing a figure costs about as much as dozens of training steps (0.56 s of CPU time in a Jupyter kernel on a
    2-core machine), so it redraws at most every min_seconds and spends at most max_share of the time drawing: a draw
    that took d seconds is followed by at least d * (1 - max_share) / max_share seconds without one. train() calls
    finish() at the end, which draws the final state.
    """

    @student_call
    def __init__(self, target_accuracy=0.95, min_seconds=2.0, max_share=0.1, **chance):
        """chance: plot_history's other options (chance_loss and chance_label, default one binary logit's ln 2;
        target_label, check_accuracy; eval_label and accuracy_title, default the validation set's)."""
        self.target_accuracy, self.min_seconds, self.max_share, self.chance = (target_accuracy, min_seconds,
                                                                               max_share, chance)
        self.handle, self.next_draw = None, float("-inf")

    def __call__(self, history):
        if time.perf_counter() >= self.next_draw:
            self._draw(history)
        return False

    def finish(self, history):
        self._draw(history)

    def pause_after(self, draw_seconds):
        """Seconds to wait after a draw that took draw_seconds: min_seconds, or longer to keep to max_share."""
        return max(self.min_seconds, draw_seconds * (1 - self.max_share) / self.max_share)

    def _draw(self, history):
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:
            return
        if get_ipython() is None:
            return
        started = time.perf_counter()
        fig = plot_history(history, self.target_accuracy, **self.chance)
        if self.handle is None:
            self.handle = display(fig, display_id=True)
        else:
            self.handle.update(fig)
        plt.close(fig)  # shown through the handle; closing stops a duplicate at the cell's end
        finished = time.perf_counter()
        self.next_draw = finished + self.pause_after(finished - started)


@student_call
def plot_explained_variance(attention, untrained=None, threshold=0.99, title=None):
    """Explained variance of each head's attention maps against the rank kept, with references to compare.

    Each panel shows the median curve over the examples given, the same for the untrained model when
    given, and a head in which every query looks up a different key (a permutation matrix, such as
    "look at the mirror position"), whose curve is k / L.

    Args:
        attention: (num_heads, L, L) for one example or (N, num_heads, L, L) for N examples, of one layer.
        untrained: optional, the same layer's maps before training, same shape as attention.
        threshold: level drawn as a dashed line.
        title: optional title of the whole figure (e.g. the layer).
    """
    curves = _median_curves(attention)  # (H, L)
    reference = None if untrained is None else _median_curves(untrained)  # (H, L)
    num_heads, length = curves.shape
    cols = min(num_heads, 4)
    rows = -(-num_heads // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False, layout="constrained")
    ranks = np.arange(1, length + 1)
    for head, ax in enumerate(axes.flat):
        if head >= num_heads:
            ax.set_visible(False)
            continue
        # the curves above the threshold's line (zorder): near 1 they would otherwise hide under it
        ax.plot(ranks, curves[head], zorder=3, label="trained" if reference is not None else "this model")
        head_title = f"head {head}: {threshold:.0%} at rank {_rank_at(curves[head], threshold)}"
        if reference is not None:
            ax.plot(ranks, reference[head], "--", zorder=3, label="untrained")
            head_title += f" (untrained {_rank_at(reference[head], threshold)})"
        ax.plot(ranks, ranks / length, ":", color="grey", zorder=3, label="permutation (mirror lookup)")
        ax.axhline(threshold, color="red", linewidth=0.8, zorder=2, label=f"{threshold:.0%} of the energy")
        ax.set(title=head_title, xlabel="rank k (singular values kept)", ylabel="share of energy kept",
               xlim=(1, length), ylim=(0, 1.02))
        ax.legend(loc="lower right", fontsize="small")  # below the permutation's diagonal: no curve runs there
    if title:
        fig.suptitle(title)
    return fig


def _median_curves(attention):
    maps = attention.reshape(-1, *attention.shape[-3:])  # (N, H, L, L)
    return np.median(explained_variance(maps), axis=0)  # (H, L)


def _rank_at(curve, threshold):
    return int(np.searchsorted(curve, threshold - 1e-12) + 1)


@student_call
def plot_scaling(seq_lens, series, ylabel, title, ideal_slopes=None):
    """Log-log plot of measurements against sequence length, with optional ideal slopes.

    Args:
        seq_lens: list of sequence lengths.
        series: dict name -> list of values (same length as seq_lens).
        ylabel: axis label including the unit, e.g. "peak memory (MiB)".
        title: figure title.
        ideal_slopes: dict name -> slope; draws c * L**slope through that series' first point.
    """
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lengths = np.asarray(seq_lens, dtype=float)
    for name, values in series.items():
        line, = ax.plot(lengths, values, "o-", label=name)
        slope = (ideal_slopes or {}).get(name)
        if slope is not None:
            ideal = values[0] * (lengths / lengths[0]) ** slope
            ax.plot(lengths, ideal, ":", color=line.get_color(), label=f"slope {slope} (ideal)")
    ax.set(xscale="log", yscale="log", xlabel="sequence length L (tokens)", ylabel=ylabel, title=title)
    ax.set_xticks(lengths, [f"{length:,.0f}" for length in lengths])  # the lengths measured, not powers of 10
    ax.set_xticks([], minor=True)
    ax.legend()
    return fig


@student_call
def plot_attention_maps(attention, title="Attention weights"):
    """Heatmaps of attention weights, one panel per head, on one colour scale from 0 to the largest weight shown.

    Args:
        attention: tensor (L_q, L_k) or (num_heads, L_q, L_k).
        title: figure title.
    """
    maps = torch.as_tensor(attention).detach().cpu().reshape(-1, *attention.shape[-2:])  # (num_heads, L_q, L_k)
    largest = float(maps.max())
    fig, axes = plt.subplots(1, len(maps), figsize=(2.2 + 3.0 * len(maps), 3.4), squeeze=False,
                             sharey=True, layout="constrained")
    for head, (ax, weights) in enumerate(zip(axes.flat, maps)):
        image = ax.imshow(weights.numpy(), cmap="viridis", vmin=0, vmax=largest)
        ax.set(title=f"head {head}" if len(maps) > 1 else "", xlabel="key position (token index)")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(MaxNLocator(integer=True))  # tokens: whole positions, never 2.5
        ax.grid(False)
    axes.flat[0].set_ylabel("query position (token index)")
    fig.colorbar(image, ax=axes.ravel().tolist(), label=f"attention weight (0 to {largest:.2f})")
    fig.suptitle(title)
    return fig
