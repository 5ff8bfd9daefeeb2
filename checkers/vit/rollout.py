"""Task 5: attention_rollout on hand-built attention stacks and random ones: shape, values, dtype, gradients."""
import torch

from .._compare import expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import Diagnosis, CheckFailure, check_function, expect_callable, load_fixture, slug_of
from . import _probes_rollout as probes

NAME = "attention_rollout"
ATOL, RTOL = 1e-9, 1e-7
# Sentences the known mistakes' diagnoses quote (course/vit/mistakes.py).
NO_IDENTITY = Diagnosis(
    "no-identity",
    "the identity for the residual path is missing: a token also keeps its own input, so each layer's "
    "head-averaged map becomes A + I (rows renormalised) before it is multiplied in.")
NOT_RENORMALISED = Diagnosis(
    "not-renormalised",
    "the rows of A + I sum to 2, not 1: divide each layer's A + I by its row sums "
    "(or write 0.5 * A + 0.5 * I) before multiplying.")
COLUMNS = Diagnosis(
    "columns",
    "the columns are renormalised instead of the rows: divide A + I by its row sums, "
    "(A + I).sum(dim=-1, keepdim=True).")
WRONG_ORDER = Diagnosis(
    "wrong-order",
    "the layers are multiplied in the wrong order: the later layer goes on the left, R_l = A_l @ R_(l-1) "
    "(a token of layer l reads the tokens of layer l - 1).")
MAX_HEADS = Diagnosis(
    "max-heads",
    "the heads are combined with their maximum: average them, attention.mean(dim=1).")
SUM_HEADS = Diagnosis(
    "sum-heads",
    "the heads are summed, so the identity weighs 1 / (H + 1) instead of 1 / 2: average them, "
    "attention.mean(dim=1).")
ELEMENTWISE = Diagnosis(
    "elementwise",
    "the layers are combined element by element, A_2 * A_1: multiply them as matrices, R_l = A_l @ R_(l-1) "
    "(torch.matmul or @), the later layer on the left.")
RIGHT = "the layers' rollouts multiplied, later layer on the left"  # a combination that names no mistake
LAST_LAYER = Diagnosis(
    "last-layer",
    "only the last layer counts: multiply every layer in, R_l = A_l @ R_(l-1) from R_1 = A_1.")
FIRST_LAYER = Diagnosis(
    "first-layer",
    "only the first layer counts: multiply every layer in, R_l = A_l @ R_(l-1) from R_1 = A_1.")
CLS_ROW = Diagnosis(
    "cls-row",
    "it returns only the [CLS] row (B, T); return the whole rollout (B, T, T) and let the caller take "
    "rollout[:, 0].")
FIXED_DTYPE = Diagnosis(
    "rollout-fixed-dtype",
    "it runs on float32 maps but raises on these float64 ones: a tensor made inside in the default dtype "
    "(torch.eye(T), say) meets the maps; create it with dtype=attention.dtype, device=attention.device.")
HEADS_FOR_BATCH = Diagnosis(
    "heads-for-batch",
    "has shape {shape} = (H, T, T), the heads' axis where the batch's belongs: the maps are "
    "(B, H, T, T), so average the heads, dim=1, and keep the batch.")
SOFTMAX_ROWS = Diagnosis(
    "softmax-rows",
    "each layer's rows are normalised with a softmax, which exponentiates them: divide A + I by its row "
    "sums instead, (A + I) / (A + I).sum(dim=-1, keepdim=True).")
DIFFERENTIABLE = Diagnosis(
    "differentiable",
    "attention_rollout must stay differentiable: no torch.no_grad() or .detach() inside (the notebook's "
    "cls_rollout turns gradients off around it)")
DETACHED = Diagnosis(
    "maps-detached",
    f"{DIFFERENTIABLE}; its rollout of maps that require grad does not require grad. Compute with torch "
    "operations on the maps themselves, no NumPy.")
MODIFIES_INPUT = Diagnosis(
    "modifies-input",
    "it modified an attention map in place (e.g. `attention += eye`); build new tensors instead, "
    "attention.mean(dim=1) + eye.")


