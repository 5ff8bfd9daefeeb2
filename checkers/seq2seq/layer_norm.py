"""Task 1: LayerNorm by hand."""
import torch

from .._compare import diagnose, expect_close, expect_finite, matches, signatures
from .._core import check_function, expect_module_class, load_fixture, one_line
from .._modules import build, expect_gradients_everywhere, expect_native_output, expect_output, expect_unchanged, load
from ._weights import layer_norm_slots

ATOL, RTOL = 1e-6, 1e-6
# Sentences the known mistakes' diagnoses quote (course/mistakes/seq2seq.py).
UNBIASED = ("the variance is the unbiased one (divided by D - 1): LayerNorm uses the biased variance, the mean "
            "of the squared deviations (divided by D).")
EPS_OUTSIDE = ("eps is added outside the square root: divide by torch.sqrt(var + eps), not by torch.sqrt(var) + eps "
               "(it matters for tokens whose variance is close to eps).")
AFFINE_NOT_APPLIED = ("the output is normalised but weight and bias are not applied: return "
                      "normalised * self.weight + self.bias.")
WRONG_AXIS = ("the mean and variance are taken over the wrong axis: LayerNorm standardises each token over its own "
              "D features, the last axis (dim=-1), whatever the number of leading axes.")
EPS_IGNORED = ("the `eps` argument is ignored (eps=0.1 gives the output of eps=1e-5): store it, self.eps = eps, "
               "and use it instead of a fixed number.")
NOT_PARAMETER = "(so it is learned and saved)"  # said by checkers.seq2seq._weights for a weight that is no Parameter


def _forward(task, norm, x, what="LayerNorm.forward"):
    before = x.clone()
    result = task.call(what, norm, x)
    expect_unchanged(task, before, x)
    return expect_output(task, what, result, x.shape, x.dtype, attention_api=False)


def _expect_initial_values(task, norm, embed_dim):
    for name, value in layer_norm_slots(norm).items():
        start = 1.0 if name == "weight" else 0.0
        if tuple(value.shape) != (embed_dim,):
            task.fail(f"LayerNorm({embed_dim}).{name} has shape {tuple(value.shape)}, expected ({embed_dim},).")
        if not torch.all(value == start):
            task.fail(f"LayerNorm({embed_dim}).{name} should start as torch.{'ones' if start else 'zeros'}"
                      f"({embed_dim}), so that a new layer only standardises.")


def _explain(task, norm, x, what):
    """Name the axis the output is standardised along, when weight 1 and bias 0 show it is not the last one."""
    slots = layer_norm_slots(norm)
    with torch.no_grad():
        slots["weight"].fill_(1.0), slots["bias"].zero_()
    try:
        rows = norm(x).detach()
    except Exception:  # noqa: BLE001 -- only a probe
        return
    for axis in range(rows.dim() - 1):
        mean, variance = rows.movedim(axis, -1).mean(-1), rows.movedim(axis, -1).var(-1, unbiased=False)
        if torch.allclose(mean, torch.zeros_like(mean), atol=1e-6) and \
                torch.allclose(variance, torch.ones_like(variance), atol=1e-2):
            task.fail(f"{what}: with weight 1 and bias 0 the output is standardised along axis {axis} (size "
                      f"{rows.size(axis)}), not along the last axis: {WRONG_AXIS}")


def _expect_case(task, cls, fixture, name):
    case, embed_dim = fixture["cases"][name], fixture["embed_dim"]
    what = f"LayerNorm({embed_dim}) on a {name} input"
    norm = load(task, build(task, cls, "LayerNorm", embed_dim), layer_norm_slots, case["weights"], "LayerNorm")
    if case["x"].dim() == 2:
        try:
            norm(case["x"])
        except IndexError as error:
            task.fail(f"{what} raised IndexError ({one_line(error, 100)}): LayerNorm must work for any number of "
                      "leading axes, (..., D); count the feature axis from the end, dim=-1.")
        except Exception:  # noqa: BLE001 -- reported by the call that follows
            pass
    outputs = _forward(task, norm, case["x"], what)
    if not matches(outputs, case["outputs"], ATOL, RTOL):
        expect_finite(task, what, outputs)
        diagnose(task, what, outputs, signatures(case, "outputs"), ATOL, RTOL)
        _explain(task, norm, case["x"], what)
    expect_close(task, what, outputs, case["outputs"], ATOL, RTOL)
    return norm


@check_function(1)
def check_task_1(task, LayerNorm):
    """Check LayerNorm(embed_dim, eps) against fixed weights, inputs of several scales, and its properties."""
    expect_module_class(task, LayerNorm, "LayerNorm")
    fixture = load_fixture(__package__, 1)
    embed_dim = fixture["embed_dim"]
    _expect_initial_values(task, load(task, build(task, LayerNorm, "LayerNorm", embed_dim), layer_norm_slots, {},
                                      "LayerNorm"), embed_dim)
    for name in ("3-D", "2-D"):
        norm = _expect_case(task, LayerNorm, fixture, name)
    _expect_eps(task, LayerNorm, fixture)
    inputs = fixture["cases"]["2-D"]["x"].clone().requires_grad_(True)
    expect_gradients_everywhere(task, norm, _forward(task, norm, inputs).pow(3).sum(), inputs, "LayerNorm")
    case = fixture["cases"]["3-D"]
    single = build(task, LayerNorm, "LayerNorm", embed_dim, dtype=torch.float32, native=True)
    single = load(task, single, layer_norm_slots, case["weights"], "LayerNorm")
    expect_native_output(task, single, "LayerNorm", "LayerNorm on float32 input",
                         lambda: _forward(task, single, case["x"].float()), case["outputs"],
                         attention_api=False)
    task.passed("per-token mean and biased variance over the last axis, eps inside the square root, weight and bias "
                "as Parameters, gradients and dtypes are right.")


def _expect_eps(task, cls, fixture):
    case, embed_dim = fixture["cases"]["eps=0.1"], fixture["embed_dim"]
    what = f"LayerNorm({embed_dim}, eps=0.1)"
    norm = load(task, build(task, cls, "LayerNorm", embed_dim, eps=case["eps"]), layer_norm_slots, case["weights"],
                "LayerNorm")
    outputs = _forward(task, norm, case["x"])
    if not matches(outputs, case["outputs"], ATOL, RTOL):
        expect_finite(task, what, outputs)
        diagnose(task, what, outputs, signatures(case, "outputs"), ATOL, RTOL)
        default = load(task, build(task, cls, "LayerNorm", embed_dim), layer_norm_slots, case["weights"], "LayerNorm")
        if matches(outputs, _forward(task, default, case["x"]), ATOL, RTOL):
            task.fail(f"{what} is wrong: {EPS_IGNORED}")
    expect_close(task, what, outputs, case["outputs"], ATOL, RTOL)
