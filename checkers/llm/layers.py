"""Tasks 3 and 4: RMSNorm and SwiGLU with fixed weights on inputs of several scales, their structure and gradients."""
import torch

from .._compare import expect_close, expect_finite, expect_tensor, matches
from .._core import Diagnosis, check_function, expect_module_class, load_fixture
from .._modules import ADDED_IN_PLACE, build, expect_gradients_everywhere, expect_output, load
from ._layer_probes import rms_denominator, swiglu_gate
from ._probes_layers import output_with_zero_weights, rows_mixed, scaling_factor
from ._roles import SWIGLU_LINEARS, rms_norm_slots, swiglu_slots

ATOL, RTOL = 1e-6, 1e-6
# Sentences the known mistakes' diagnoses quote (course/llm/mistakes.py).
RMS_SUBTRACTS_MEAN = Diagnosis(
    "rms-subtracts-mean",
    "the mean is subtracted before dividing (that is LayerNorm): RMSNorm divides x itself by "
    "sqrt(mean(x²) + eps), with no centring.")
RMS_EPS_OUTSIDE = Diagnosis(
    "rms-eps-outside", "eps is added after the square root: divide by sqrt(mean(x²) + eps), eps inside.")
RMS_EPS_IGNORED = Diagnosis(
    "rms-eps-ignored",
    "the eps given to the constructor is not used (the check built RMSNorm(embed_dim, eps=0.1)): store it and add "
    "self.eps inside the square root.")
RMS_SUM_NOT_MEAN = Diagnosis(
    "rms-sum-not-mean",
    "the squares are summed, not averaged: the root MEAN square divides their sum by D, "
    "x.pow(2).mean(dim=-1, keepdim=True).")
RMS_STD = Diagnosis(
    "rms-std",
    "x is divided by its standard deviation (x.std() subtracts the mean): the root mean square is "
    "sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps).")
RMS_WRONG_DIM = Diagnosis(
    "rms-wrong-dim",
    "the mean of the squares is taken over another axis than the features: mean(dim=-1, keepdim=True), which "
    "also works for inputs of any number of leading axes.")
RMS_NO_WEIGHT = Diagnosis(
    "rms-no-weight", "the output is not multiplied by self.weight (the check loads a weight other than ones).")
RMS_WEIGHT_ADDED = Diagnosis(
    "rms-weight-added", "self.weight is added to the normalised x instead of multiplying it.")
RMS_BIAS = Diagnosis(
    "rms-bias", "RMSNorm has a bias parameter: it has only a weight (a gain), no shift.")
RMS_EPS_DEFAULT = Diagnosis(
    "rms-eps-default",
    "the default eps is not 1e-6: the same weights and input with eps=1e-6 given gave the expected outputs, with "
    "eps left out they do not; the signature pins RMSNorm(embed_dim, eps=1e-6).")
RMS_DETACHED = Diagnosis(
    "rms-detached-statistic",
    "the input's gradient is the one of x / rms * weight with rms held constant: the root mean square is detached "
    "(.detach(), .data or torch.no_grad()); let the gradient flow through it, as through every other operation.")
RMS_WEIGHT_INIT = Diagnosis(
    "rms-weight-init",
    "self.weight should start at ones, nn.Parameter(torch.ones(embed_dim)), so that a new RMSNorm only normalises.")
SWIGLU_BIAS = Diagnosis(
    "swiglu-bias",
    "the SwiGLU projections are bias-free (as in Llama and Mistral): build them with nn.Linear(..., bias=False).")
SWIGLU_SIGMOID = Diagnosis(
    "swiglu-sigmoid",
    "the gate uses sigmoid(g) instead of silu(g) = g·sigmoid(g) (that is GLU, not SwiGLU): use "
    "F.silu(self.gate_proj(x)).")
SWIGLU_SWAPPED = Diagnosis(
    "swiglu-swapped",
    "silu is applied to up_proj(x) and gate_proj(x) is the linear factor: silu(gate_proj(x)) * up_proj(x) (trained "
    "from scratch the two would swap roles, but pretrained weights load by these names).")
SWIGLU_GELU = Diagnosis("swiglu-gelu", "the gate uses GELU (that is GeGLU): SwiGLU's gate is silu.")
SWIGLU_SILU_OF_PRODUCT = Diagnosis(
    "swiglu-silu-of-product",
    "silu is applied to the product gate(x) * up(x): apply it to the gate alone, silu(gate(x)) * up(x).")
SWIGLU_BOTH_ACTIVATED = Diagnosis(
    "swiglu-both-activated", "silu is applied to both projections: only the gate goes through silu; up(x) stays "
    "linear.")
SWIGLU_UP_UNUSED = Diagnosis(
    "swiglu-up-unused", "up_proj is not used: down(silu(gate(x))) is a plain MLP; multiply by up_proj(x).")

RMS_SCALED = Diagnosis(
    "rms-not-scale-free",
    "doubling x multiplies the output by {factor}, where x / sqrt(mean(x²) + eps) does not change (eps aside): "
    "divide x by the root mean square of its row.")
