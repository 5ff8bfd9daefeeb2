"""Property probes of a post-norm encoder block whose output is wrong (an encoder block, or a model built of them).

Each probe changes a few loaded weights (restored afterwards) or watches a submodule, and fails saying which
property of the post-norm layout does not hold: norm2 last, norm1 feeding the feed-forward network, a residual
path around each sub-layer, the activation between the two Linear layers.
"""
from contextlib import contextmanager

import torch
import torch.nn as nn

from ._core import Diagnosis

ACTIVATION_NEVER_CALLED = Diagnosis(
    "activation-never-called",
    "the `activation` argument is never called: build the feed-forward network as "
    "Linear(embed_dim, feedforward_dim), activation(), Linear(feedforward_dim, embed_dim).")


def _output(block, x):
    try:
        result = block(x)
        return (result[0] if isinstance(result, (tuple, list)) else result).detach()
    except Exception:  # noqa: BLE001 -- only a probe
        return None


@contextmanager
def _set(slots, values):
    """Temporarily give the parameters named in values (role -> number) that constant value."""
    saved = {role: slots[role].detach().clone() for role in values if role in slots}
    try:
        with torch.no_grad():
            for role in saved:
                slots[role].fill_(values[role])
        yield
    finally:
        with torch.no_grad():
            for role, value in saved.items():
                slots[role].copy_(value)


def _standardised(rows):
    """Whether every row (last axis) has mean 0 and variance 1, as nn.LayerNorm with weight 1 and bias 0 gives."""
    if rows is None:
        return False
    mean, variance = rows.mean(-1), rows.var(-1, unbiased=False)
    return torch.allclose(mean, torch.zeros_like(mean), atol=1e-6) \
        and torch.allclose(variance, torch.ones_like(variance), atol=1e-3)


def _feedforward_input(block, x):
    seen = []
    hook = block.feedforward.register_forward_pre_hook(lambda module, inputs: seen.append(inputs[0].detach()))
    try:
        _output(block, x)
    finally:
        hook.remove()
    return seen[0] if len(seen) == 1 else None


def _depends_on_x(block, x):
    first, second = _output(block, x), _output(block, x + torch.linspace(-1, 1, x.numel()).view_as(x).to(x.dtype))
    return first is None or second is None or not torch.allclose(first, second, atol=1e-9)


def explain_block(task, what, block, x, slots):
    """Fail naming the first post-norm property that the (eval-mode, dropout-free) block violates."""
    outputs = _output(block, x)
    if outputs is None or outputs.shape != x.shape or not torch.isfinite(outputs).all():
        return
    with _set(slots, {"norm2.weight": 1.0, "norm2.bias": 0.0}):
        rows = _output(block, x)
        if not _standardised(rows):
            _explain_normalised_axis(task, what, rows)
            task.fail(f"{what}: with norm2's weight 1 and bias 0 the output rows should have mean 0 and variance 1, "
                      "but do not: the block must end with norm2, x = norm2(x + dropout(feedforward(x))) (post-norm).")
    with _set(slots, {"norm1.weight": 1.0, "norm1.bias": 0.0}):
        if not _standardised(_feedforward_input(block, x)):
            task.fail(f"{what}: with norm1's weight 1 and bias 0 the feed-forward network's input should have rows of "
                      "mean 0 and variance 1, but does not: feed it norm1's output, x = norm1(x + dropout(attended)).")
    silent = {"attention": ("attention.o_proj.weight", "attention.o_proj.bias"),
              "the feed-forward network": ("feedforward.out.weight", "feedforward.out.bias")}
    for name, roles in silent.items():
        with _set(slots, dict.fromkeys(roles, 0.0)):
            if not _depends_on_x(block, x):
                task.fail(f"{what}: with the output of {name} set to zero, the block's output no longer depends on "
                          f"its input: the residual connection around {name} is missing (x + sub-layer output).")
    with _set(slots, {"feedforward.out.weight": 0.0, "feedforward.out.bias": 0.0}):
        if not _depends_on_attention(block, x, slots["attention.o_proj.weight"]):
            task.fail(f"{what}: with the feed-forward network's output set to zero, the block's output no longer "
                      "depends on the attention: the residual around the feed-forward network must add norm1's "
                      "output, x = norm1(x + dropout(attended)); x = norm2(x + dropout(feedforward(x))), not the "
                      "block's input.")


def _explain_normalised_axis(task, what, rows):
    """Fail naming the axis that the output is standardised along, when it is one other than the last."""
    axes = [axis for axis in range(rows.dim() - 1) if _standardised(rows.movedim(axis, -1))] if rows is not None else []
    if axes:
        task.fail(f"{what}: with norm2's weight 1 and bias 0 the output is standardised along axis {axes[0]} (size "
                  f"{rows.size(axes[0])}), not along the last: layer normalisation normalises each token's embed_dim "
                  "features, nn.LayerNorm(embed_dim) applied to (B, L, D).")


def _depends_on_attention(block, x, weight):
    """Whether doubling the attention's output projection changes the block's output."""
    first = _output(block, x)
    saved = weight.detach().clone()
    try:
        with torch.no_grad():
            weight.mul_(2)
        second = _output(block, x)
    finally:
        with torch.no_grad():
            weight.copy_(saved)
    return first is None or second is None or not torch.allclose(first, second, atol=1e-9)


def explain_activation(task, what, make_block, x, feedforward_dim):
    """Fail unless the activation is called once per forward, on the feed-forward's hidden (..., feedforward_dim)."""
    calls = []

    class Recording(nn.ReLU):
        def forward(self, input):
            calls.append(tuple(input.shape))
            return super().forward(input)

    try:
        make_block(Recording)(x)
    except Exception:  # noqa: BLE001 -- only a probe
        return
    if not calls:
        task.fail(f"{what}: {ACTIVATION_NEVER_CALLED}", ACTIVATION_NEVER_CALLED.slug)
    widths = sorted({shape[-1] for shape in calls})
    if len(calls) > 1 or widths != [feedforward_dim]:
        times = "once" if len(calls) == 1 else f"{len(calls)} times"
        task.fail(f"{what}: `activation` is applied {times} per forward, to width {' and '.join(map(str, widths))}; it "
                  "belongs once between the two Linear layers, on the hidden width "
                  f"feedforward_dim = {feedforward_dim}.")