def _roll(task, attention_rollout, maps, what):
    """attention_rollout(list of maps) checked for type and shape (B, T, T); the maps must stay unchanged."""
    before = [attention.detach().clone() for attention in maps]
    try:
        rollout = task.call(what, attention_rollout, list(maps))
    except CheckFailure as failure:
        if " raised " in str(failure) and maps[0].dtype == torch.float64 and \
                _rollout_or_none(attention_rollout, [attention.float() for attention in maps]) is not None:
            task.fail(f"{str(failure).split(': ', 1)[1].rstrip('.')}; {FIXED_DTYPE}", FIXED_DTYPE.slug)
        axes = " raised " in str(failure) and probes.explain_raise(attention_rollout, maps)
        if axes:
            task.fail(f"{what}: {axes}")
        raise
    if rollout is None:
        skipped = probes.none_for_one_layer(attention_rollout, maps) if len(maps) == 1 else None
        if skipped:
            task.fail(f"{what}: {skipped}")
    if any(not torch.equal(attention.detach(), saved) for attention, saved in zip(maps, before)):
        task.fail(MODIFIES_INPUT)
    batch_size, num_heads, seq_len, _ = maps[0].shape
    if isinstance(rollout, torch.Tensor) and tuple(rollout.shape) == (batch_size, seq_len) and seq_len > 1:
        task.fail(CLS_ROW)
    if isinstance(rollout, torch.Tensor) and tuple(rollout.shape) == (num_heads, seq_len, seq_len) != \
            (batch_size, seq_len, seq_len):
        task.fail(f"{what} " + HEADS_FOR_BATCH.format(shape=tuple(rollout.shape)))
    return expect_tensor(task, what, rollout, (batch_size, seq_len, seq_len), maps[0].dtype)


def _expect_case(task, attention_rollout, name, case, cases):
    """One stack of maps against its expected rollout; a known mistake named when the function gives its outputs."""
    what = f"{NAME} on {name}"
    rollout = _roll(task, attention_rollout, case["maps"], what)
    expect_finite(task, what, rollout)
    if not matches(rollout, case["rollout"], ATOL, RTOL):
        _diagnose(task, attention_rollout, what, rollout, case, cases)
        _explain_composition(task, attention_rollout, what, dict(got=rollout, maps=case["maps"]), cases)
        _explain_layer(task, what, rollout, case["maps"])
        _explain_probes(task, attention_rollout, what, rollout, case)
        _explain_row_sums(task, what, rollout, len(case["maps"]))
    expect_close(task, what, rollout, case["rollout"], ATOL, RTOL)


def _diagnose(task, attention_rollout, what, rollout, case, cases):
    """Fail naming a known mistake when the rollout is its output on this case and no other known mistake's, and the
    function gives that mistake's output on every other case too: identical layers, say, give the same output
    whether only the first or only the last is used, and adding the identity once to the whole product gives the
    first layer's output on two one-hot layers, which names neither."""
    named = [diagnosis for diagnosis, signature in (signatures(case, "rollout") or {}).items()
             if matches(rollout, signature, ATOL, RTOL)]
    if len(named) == 1 and all(_reproduces(attention_rollout, other, named[0]) for other in cases.values()):
        task.fail(f"{what} is wrong: {named[0]}", slug_of(named[0]))


def _reproduces(attention_rollout, case, diagnosis):
    """True when attention_rollout gives the case's output of the mistake `diagnosis` (where the case records one)."""
    signature = (signatures(case, "rollout") or {}).get(diagnosis)
    if signature is None:
        return True
    rollout = _rollout_or_none(attention_rollout, case["maps"])
    return rollout is not None and matches(rollout, signature, ATOL, RTOL)


def _explain_composition(task, attention_rollout, what, rollout, cases):
    """Fail naming how the layers are combined when, on this stack and on every other stack of two or more layers,
    the rollout is one known combination of the function's own rollouts of each layer alone (so it is named whatever
    each layer's map is), and on this stack no other known combination gives it."""
    named = [name for name, candidate in _combinations(attention_rollout, rollout["maps"]).items()
             if candidate is not None and matches(rollout["got"], candidate, ATOL, RTOL)]
    if len(named) != 1 or named[0] == RIGHT:
        return  # none, or several alike (identical layers), or the layers combined right: a layer's map is wrong
    for case in cases.values():
        if len(case["maps"]) > 1:
            got = _rollout_or_none(attention_rollout, case["maps"])
            candidate = _combinations(attention_rollout, case["maps"])[named[0]]
            if got is None or candidate is None or not matches(got, candidate, ATOL, RTOL):
                return
    task.fail(f"{what} is wrong: {named[0]}", slug_of(named[0]))


def _combinations(attention_rollout, maps):
    """diagnosis -> the stack's rollout if the layers' own rollouts (the function on each layer alone) were combined
    that way; {} for a single layer, and None values when a layer's rollout is no (B, T, T) tensor."""
    if len(maps) < 2:
        return {}
    alone = [_rollout_or_none(attention_rollout, [attention]) for attention in maps]
    if any(single is None or single.dim() != 3 or single.shape != alone[0].shape for single in alone):
        return dict.fromkeys((RIGHT, ELEMENTWISE, WRONG_ORDER, LAST_LAYER, FIRST_LAYER))
    later_left, earlier_left, product = alone[0], alone[0], alone[0]
    for single in alone[1:]:
        later_left, earlier_left, product = single @ later_left, earlier_left @ single, single * product
    return {RIGHT: later_left, ELEMENTWISE: product, WRONG_ORDER: earlier_left, LAST_LAYER: alone[-1],
            FIRST_LAYER: alone[0]}