RMS_SCALE_DEGREE = {
    4.0: Diagnosis("rms-multiplied", "doubling x multiplies the output by 4: x is multiplied by its root mean square "
                                     "instead of divided by it, x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) "
                                     "+ eps)."),
    0.5: Diagnosis("rms-no-sqrt", "doubling x halves the output: x is divided by the mean square itself, the square "
                                  "root is missing, torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)."),
}
RMS_ROWS_MIXED = Diagnosis(
    "rms-rows-mixed",
    "changing one row of x changes the output of another row: the mean square is taken over more than the row's own "
    "features; each row is normalised alone, x.pow(2).mean(dim=-1, keepdim=True).")
SWIGLU_RESIDUAL = Diagnosis(
    "swiglu-residual",
    "with every weight zero the output is the input itself: the layer adds x to its output; SwiGLU returns "
    "down_proj(silu(gate_proj(x)) * up_proj(x)) alone (the block adds the residual).")


def _forward(task, module, x, what):
    before = x.detach().clone()
    result = task.call(what, module, x)
    if not torch.equal(x.detach(), before):
        task.fail(f"{what}: {ADDED_IN_PLACE.format(name='x')}", ADDED_IN_PLACE.slug)
    return expect_output(task, what, result, x.shape, x.dtype, attention_api=False)


def _expect_rms_parameters(task, norm, fixture):
    """Only `weight`, of shape (D,), starting where the reference's starts (ones)."""
    names = [name for name, _ in norm.named_parameters()]
    if any("bias" in name for name in names):
        task.fail(f"{RMS_BIAS} (its parameters: {', '.join(names)})", RMS_BIAS.slug)
    if names != ["weight"]:
        task.fail(f"RMSNorm should have one parameter, `self.weight`; found {', '.join(names) or 'none'}.")
    if tuple(norm.weight.shape) != tuple(fixture["initial"].shape):
        task.fail(f"RMSNorm({fixture['embed_dim']}).weight has shape {tuple(norm.weight.shape)}, expected "
                  f"{tuple(fixture['initial'].shape)}.")
    if not torch.equal(norm.weight.detach(), fixture["initial"]):
        task.fail(RMS_WEIGHT_INIT, RMS_WEIGHT_INIT.slug)


@check_function(3)
def check_task_3(task, RMSNorm):
    """Check RMSNorm(embed_dim, eps): its one parameter, fixed weights on rows of very different scales, gradients."""
    expect_module_class(task, RMSNorm, "RMSNorm")
    fixture = load_fixture(__package__, 3)
    _expect_rms_parameters(task, build(task, RMSNorm, "RMSNorm", fixture["embed_dim"]), fixture)
    for name, case in fixture["cases"].items():
        norm = _loaded(task, RMSNorm, fixture, case, eps=case["eps"])
        what = f"RMSNorm({fixture['embed_dim']}, eps={case['eps']:g}) on {name}"
        outputs = _forward(task, norm, case["x"], what)
        if _unexplained(outputs, case):  # a mistake no one listed: what the norm divides by, probed
            _fail_with(task, what, rms_denominator(task, RMSNorm, fixture["embed_dim"]))
            _fail_with(task, what, _rms_probes(norm, case["x"]))
        expect_close(task, what, outputs, case["outputs"], ATOL, RTOL, case.get("mistakes", {}).get("outputs"))
    _expect_default_eps(task, RMSNorm, fixture)
    _expect_input_gradient(task, RMSNorm, fixture)
    _expect_dtype_followed(task, RMSNorm, fixture)
    task.passed("x / sqrt(mean(x², last axis) + eps) * weight, eps 1e-6 by default, weight starting at ones, no bias, "
                "the input's gradient as expected, the input's dtype kept.")


def _expect_dtype_followed(task, RMSNorm, fixture):
    """A bfloat16 norm on a bfloat16 input gives bfloat16: a statistic computed in float32 is cast back."""
    norm = build(task, RMSNorm, "RMSNorm", fixture["embed_dim"], dtype=torch.bfloat16)
    x = next(iter(fixture["cases"].values()))["x"].to(torch.bfloat16)
    what = f"RMSNorm({fixture['embed_dim']}) in bfloat16, on a bfloat16 input,"
    expect_tensor(task, f"{what} output", task.call(what, norm, x), tuple(x.shape), torch.bfloat16)


def _rms_probes(norm, x):
    """What RMSNorm's output does under a scaled input and a changed row says is wrong, or None."""
    rows = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12) * 1e4  # every row far above eps: scale-free there
    factor = scaling_factor(lambda inputs: norm(inputs), rows)
    if factor is not None and abs(factor - 1) > 1e-3:
        return RMS_SCALE_DEGREE.get(round(factor, 3), RMS_SCALED.format(factor=f"{factor:.4g}"))
    if rows_mixed(lambda rows: norm(rows), x):
        return RMS_ROWS_MIXED
    return None


def _unexplained(outputs, case):
    """Whether finite outputs of the right shape differ from the case's and from every known mistake's."""
    if not isinstance(outputs, torch.Tensor) or outputs.shape != case["outputs"].shape or \
            not torch.isfinite(outputs).all() or matches(outputs, case["outputs"], ATOL, RTOL):
        return False
    known = case.get("mistakes", {}).get("outputs", {}).values()
    return not any(matches(outputs, mistake, ATOL, RTOL) for mistake in known)


