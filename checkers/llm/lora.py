"""Task 8: LoRALinear around a fixed nn.Linear: structure, initial A and B, outputs with fixed A and B, gradients,
and merge() on a square and a non-square layer, and on a bias-free one."""
import torch
import torch.nn as nn

from .._compare import expect_close, expect_tensor, matches
from .._core import Diagnosis, check_function, expect_module_class, load_fixture
from .._modules import build
from ._probes_lora import merge_needs_no_grad, merge_with_zero_update, update_reads_base, zero_update

NAME = "LoRALinear"
ATOL, RTOL = 1e-6, 1e-6
BASE_NOT_FROZEN = Diagnosis(
    "lora-base-not-frozen",
    "the base layer's parameters still require gradients: freeze them (base.requires_grad_(False)), so that only "
    "A and B train.")
AB_LAYOUT = Diagnosis(
    "lora-ab-layout",
    "A and B have each other's shapes transposed: A is (rank, in_features) and B is (out_features, rank), so the "
    "update B @ A has nn.Linear's (out, in) layout.")
BOTH_RANDOM = Diagnosis(
    "lora-both-random",
    "B is not zero at the start: initialise B to zeros, so that the adapted layer starts equal to the base layer.")
BOTH_ZERO = Diagnosis(
    "lora-both-zero",
    "A and B are both zero: then neither gets a gradient (dL/dA needs B, dL/dB needs A) and the adapter never "
    "trains; A starts random, B at zero.")
INIT_SWAPPED = Diagnosis(
    "lora-init-swapped",
    "A is zero and B random: the roles are swapped; A (rank, in) starts random and B (out, rank) at zero.")
SCALING_MISSING = Diagnosis("lora-scaling-missing", "the update x Aᵀ Bᵀ is not multiplied by alpha / rank.")
SCALING_INVERTED = Diagnosis("lora-scaling-inverted", "the update is multiplied by rank / alpha: the scaling is "
                             "alpha / rank.")
SCALING_ALPHA = Diagnosis("lora-scaling-alpha", "the update is multiplied by alpha, not alpha / rank.")
SCALING_RANK = Diagnosis("lora-scaling-rank", "the update is multiplied by 1 / rank, alpha left out: the scaling is "
                         "alpha / rank.")
SCALING_SQRT = Diagnosis("lora-scaling-sqrt", "the update is multiplied by alpha / √rank (rsLoRA's scaling): this "
                         "assignment pins LoRA's alpha / rank.")
BASE_OMITTED = Diagnosis("lora-base-omitted", "the output is the low-rank update alone: add base(x).")
MERGE_NO_SCALE = Diagnosis("lora-merge-no-scale", "merge() adds B @ A without the scaling alpha / rank.")
MERGE_TRANSPOSED = Diagnosis("lora-merge-transposed", "merge() adds (B @ A) transposed (the check used a square "
                             "layer, so the shapes fit): nn.Linear's weight is (out, in), the shape of B @ A.")
MERGE_NO_BIAS = Diagnosis("lora-merge-no-bias", "the merged layer lost the base layer's bias: copy it too.")
MERGE_IN_PLACE = Diagnosis("lora-merge-in-place", "merge() changed the base layer's own weight: the LoRA layer now "
                           "counts the update twice; build a new nn.Linear and leave base as it was.")


def _matrix(task, layer, name, shape):
    """layer.A or layer.B: a trainable tensor (a Parameter, or an nn.Linear's weight, PEFT's layout)."""
    value = getattr(layer, name, None)
    value = value.weight if isinstance(value, nn.Linear) else value
    if not isinstance(value, torch.Tensor):
        task.fail(f"{NAME} should have a parameter `{name}` of shape {shape}, found "
                  f"{'nothing' if value is None else type(value).__name__}.")
    return value


def _expect_structure(task, layer, base, case):
    """base kept and frozen; A (rank, in) random and B (out, rank) zero, the only trainable parameters."""
    rank, (out_features, in_features) = case["rank"], case["weights"]["base.weight"].shape
    if getattr(layer, "base", None) is not base:
        task.fail(f"{NAME} should keep the layer it adapts as `self.base` (the very object passed in).")
    if any(parameter.requires_grad for parameter in base.parameters()):
        task.fail(BASE_NOT_FROZEN, BASE_NOT_FROZEN.slug)
    a, b = _matrix(task, layer, "A", (rank, in_features)), _matrix(task, layer, "B", (out_features, rank))
    if tuple(a.shape) == (in_features, rank) and tuple(b.shape) == (rank, out_features):
        task.fail(f"{NAME}: A has shape {tuple(a.shape)} and B {tuple(b.shape)}: {AB_LAYOUT}", AB_LAYOUT.slug)
    expect_tensor(task, f"{NAME}.A", a, (rank, in_features))
    expect_tensor(task, f"{NAME}.B", b, (out_features, rank))
    trainable = {id(p) for p in layer.parameters() if p.requires_grad}
    if trainable != {id(a), id(b)}:
        task.fail(f"only A and B should train (nn.Parameter, requires_grad=True); the trainable parameters are "
                  f"{', '.join(n for n, p in layer.named_parameters() if p.requires_grad) or 'none'}.")
    a_zero, b_zero = not a.detach().any(), not b.detach().any()
    if a_zero and b_zero:
        task.fail(BOTH_ZERO, BOTH_ZERO.slug)
    if a_zero:
        task.fail(INIT_SWAPPED, INIT_SWAPPED.slug)
    if not b_zero:
        task.fail(BOTH_RANDOM, BOTH_RANDOM.slug)
    return a, b


