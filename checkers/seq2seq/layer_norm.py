"""Task 1: LayerNorm by hand."""
import itertools

import torch
import torch.nn.functional as F

from .._calls import fail_method, recorded_calls
from .._compare import diagnose, expect_close, expect_finite, matches, signatures
from .._core import CheckFailure, Diagnosis, NotImplementedYet, check_function, expect_module_class, load_fixture, \
    one_line
from .._modules import build, expect_gradients_everywhere, expect_native_output, expect_output, expect_unchanged, load
from ._layer_norm_explain import explain_affine_order, explain_error, explain_statistics
from ._weights import layer_norm_slots

ATOL, RTOL = 1e-6, 1e-6
# Sentences the known mistakes' diagnoses quote (course/seq2seq/mistakes.py).
UNBIASED = Diagnosis(
    "unbiased",
    "the variance is the unbiased one (divided by D - 1): LayerNorm uses the biased variance, the mean "
    "of the squared deviations (divided by D).")
EPS_OUTSIDE = Diagnosis(
    "eps-outside",
    "eps is added outside the square root: divide by torch.sqrt(var + eps), not by torch.sqrt(var) + eps "
    "(it matters for tokens whose variance is close to eps).")
AFFINE_NOT_APPLIED = Diagnosis(
    "affine-not-applied",
    "the output is normalised but weight and bias are not applied: return "
    "normalised * self.weight + self.bias.")
WRONG_AXIS = Diagnosis(
    "wrong-axis",
    "the mean and variance are taken over the wrong axis: LayerNorm standardises each token over its own "
    "D features, the last axis (dim=-1), whatever the number of leading axes.")
AXES_BUT_BATCH = Diagnosis(
    "axes-but-batch",
    "the mean and variance are taken over every axis but the first together (a whole sequence at "
    "once): LayerNorm standardises each token over its own D features, the last axis (dim=-1) only.")
EPS_IGNORED = Diagnosis(
    "eps-ignored",
    "the `eps` argument is ignored (eps=0.1 gives the output of eps=1e-5): store it, self.eps = eps, "
    "and use it instead of a fixed number.")
MEAN_DETACHED = Diagnosis(
    "mean-detached",
    "the mean is cut off from the autograd graph (.detach(), .data or torch.no_grad()): the outputs are "
    "right but the input's gradient is not torch.nn.functional.layer_norm's; keep the mean in the graph.")
VARIANCE_DETACHED = Diagnosis(
    "variance-detached",
    "the variance (or standard deviation) is cut off from the autograd graph (.detach(), .data or "
    "torch.no_grad()): the outputs are right but the input's gradient is not "
    "torch.nn.functional.layer_norm's; keep the variance in the graph.")
# torch's own normalisations, each a layer norm in one call (rms_norm of the centred input is one): the task is to
# write it, so a forward that calls one of them (directly, or through nn.LayerNorm and its kin) fails
TORCH_NORMS = ("layer_norm", "group_norm", "instance_norm", "batch_norm", "rms_norm")
BY_HAND = Diagnosis(
    "by-hand",
    "the task is to compute layer normalisation by hand, from the mean and the biased variance over the last "
    "axis, not with torch's own (F.layer_norm, nn.LayerNorm and the other normalisation layers).")
NOT_PARAMETER = "(so it is learned and saved)"  # said by checkers.seq2seq._weights for a weight that is no Parameter


def torch_norm_problem(counts, inputs=None):
    """What is wrong with a LayerNorm whose forward made the calls counted (None: it normalised by hand).

    Args:
        counts: [{qualified name: number of calls}] of one or more forward passes (checkers._calls).
        inputs: the arguments of each pass (unused: the names alone say it); the grader's judge passes them.
    """
    called = sorted({name for seen in counts for name in seen
                     if name.rsplit(".", 1)[-1].lstrip("_").removeprefix("native_") in TORCH_NORMS})
    return f"LayerNorm.forward called {', '.join(called)}: {BY_HAND}" if called else None


def _expect_by_hand(task, cls, fixture):
    """Fail when the forward pass calls torch's own layer norm (checked last: its values are right by then)."""
    norm = build(task, cls, "LayerNorm", fixture["embed_dim"])
    with recorded_calls() as counts:
        task.call("LayerNorm.forward", norm, fixture["cases"]["3-D"]["x"])
    problem = torch_norm_problem([counts])
    if problem:
        fail_method(task, problem, BY_HAND.slug)


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


def _changes_with(norm, x, slot, change):
    """Whether norm(x) changes when one of its parameters is changed in place (then restored); None if it fails."""
    saved = slot.detach().clone()
    try:
        with torch.no_grad():
            before = norm(x)
            slot.copy_(change(saved))
            after = norm(x)
        return not torch.allclose(before, after, atol=1e-9)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    finally:
        with torch.no_grad():
            slot.copy_(saved)


