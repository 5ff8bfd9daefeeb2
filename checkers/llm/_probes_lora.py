"""Task 8's probes of an adapter layer (a frozen `base` nn.Linear plus a low-rank update read from A and B) whose
output or merge is wrong, generic over how it is written: its output with B set to zero, whether the update moves
with the base's weight, what merge() gives with B zero, whether merge() runs only under torch.no_grad(). Each returns
one sentence, or None when it found nothing."""
from contextlib import contextmanager

import torch


@contextmanager
def _changed(parameter, value):
    """parameter set to value (under no_grad) for the block, then restored."""
    saved = parameter.detach().clone()
    with torch.no_grad():
        parameter.copy_(value)
    try:
        yield
    finally:
        with torch.no_grad():
            parameter.copy_(saved)


def _run(call, *args):
    try:
        with torch.no_grad():
            out = call(*args)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    return out.detach() if isinstance(out, torch.Tensor) else None


def zero_update(layer, b, x):
    """What layer(x) with B zero says, or None: it must be base(x) exactly (the bias included)."""
    base = layer.base
    with _changed(b, torch.zeros_like(b)):
        got = _run(layer, x)
    expected = _run(base, x)
    if got is None or expected is None or got.shape != expected.shape or torch.allclose(got, expected, atol=1e-9):
        return None
    if base.bias is not None and torch.allclose(got + base.bias.detach(), expected, atol=1e-9):
        return ("with B = 0 the output should be base(x) exactly, and it is base(x) without the base layer's bias: "
                "compute the base's part as self.base(x), which adds its bias.")
    return "with B = 0 the output should be base(x) exactly, and it is not: the layer's output is base(x) + the update."


def update_reads_base(layer, x):
    """What the update (output - base(x)) does when the base's weight changes, or None: it must not move."""
    base = layer.base
    before = _run(layer, x), _run(base, x)
    with _changed(base.weight, base.weight.detach() * 2 + 0.5):
        after = _run(layer, x), _run(base, x)
    if any(value is None for value in before + after) or before[0].shape != before[1].shape:
        return None
    if torch.allclose(before[0] - before[1], after[0] - after[1], atol=1e-9):
        return None
    return ("the low-rank update (output - base(x)) changes when only the base's weight changes: it must read the "
            "input x itself, scaling · x Aᵀ Bᵀ, not base(x).")


def merge_with_zero_update(layer, b):
    """What merge() gives with B zero, or None: the base's weight, unscaled."""
    weight = layer.base.weight.detach()
    with _changed(b, torch.zeros_like(b)):
        try:
            with torch.no_grad():
                merged = layer.merge().weight.detach()
        except Exception:  # noqa: BLE001 -- only a probe
            return None
    if merged.shape != weight.shape or torch.allclose(merged, weight, atol=1e-9) or not weight.any():
        return None
    factor = float((merged * weight).sum() / (weight * weight).sum())
    if torch.allclose(merged, factor * weight, atol=1e-9):
        return (f"with B = 0 merge() gives {factor:.4g} × base.weight: only the update is scaled, "
                "W + scaling · (B @ A), the base's weight as it is.")
    return "with B = 0 merge() should give the base's weight itself, and it does not."


def merge_needs_no_grad(layer):
    """Whether merge() raises as called, but runs under torch.no_grad()."""
    try:
        layer.merge()
        return False
    except Exception:  # noqa: BLE001 -- only a probe
        pass
    try:
        with torch.no_grad():
            layer.merge()
    except Exception:  # noqa: BLE001 -- only a probe
        return False
    return True
