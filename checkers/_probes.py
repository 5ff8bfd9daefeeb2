"""Property probes: measurements of a student's output that point at a cause, whatever the code looks like.

They run only after an output differs from the expected one, and never raise: each returns what it observed
(or None), and the checker turns that into one sentence.
"""
import warnings

import torch
from torch.overrides import TorchFunctionMode


# Operations meant for matrices, by what a message calls them: on a batched tensor they reverse all its axes
# (.T) or fail (the others).
_MATRIX_ONLY = {torch.mm: "torch.mm", torch.Tensor.mm: ".mm()", torch.t: "torch.t", torch.Tensor.t: ".t()"}


class _MatrixOnlySpy(TorchFunctionMode):
    """Records the matrix-only operations (`.T`, mm, t) applied to a tensor of more than two axes."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        batched = any(isinstance(arg, torch.Tensor) and arg.dim() > 2 for arg in args)
        if batched and getattr(func, "__self__", None) is torch.Tensor.T:
            self.seen.append(".T")
        elif batched and any(func is op for op in _MATRIX_ONLY):
            self.seen.append(next(name for op, name in _MATRIX_ONLY.items() if func is op))
        return func(*args, **(kwargs or {}))


def matrix_only_ops(fn, *args):
    """Names of the matrix-only operations fn(*args) applies to N-D tensors, in call order (errors ignored)."""
    spy = _MatrixOnlySpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own deprecation warning for .T on N-D tensors
        try:
            with spy:
                fn(*args)
        except Exception:  # noqa: BLE001 -- only a probe
            pass
    return spy.seen


def normalised_axis(weights, atol=1e-6):
    """The axis along which weights sum to 1 (the last one first), or None when there is none."""
    weights = weights.detach().double()
    if not torch.isfinite(weights).all():
        return None
    for axis in [weights.dim() - 1] + list(range(weights.dim() - 1)):
        sums = weights.sum(axis)
        if torch.allclose(sums, torch.ones_like(sums), atol=atol):
            return axis
    return None


def _centred_log(weights):
    logs = weights.detach().double().clamp_min(1e-300).log()
    return logs - logs.mean(-1, keepdim=True)


def temperature(got, expected, rtol=1e-4):
    """r such that got = softmax(r · logits) where expected = softmax(logits), along the last axis; else None.

    A wrong scale of the scores multiplies the logits: r = 1 / (wrong scale / right scale).
    """
    if got.shape != expected.shape or not (torch.isfinite(got).all() and (got > 0).all() and (expected > 0).all()):
        return None
    mine, theirs = _centred_log(got), _centred_log(expected)
    norm = theirs.pow(2).sum()
    if norm == 0:
        return None
    ratio = (mine * theirs).sum() / norm
    if (mine - ratio * theirs).abs().max() > rtol * max(1.0, theirs.abs().max().item()):
        return None
    return ratio.item()


def _attend(layer, x):
    """(outputs, attention) of layer(x, return_attention=True), detached, or None when that fails."""
    try:
        outputs, attention = layer(x, return_attention=True)
        return outputs.detach(), attention.detach()
    except Exception:  # noqa: BLE001 -- only a probe
        return None


def _with_change(layer, x, changes):
    """_attend(layer, x) with each parameter in changes (parameter -> function of it) replaced, then restored."""
    saved = [(parameter, parameter.detach().clone()) for parameter in changes]
    try:
        with torch.no_grad():
            for parameter, change in changes.items():
                parameter.copy_(change(parameter))
        return _attend(layer, x)
    finally:
        with torch.no_grad():
            for parameter, value in saved:
                parameter.copy_(value)


def _rows(head, head_dim, generator):
    """A change of the rows of one head in a (D, D) projection weight."""
    def change(weight):
        bump = torch.zeros_like(weight)
        bump[head * head_dim:(head + 1) * head_dim] = torch.randn(head_dim, weight.size(1), generator=generator,
                                                                  dtype=weight.dtype)
        return weight + bump
    return change


def _spans(indices):
    """'0 to 3, 6 and 8' for [0, 1, 2, 3, 6, 8]."""
    spans, start = [], indices[0]
    for previous, index in zip(indices, indices[1:] + [None]):
        if index != previous + 1:
            spans.append(str(start) if start == previous else f"{start} to {previous}")
            start = index
    return spans[0] if len(spans) == 1 else ", ".join(spans[:-1]) + " and " + spans[-1]


def _divisor_named(divisor, sizes):
    """' = √name' for the first size (name -> value) that divisor equals, else ''."""
    named = [name for name, size in sizes.items() if abs(size - divisor) < 1e-3 * divisor]
    return f" = √{named[0]}" if named else ""


def explain_heads(task, what, layer, x, expected, slots, num_heads, variant=None):
    """Property probes of a multi-head attention layer whose weights or outputs are wrong (no mask).

    In order: batch elements independent, weights normalised over the keys, each head's queries and keys
    feeding only that head, each head's values reaching only its own output features, the scale.

    Args:
        variant: the probes of a variant's own projections, run once the heads are split right, as
            variant(task, what, layer, x, attention, slots, generator, num_heads); None for none.
    """
    got = _attend(layer, x)
    if got is None or got[1].shape != expected["attention"].shape or got[0].shape != expected["outputs"].shape \
            or not (torch.isfinite(got[0]).all() and torch.isfinite(got[1]).all()):
        return
    outputs, attention = got
    _expect_batch_independent(task, what, layer, x, outputs)
    axis = normalised_axis(attention)
    if axis != attention.dim() - 1:
        where = "along no axis" if axis is None else f"along axis {axis} (size {attention.size(axis)})"
        task.fail(f"{what}: the attention weights sum to 1 {where}, not along the last axis (the keys): "
                  "the softmax must run over dim=-1.")
    head_dim, generator = x.size(-1) // num_heads, torch.Generator().manual_seed(0)
    if not _expect_heads_split(task, what, layer, x, attention, slots, head_dim, generator):
        return
    if variant is not None:
        variant(task, what, layer, x, attention, slots, generator, num_heads)
    _expect_heads_merged(task, what, layer, x, slots, head_dim, generator, num_heads)
    _expect_scale(task, what, attention, expected["attention"], x, head_dim, num_heads)
    if torch.allclose(attention, expected["attention"], atol=1e-6):
        task.fail(f"{what}: the attention weights are right but the outputs differ: look after the softmax "
                  "(attention @ value, merging the heads, o_proj).")


def _expect_batch_independent(task, what, layer, x, outputs):
    """Fail when one batch element's output changes with the others (a view that mixes the batch axis)."""
    alone = _attend(layer, x[1:])
    if alone is not None and alone[0].shape == outputs[1:].shape \
            and not torch.allclose(alone[0], outputs[1:], atol=1e-6):
        task.fail(f"{what}: the output for one batch element changes with the other elements of the batch: a view or "
                  "reshape mixes the batch axis with another; reshape only when the axes are already in the order the "
                  "new shape assumes, e.g. (B, L, D) to (B, L, H, head_dim) and back.")