def _fail_with(task, what, diagnosis):
    """Fail naming what a probe found (nothing when it found nothing)."""
    if diagnosis is not None:
        task.fail(f"{what} differs from the expected values: {diagnosis}", diagnosis.slug)


def _loaded(task, RMSNorm, fixture, case, **eps):
    """RMSNorm(embed_dim, **eps) with the case's weights."""
    norm = build(task, RMSNorm, "RMSNorm", fixture["embed_dim"], **eps)
    return load(task, norm, rms_norm_slots, case["weights"], "RMSNorm")


def _expect_default_eps(task, RMSNorm, fixture):
    """The first case again, eps left out: its rows of root mean square 1e-3 tell 1e-6 from another default."""
    default = fixture["default_eps"]
    case = fixture["cases"][default["case"]]  # checked above with eps=1e-6 given: only the default can differ
    what = f"RMSNorm({fixture['embed_dim']}) (eps left to its default) on {default['case']}"
    outputs = _forward(task, _loaded(task, RMSNorm, fixture, case), case["x"], what)
    expect_finite(task, what, outputs)
    if case["eps"] == 1e-6 and not matches(outputs, default["outputs"], ATOL, RTOL):
        task.fail(f"{what}: {RMS_EPS_DEFAULT}", RMS_EPS_DEFAULT.slug)
    expect_close(task, what, outputs, default["outputs"], ATOL, RTOL)


def _expect_input_gradient(task, RMSNorm, fixture):
    """Gradients reach the weight and the input; the input's is sum(outputs * upstream)'s."""
    gradient = fixture["gradient"]
    case = fixture["cases"][gradient["case"]]
    norm = _loaded(task, RMSNorm, fixture, case, eps=case["eps"])
    x = case["x"].clone().requires_grad_(True)
    outputs = _forward(task, norm, x, "RMSNorm.forward")
    expect_gradients_everywhere(task, norm, (outputs * gradient["upstream"]).sum(), x, "RMSNorm")
    expect_close(task, f"the gradient with respect to the input of RMSNorm({fixture['embed_dim']}, "
                 f"eps={case['eps']:g}) on {gradient['case']}", x.grad, gradient["x_grad"], ATOL, RTOL,
                 gradient.get("mistakes", {}).get("x_grad"))


def _expect_swiglu_structure(task, ffn, fixture):
    """gate_proj, up_proj: embed_dim -> hidden_dim; down_proj: hidden_dim -> embed_dim; no biases."""
    embed_dim, hidden_dim = fixture["embed_dim"], fixture["hidden_dim"]
    for name, shape in zip(SWIGLU_LINEARS, ((hidden_dim, embed_dim), (hidden_dim, embed_dim), (embed_dim, hidden_dim))):
        layer = getattr(ffn, name, None)
        if layer is not None and getattr(layer, "bias", None) is not None:
            task.fail(f"SwiGLU.{name} has a bias: {SWIGLU_BIAS}", SWIGLU_BIAS.slug)
        weight = getattr(layer, "weight", None)
        if weight is not None and tuple(weight.shape) != shape:
            task.fail(f"SwiGLU.{name}.weight has shape {tuple(weight.shape)}, expected {shape} (nn.Linear(in, out) "
                      "stores (out, in)).")


@check_function(4)
def check_task_4(task, SwiGLU):
    """Check SwiGLU(embed_dim, hidden_dim): its three bias-free projections, fixed weights, gradients."""
    expect_module_class(task, SwiGLU, "SwiGLU")
    fixture = load_fixture(__package__, 4)
    for name, case in fixture["cases"].items():
        ffn = build(task, SwiGLU, "SwiGLU", fixture["embed_dim"], fixture["hidden_dim"])
        _expect_swiglu_structure(task, ffn, fixture)
        ffn = load(task, ffn, swiglu_slots, case["weights"], "SwiGLU")
        what = f"SwiGLU({fixture['embed_dim']}, {fixture['hidden_dim']}) on {name}"
        outputs = _forward(task, ffn, case["x"], what)
        if _unexplained(outputs, case):  # a mistake no one listed: the gate's nonlinearity, probed
            _fail_with(task, what, swiglu_gate(task, SwiGLU, fixture["embed_dim"], fixture["hidden_dim"]))
            zero = output_with_zero_weights(lambda x: ffn(x), case["x"], swiglu_slots(ffn))
            if zero is not None and torch.allclose(zero, case["x"]):
                _fail_with(task, what, SWIGLU_RESIDUAL)
        expect_close(task, what, outputs, case["outputs"], ATOL, RTOL, case.get("mistakes", {}).get("outputs"))
    x = case["x"].clone().requires_grad_(True)
    expect_gradients_everywhere(task, ffn, _forward(task, ffn, x, "SwiGLU.forward").pow(2).sum(), x, "SwiGLU")
    task.passed("down_proj(silu(gate_proj(x)) * up_proj(x)), no biases, gradients flow.")
