"""Figures used by the notebook; every helper returns the matplotlib Figure it drew."""
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from .schedule import warmup_cosine_factor


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


def plot_lr_schedule(base_lr, warmup_steps, max_steps):
    """Learning rate against optimizer step for the warm-up + cosine schedule."""
    steps = np.arange(max_steps + 1)
    rates = [base_lr * warmup_cosine_factor(step, warmup_steps, max_steps) for step in steps]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(steps, rates)
    ax.axvline(warmup_steps, color="grey", linestyle="--", label=f"end of warm-up ({warmup_steps} steps)")
    ax.set(title="Warm-up + cosine learning-rate schedule", xlabel="optimizer step", ylabel="learning rate")
    ax.legend()
    return fig


def plot_history(history, target_accuracy=0.95):
    """Loss, validation accuracy and learning rate against optimizer step."""
    fig, (loss_ax, acc_ax, lr_ax) = plt.subplots(1, 3, figsize=(15, 3.8))
    loss_ax.plot(history.step[1:], history.train_loss[1:], label="train (mean since last eval)")
    loss_ax.plot(history.step, history.val_loss, label="validation")
    loss_ax.axhline(np.log(2), color="grey", linestyle=":", label="ln 2 (chance, binary)")
    loss_ax.set(title="Loss", xlabel="optimizer step", ylabel="cross-entropy (nats)")
    loss_ax.legend()
    acc_ax.plot(history.step, history.val_accuracy, color="tab:green")
    acc_ax.axhline(target_accuracy, color="red", linestyle="--", label=f"target {target_accuracy:.0%}")
    acc_ax.set(title="Validation accuracy", xlabel="optimizer step", ylabel="accuracy", ylim=(0.4, 1.01))
    acc_ax.legend()
    lr_ax.plot(history.step, history.lr, color="tab:purple")
    lr_ax.set(title="Learning rate", xlabel="optimizer step", ylabel="learning rate")
    fig.tight_layout()
    return fig


class LiveCurves:
    """train() callback that redraws plot_history in place in a notebook (does nothing elsewhere).

    Drawing a figure costs about as much as dozens of training steps, so it redraws at most every
    min_seconds; train() calls finish() at the end, which draws the final state.
    """

    def __init__(self, target_accuracy=0.95, min_seconds=2.0):
        self.target_accuracy, self.min_seconds = target_accuracy, min_seconds
        self.handle, self.last_draw = None, float("-inf")

    def __call__(self, history):
        if time.perf_counter() - self.last_draw >= self.min_seconds:
            self._draw(history)
        return False

    def finish(self, history):
        self._draw(history)

    def _draw(self, history):
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:
            return
        if get_ipython() is None:
            return
        fig = plot_history(history, self.target_accuracy)
        if self.handle is None:
            self.handle = display(fig, display_id=True)
        else:
            self.handle.update(fig)
        plt.close(fig)  # shown through the handle; closing stops a duplicate at the cell's end
        self.last_draw = time.perf_counter()


def explained_variance(matrix):
    """Cumulative share of squared singular values: entry k-1 is the share kept by a rank-k approximation."""
    singular_values = torch.linalg.svdvals(matrix.detach().double().cpu())
    energy = torch.cumsum(singular_values**2, dim=0)
    return (energy / energy[-1]).numpy()


def plot_explained_variance(attention, threshold=0.99, title=None):
    """Explained variance of each head's attention matrix against the rank kept.

    Args:
        attention: tensor (num_heads, L, L), one example's attention maps of one layer.
        threshold: level drawn as a dashed line.
        title: optional title of the whole figure (e.g. the layer).
    """
    num_heads = attention.shape[0]
    cols = min(num_heads, 4)
    rows = -(-num_heads // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.4 * rows), squeeze=False)
    for head, ax in enumerate(axes.flat):
        if head >= num_heads:
            ax.set_visible(False)
            continue
        curve = explained_variance(attention[head])
        rank = int(np.searchsorted(curve, threshold) + 1)
        ax.plot(np.arange(1, len(curve) + 1), curve)
        ax.axhline(threshold, color="red", linestyle="--")
        ax.set(title=f"head {head}: {threshold:.0%} at rank {rank} of {len(curve)}", xscale="log",
               xlabel="rank k (singular values kept)", ylabel="explained variance", ylim=(0, 1.02))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


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
    ax.legend()
    return fig


def plot_attention_maps(attention, title="Attention weights"):
    """Heatmaps of attention weights, one panel per head.

    Args:
        attention: tensor (L_q, L_k) or (num_heads, L_q, L_k).
        title: figure title.
    """
    maps = torch.as_tensor(attention).detach().cpu().reshape(-1, *attention.shape[-2:])  # (num_heads, L_q, L_k)
    fig, axes = plt.subplots(1, len(maps), figsize=(3.6 * len(maps), 3.4), squeeze=False)
    for head, (ax, weights) in enumerate(zip(axes.flat, maps)):
        image = ax.imshow(weights.numpy(), cmap="viridis", vmin=0, vmax=1)
        ax.set(title=f"head {head}" if len(maps) > 1 else "", xlabel="key position", ylabel="query position")
        ax.grid(False)
    fig.colorbar(image, ax=axes.ravel().tolist(), label="weight")
    fig.suptitle(title)
    return fig