def _expect_heads_split(task, what, layer, x, attention, slots, head_dim, generator):
    """Fail unless head 0's rows of q_proj and k_proj move head 0's attention alone; False when a probe cannot run."""
    for role in ("q_proj", "k_proj"):
        changed = _with_change(layer, x, {slots[f"{role}.weight"]: _rows(0, head_dim, generator)})
        if changed is None:
            return False
        moved = (changed[1] - attention).abs().flatten(2).amax(dim=(0, 2))  # (H,): how much each head changed
        if moved.max() <= 1e-9:
            task.fail(f"{what}: changing the weights of {role} changes no attention weight: is {role} applied to x "
                      f"to make the {'queries' if role == 'q_proj' else 'keys'}?")
        if moved[1:].max() > 1e-9 or moved[0] <= 1e-9:
            task.fail(f"{what}: changing the first head_dim = {head_dim} output features of {role} (head 0) changed "
                      "the attention of other heads: split the features as view(B, L, H, head_dim), head h taking "
                      "features h·head_dim to (h+1)·head_dim - 1, then transpose(1, 2).")
    return True


def _expect_heads_merged(task, what, layer, x, slots, head_dim, generator, num_heads):
    """With o_proj the identity, the last head's values must reach only the last head_dim output features."""
    identity = {slots["o_proj.weight"]: lambda w: torch.eye(w.size(0), dtype=w.dtype)}
    if "o_proj.bias" in slots:
        identity[slots["o_proj.bias"]] = torch.zeros_like
    before = _with_change(layer, x, identity)
    after = _with_change(layer, x, {**identity, slots["v_proj.weight"]: _rows(num_heads - 1, head_dim, generator)})
    if before is None or after is None:
        return
    moved = (after[0] - before[0]).abs().amax(dim=(0, 1))  # (D,): how much each output feature changed
    if moved[: -head_dim].max() > 1e-9:
        changed = (moved > 1e-9).nonzero().flatten().tolist()
        own = f"{x.size(-1) - head_dim} to {x.size(-1) - 1}"
        task.fail(f"{what}: with o_proj the identity, changing the values of the last head changed output "
                  f"features {_spans(changed)} instead of only its own, {own}: merge with transpose(1, 2) back "
                  "to (B, L, H, head_dim), then reshape(B, L, D).")


def _expect_scale(task, what, attention, expected, x, head_dim, num_heads):
    """Fail naming the divisor when the weights are the expected ones at another temperature."""
    ratio = temperature(attention, expected)
    if ratio is None or abs(ratio - 1) <= 1e-3:
        return
    divisor = head_dim / ratio ** 2
    sizes = {"embed_dim": x.size(-1), "seq_len": x.size(1), "num_heads": num_heads,
             "(number of keys)": attention.size(-1)}
    if abs(divisor - 1) < 1e-3:
        task.fail(f"{what}: the scores are not scaled: divide them by √head_dim = √{head_dim}.")
    task.fail(f"{what}: the scores are divided by √{divisor:.4g}{_divisor_named(divisor, sizes)} instead of by "
              f"√head_dim = √{head_dim}.")


def explain_mask(task, what, attention, mask):
    """Fail when positions the mask forbids get weight (mask (L, L), (B, L, L) or (B, 1 or H, L, L))."""
    if mask.dim() == 3:
        mask = mask.unsqueeze(1)
    try:
        forbidden = (mask == 0).expand_as(attention)
    except RuntimeError:
        return
    if attention[forbidden].abs().max() > 0:
        task.fail(f"{what}: positions where the mask is 0 / False get nonzero weight: the mask says which keys each "
                  "query may see (shape (..., L_q, L_k)); fill those scores with -inf before the softmax.")
