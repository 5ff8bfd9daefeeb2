"""Differential probes of a layer that maps (..., D) to (..., D), generic over the layer: how its output scales with
its input, whether one row's output reads another row, what it gives with every weight zero. They never raise and
return what they observed (or None)."""
import torch


def _output(run, x):
    try:
        with torch.no_grad():
            out = run(x)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    return out.detach() if isinstance(out, torch.Tensor) and out.shape == x.shape else None


def scaling_factor(run, x, by=2.0):
    """c such that run(by · x) = c · run(x) everywhere, or None when there is no such constant."""
    first, second = _output(run, x), _output(run, by * x)
    if first is None or second is None or not (first.abs() > 1e-6).all():
        return None
    ratio = second / first
    c = float(ratio.flatten()[0])
    return c if torch.allclose(ratio, torch.full_like(ratio, c), rtol=1e-5) else None


def rows_mixed(run, x):
    """Whether changing the last row of x (..., D) changes the output of its first row."""
    changed = x.clone()
    changed.view(-1, x.size(-1))[-1] *= 3.0
    first, second = _output(run, x), _output(run, changed)
    if first is None or second is None:
        return False
    return not torch.allclose(first.view(-1, x.size(-1))[0], second.view(-1, x.size(-1))[0], rtol=1e-9, atol=1e-12)


def output_with_zero_weights(run, x, slots):
    """run(x) with every parameter in slots (role -> parameter) set to zero, then restored; None when it fails."""
    saved = {role: parameter.detach().clone() for role, parameter in slots.items()}
    try:
        with torch.no_grad():
            for parameter in slots.values():
                parameter.zero_()
        return _output(run, x)
    finally:
        with torch.no_grad():
            for role, parameter in slots.items():
                parameter.copy_(saved[role])