def _explain_probes(task, attention_rollout, what, rollout, case):
    """Fail with what a probe of the function finds: a transposed result, rows normalised over the whole matrix,
    only the first head read, the first layer treated apart, a layer left out; otherwise return."""
    maps = case["maps"]
    for found in (probes.transposed(rollout.detach(), case["rollout"]),
                  probes.whole_matrix_normalised(rollout.detach(), len(maps)),
                  probes.only_first_head(attention_rollout, maps),
                  probes.first_layer_apart(attention_rollout, maps),
                  probes.skipped_layers(attention_rollout, maps)):
        if found:
            task.fail(f"{what} is wrong: {found}")


def _explain_layer(task, what, rollout, maps):
    """Fail naming a softmax in place of the division when the rollout of one layer is the softmax of its A + I."""
    if len(maps) != 1:
        return
    mixed = maps[0].mean(dim=1)  # (B, T, T), the heads averaged
    mixed = mixed + torch.eye(mixed.size(-1), dtype=mixed.dtype)  # A + I
    if matches(rollout, mixed.softmax(dim=-1), ATOL, RTOL):
        task.fail(f"{what} is wrong: {SOFTMAX_ROWS}", SOFTMAX_ROWS.slug)


def _rollout_or_none(attention_rollout, maps):
    """attention_rollout(maps) as a detached tensor, or None when it raises or returns something else (a probe)."""
    try:
        with torch.no_grad():
            rollout = attention_rollout([attention.clone() for attention in maps])
    except Exception:  # noqa: BLE001 -- only a probe: the check's own steps report errors
        return None
    return rollout.detach() if isinstance(rollout, torch.Tensor) else None


def _explain_row_sums(task, what, rollout, num_layers):
    """Fail when every row sums to 2^L (no renormalisation) or the rows do not sum to 1."""
    sums = rollout.detach().sum(dim=-1)  # (B, T)
    if num_layers > 0 and torch.allclose(sums, torch.full_like(sums, 2.0 ** num_layers)):
        task.fail(f"{what} is wrong: its rows sum to 2^{num_layers}; {NOT_RENORMALISED}", NOT_RENORMALISED.slug)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-6):
        task.fail(f"{what} is wrong: its rows sum to values from {sums.min().item():.4g} to {sums.max().item():.4g}, "
                  "not 1 (a product of maps whose rows sum to 1 has rows that sum to 1).")


def _expect_float32(task, attention_rollout, case):
    """float32 maps give a float32 rollout close to the float64 one (an identity built in float64 would not)."""
    maps = [attention.float() for attention in case["maps"]]
    rollout = _roll(task, attention_rollout, maps, f"{NAME} on float32 maps")
    expect_close(task, f"{NAME} on float32 maps", rollout, case["rollout"], 1e-5, 1e-5)


def _expect_gradients(task, attention_rollout, case):
    """A gradient reaches every layer's map: nothing detached, no NumPy round trip."""
    maps = [attention.clone().requires_grad_(True) for attention in case["maps"]]
    rollout = _roll(task, attention_rollout, maps, f"{NAME} on maps that require gradients")
    if not rollout.requires_grad:
        task.fail(DETACHED)
    task.call(f"backward through {NAME}", lambda: (rollout * case["rollout"]).sum().backward())
    for index, attention in enumerate(maps):
        if attention.grad is None or not torch.isfinite(attention.grad).all() or not attention.grad.abs().sum():
            task.fail(f"{DIFFERENTIABLE}; no gradient reaches attention_maps[{index}]: is it detached, or converted to "
                      "NumPy?", DIFFERENTIABLE.slug)


@check_function(5)
def check_task_5(task, attention_rollout):
    """Check attention_rollout: hand-built stacks with known rollouts, random batched stacks, dtype, gradients."""
    expect_callable(task, attention_rollout, NAME)
    fixture = load_fixture(__package__, 5)
    for name, case in fixture["cases"].items():
        _expect_case(task, attention_rollout, name, case, fixture["cases"])
    random = fixture["cases"][fixture["random"]]
    _expect_float32(task, attention_rollout, random)
    _expect_gradients(task, attention_rollout, random)
    task.passed("each layer's head average plus the identity, rows renormalised, multiplied later layer on the "
                "left; dtype kept, gradients flow, the maps left unchanged.")
