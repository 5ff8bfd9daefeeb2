"""Task 1's probes of a LayerNorm whose output differs: which statistic, which axis, where the affine part goes.

Each runs only after the output differs from the expected one (or the forward raised) and fails only when what it
measured identifies the cause; otherwise it returns and the comparison that follows says what differs.
"""
import torch
import torch.nn.functional as F

from .._perturb import changed
from ._probes_behaviour import rows_coupled, scale_power, shift_changes_output
from ._probes_spies import misaligned_reduction
from ._weights import layer_norm_slots

PER_TOKEN = ("each token is standardised by its own mean and variance over its D features, "
             "x.mean(dim=-1, keepdim=True), not by statistics shared with other tokens.")
FACTOR = 10.0


def _probe_input(embed_dim, dtype):
    """A (2, 4, D) input of unit scale, so that eps is negligible beside every row's variance."""
    return torch.randn(2, 4, embed_dim, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(dtype)


def _output(norm, x):
    try:
        with torch.no_grad():
            result = norm(x)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    return result.detach() if isinstance(result, torch.Tensor) and result.shape == x.shape else None


def explain_error(task, norm, x, what):
    """After the forward raised: name a reduction whose result no longer lines up with the tensor it came from."""
    problem = misaligned_reduction(lambda: norm(x.clone()))
    if problem:
        task.fail(f"{what} fails: {problem}")


def explain_statistics(task, norm, embed_dim, what):
    """With weight 1 and bias 0: rows normalised alone, centred, blind to a shift, blind to a scale."""
    slots = layer_norm_slots(norm)
    x = _probe_input(embed_dim, slots["weight"].dtype)
    with changed([slots["weight"]], torch.ones_like), changed([slots["bias"]], torch.zeros_like):
        if rows_coupled(norm, x):
            task.fail(f"{what}: the output of one token changes when only another token's features change: "
                      f"{PER_TOKEN}")
        rows = _output(norm, x)
        if rows is None or not torch.isfinite(rows).all():
            return
        if not torch.allclose(rows.mean(-1), torch.zeros((), dtype=rows.dtype), atol=1e-6):
            task.fail(f"{what}: with weight 1 and bias 0 the output's rows do not average to 0: the token's mean is "
                      "not subtracted; normalise the centred input, x - x.mean(dim=-1, keepdim=True).")
        if shift_changes_output(norm, x):
            task.fail(f"{what}: adding the same number to every feature of a token changes its output, though its "
                      "centred values stay the same: compute the variance from the centred values, "
                      "((x - mean) ** 2).mean(dim=-1, keepdim=True), not from x itself.")
        _explain_scale(task, scale_power(norm, x, FACTOR), what)


def _explain_scale(task, power, what):
    """Name a divisor of the wrong degree: the output of a right layer norm does not change when x is scaled."""
    if power is None or power == 0:
        return
    if power == -1:
        task.fail(f"{what}: scaling a token by {FACTOR:g} divides its output by {FACTOR:g}: the centred values are "
                  "divided by the variance; divide them by its square root, the standard deviation "
                  "torch.sqrt(var + eps).")
    if power == 1:
        task.fail(f"{what}: scaling a token by {FACTOR:g} scales its output by {FACTOR:g}: the centred values are not "
                  "divided by the standard deviation, torch.sqrt(var + eps).")
    task.fail(f"{what}: scaling a token by {FACTOR:g} multiplies its output by {FACTOR:g}^{power:g}, where a layer "
              "norm's output stays the same: divide the centred values by a quantity of their own scale, the "
              "standard deviation torch.sqrt(var + eps).")


def explain_affine_order(task, norm, embed_dim, what):
    """With the statistics right, weight must scale and bias shift the normalised output, after the division."""
    slots = layer_norm_slots(norm)
    x = _probe_input(embed_dim, slots["weight"].dtype)
    expected = F.layer_norm(x, (embed_dim,), eps=getattr(norm, "eps", 1e-5))
    with changed([slots["weight"]], torch.ones_like), changed([slots["bias"]], torch.zeros_like):
        base = _output(norm, x)
        if base is None or not torch.allclose(base, expected, atol=1e-4):
            return
        with changed([slots["bias"]], lambda bias: bias + 0.5):
            shifted = _output(norm, x)
        with changed([slots["weight"]], lambda weight: weight * 2.0):
            scaled = _output(norm, x)
    if shifted is not None and not torch.allclose(shifted - base, torch.full_like(base, 0.5), atol=1e-6):
        moved = shifted - base
        task.fail(f"{what}: with weight 1 and bias 0 the output is standardised right, but raising the bias by 0.5 "
                  f"moves the output by {moved.min().item():.3g} to {moved.max().item():.3g} instead of 0.5: the "
                  "bias goes through the normalisation; add it after dividing, "
                  "(x - mean) / torch.sqrt(var + eps) * self.weight + self.bias.")
    if scaled is not None and not torch.allclose(scaled, base * 2.0, atol=1e-6):
        task.fail(f"{what}: with bias 0 the output is standardised right for weight 1, but weight 2 does not double "
                  "it: multiply the normalised values by self.weight after dividing, "
                  "(x - mean) / torch.sqrt(var + eps) * self.weight + self.bias.")