MERGE_GRAD = Diagnosis(
    "lora-merge-needs-no-grad",
    "merge() raises when called as the notebook calls it, and runs under torch.no_grad(): copying into the new "
    "layer's parameters (which require grad) is an in-place change autograd refuses; do it inside "
    "`with torch.no_grad():`.")


def _unexplained(got, case, key):
    """Whether got has the expected shape and differs from the expected values and from every known mistake's."""
    expected, known = case[key], case.get("mistakes", {}).get(key, {})
    return isinstance(got, torch.Tensor) and got.shape == expected.shape and not matches(got, expected, ATOL, RTOL) \
        and not any(matches(got, value, ATOL, RTOL) for value in known.values())


def _expect_merge(task, layer, base, case, what, b):
    if merge_needs_no_grad(layer):
        task.fail(f"{what}.merge(): {MERGE_GRAD}", MERGE_GRAD.slug)
    merged = task.call(f"{what}.merge()", layer.merge)
    if not isinstance(merged, nn.Linear):
        task.fail(f"{what}.merge() should return an nn.Linear, got {type(merged).__name__}.")
    kept = (merged.weight.dtype, merged.weight.device) == (base.weight.dtype, base.weight.device)
    if not kept:  # seen, not guessed: the merged layer would fail or compute in another precision inside the model
        task.fail(f"{what}.merge() returned a layer of {merged.weight.dtype} on {merged.weight.device} for a base of "
                  f"{base.weight.dtype} on {base.weight.device}: build the merged nn.Linear with the base's dtype and "
                  "device.")
    if not torch.equal(base.weight.detach(), case["weights"]["base.weight"]):
        task.fail(f"{what}.merge(): {MERGE_IN_PLACE}", MERGE_IN_PLACE.slug)
    got = task.call(f"the forward of {what}.merge()", merged, case["x"])
    expect_tensor(task, f"the output of {what}.merge()", got, tuple(case["merged_outputs"].shape))
    mistakes = case.get("mistakes", {})
    forward = mistakes.get("outputs", {})  # a mistake of forward that merge repeats has failed before merge is tried
    merge_only = {diagnosis: value for diagnosis, value in mistakes.get("merged_outputs", {}).items()
                  if diagnosis not in forward}
    if _unexplained(got, case, "merged_outputs"):
        found = merge_with_zero_update(layer, b)
        if found:
            task.fail(f"the output of {what}.merge() differs from the expected values: {found}")
    expect_close(task, f"the output of {what}.merge()", got, case["merged_outputs"], ATOL, RTOL, merge_only)


@check_function(8)
def check_task_8(task, LoRALinear):
    """Check LoRALinear(base, rank, alpha) on fixed layers, A and B, and its merge()."""
    expect_module_class(task, LoRALinear, NAME)
    for case in load_fixture(__package__, 8)["cases"].values():
        weights = case["weights"]
        out_features, in_features = weights["base.weight"].shape
        bias = "base.bias" in weights  # the last case's base is bias-free, as the projections the notebook adapts
        base = nn.Linear(in_features, out_features, bias=bias, dtype=weights["base.weight"].dtype)
        with torch.no_grad():
            base.weight.copy_(weights["base.weight"])
            if bias:
                base.bias.copy_(weights["base.bias"])
        layer = build(task, LoRALinear, NAME, base, case["rank"], case["alpha"])
        a, b = _expect_structure(task, layer, base, case)
        with torch.no_grad():
            a.copy_(weights["A"]), b.copy_(weights["B"])
        what = (f"{NAME}(nn.Linear({in_features}, {out_features}{'' if bias else ', bias=False'}), "
                f"rank={case['rank']}, alpha={case['alpha']:g})")
        got = task.call(f"{what}.forward", layer, case["x"])
        expect_tensor(task, f"{what}'s output", got, tuple(case["outputs"].shape))
        if _unexplained(got, case, "outputs"):
            found = zero_update(layer, b, case["x"]) or update_reads_base(layer, case["x"])
            if found:
                task.fail(f"{what}'s output (A and B set to random values) differs from the expected values: {found}")
        expect_close(task, f"{what}'s output (A and B set to random values)", got, case["outputs"], ATOL, RTOL,
                     case.get("mistakes", {}).get("outputs"))
        task.call(f"backward through {what}", got.pow(2).sum().backward)
        if a.grad is None or b.grad is None or not (a.grad.any() and b.grad.any()):
            task.fail(f"after backward through {what}, A.grad and B.grad should be non-zero: are A and B used in "
                      "forward as they are (not detached)?")
        _expect_merge(task, layer, base, case, what, b)
    task.passed("base frozen, A random and B zero at the start, the update scaled by alpha / rank, gradients reach "
                "A and B only, and merge() returns a new nn.Linear with the same outputs.")