def _explain_affine(task, norm, x, what):
    """Name the weight or the bias when the output does not change with it."""
    slots = layer_norm_slots(norm)
    changes = {"weight": lambda value: value * 2.0 + 0.5, "bias": lambda value: value + 1.0}
    ignored = [name for name, change in changes.items() if _changes_with(norm, x, slots[name], change) is False]
    if ignored == ["weight", "bias"]:
        task.fail(f"{what} is wrong: {AFFINE_NOT_APPLIED}", AFFINE_NOT_APPLIED.slug)
    if ignored:
        use = "multiply by self.weight" if ignored == ["weight"] else "add self.bias"
        task.fail(f"{what}: the output does not change when `{ignored[0]}` changes: {use}, "
                  "normalised * self.weight + self.bias.")


def _standardised(rows, axes):
    """Whether rows have mean 0 and variance 1 over the given axes taken together."""
    mean = rows.mean(dim=axes)
    variance = rows.var(dim=axes, unbiased=False)
    return torch.allclose(mean, torch.zeros_like(mean), atol=1e-6) and \
        torch.allclose(variance, torch.ones_like(variance), atol=1e-2)


def _explain(task, norm, x, what):
    """Name the axes the output is standardised along, when weight 1 and bias 0 show they are not the last one."""
    slots = layer_norm_slots(norm)
    with torch.no_grad():
        slots["weight"].fill_(1.0), slots["bias"].zero_()
    try:
        rows = norm(x).detach()
    except Exception:  # noqa: BLE001 -- only a probe
        return
    if not isinstance(rows, torch.Tensor) or rows.shape != x.shape or _standardised(rows, (-1,)):
        return  # the last axis is right (or nothing can be said): the difference lies elsewhere
    for count in range(1, rows.dim() + 1):
        for axes in itertools.combinations(range(rows.dim()), count):
            if _standardised(rows, axes):
                where = (f"axis {axes[0]} (size {rows.size(axes[0])})" if count == 1 else
                         f"axes {axes} together (sizes {' x '.join(str(rows.size(a)) for a in axes)})")
                task.fail(f"{what}: with weight 1 and bias 0 the output is standardised along {where}, not along "
                          f"the last axis alone: {WRONG_AXIS}", WRONG_AXIS.slug)


def _expect_input_gradients(task, got, case):
    """The input's gradient of (LayerNorm(x) ** 3).sum() against torch.nn.functional.layer_norm's, same weights."""
    x, weight, eps = case["x"].clone().requires_grad_(True), case["weights"]["weight"], case["eps"]
    outputs = F.layer_norm(x, x.shape[-1:], weight, case["weights"]["bias"], eps)
    outputs.pow(3).sum().backward()
    if matches(got, x.grad, ATOL, RTOL):
        return
    expect_finite(task, "the input's gradient through LayerNorm", got)
    if not torch.allclose(got.sum(-1), torch.zeros((), dtype=got.dtype), atol=1e-6):
        task.fail(f"LayerNorm's gradient is wrong: {MEAN_DETACHED}",
                  MEAN_DETACHED.slug)  # the true one is blind to shifting a row
    upstream = 3 * outputs.detach().pow(2) * weight  # (N, D): the gradient reaching the normalised rows
    constant_variance = (upstream - upstream.mean(-1, keepdim=True)) / torch.sqrt(
        case["x"].var(-1, unbiased=False, keepdim=True) + eps)
    if matches(got, constant_variance, ATOL, RTOL):
        task.fail(f"LayerNorm's gradient is wrong: {VARIANCE_DETACHED}", VARIANCE_DETACHED.slug)
    expect_close(task, "the input's gradient of (LayerNorm(x) ** 3).sum(), compared with "
                 "torch.nn.functional.layer_norm's,", got, x.grad, ATOL, RTOL)


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
    try:
        outputs = _forward(task, norm, case["x"], what)
    except NotImplementedYet:
        raise
    except CheckFailure:
        explain_error(task, norm, case["x"], what)
        raise
    if not matches(outputs, case["outputs"], ATOL, RTOL):
        expect_finite(task, what, outputs)
        diagnose(task, what, outputs, signatures(case, "outputs"), ATOL, RTOL)
        _explain_affine(task, norm, case["x"], what)
        _explain(task, norm, case["x"], what)
        explain_statistics(task, norm, embed_dim, what)
        explain_affine_order(task, norm, embed_dim, what)
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
    _expect_input_gradients(task, inputs.grad, fixture["cases"]["2-D"])
    case = fixture["cases"]["3-D"]
    single = build(task, LayerNorm, "LayerNorm", embed_dim, dtype=torch.float32, native=True)
    single = load(task, single, layer_norm_slots, case["weights"], "LayerNorm")
    expect_native_output(task, single, "LayerNorm", "LayerNorm on float32 input",
                         lambda: _forward(task, single, case["x"].float()), case["outputs"],
                         attention_api=False)
    _expect_by_hand(task, LayerNorm, fixture)  # last: a part failing only this computes right values (MethodFailure)
    task.passed("per-token mean and biased variance over the last axis, eps inside the square root, weight and bias "
                "as Parameters, input gradients equal to torch.nn.functional.layer_norm's, and dtypes are right.")


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
            task.fail(f"{what} is wrong: {EPS_IGNORED}", EPS_IGNORED.slug)
    expect_close(task, what, outputs, case["outputs"], ATOL, RTOL)
