"""Task 2: multi-head attention."""
import copy

import torch

from .._compare import diagnose, expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import CheckFailure, Diagnosis, check_function, expect_module_class, load_fixture
from .._modules import build, expect_gradients_everywhere, expect_native_output, expect_output, expect_unchanged, load
from .._dependencies import attention_function, explain_parts
from .._probes import explain_heads, explain_mask
from .._weights import attention_slots
from ._student_errors import call, what_of
from ._probes_generic import outcome
from ._probes_words import explain_unused

ATOL, RTOL = 1e-6, 1e-6
QUERY_KEY_SWAPPED = Diagnosis(
    "query-key-swapped",
    "q_proj and k_proj are used the other way round (the result is right once their weights are "
    "exchanged): the queries are q_proj(x) and the keys k_proj(x).")
HEAD_AXIS_MISSING = Diagnosis(
    "head-axis-missing",
    "a (B, L, L) mask must get a head axis, mask.unsqueeze(1) -> (B, 1, L, L), or it broadcasts "
    "against the wrong dimension.")
# Sentences the known mistakes' diagnoses quote (course/transformer/mistakes.py).
SPLIT_WITHOUT_TRANSPOSE = Diagnosis(
    "heads-split-without-the-transpose",
    "the heads are split with a view straight to (B, H, L, head_dim): view as (B, L, H, head_dim), then "
    "transpose(1, 2).")
MERGED_WITHOUT_TRANSPOSE = Diagnosis(
    "heads-merged-without-the-transpose",
    "the heads are merged without transposing back: transpose (B, H, L, head_dim) to (B, L, H, head_dim) before "
    "reshaping to (B, L, D).")
NO_OUTPUT_PROJECTION = Diagnosis(
    "no-output-projection",
    "the output projection is missing: apply o_proj to the merged heads.")
SCALED_BY_EMBED_DIM = Diagnosis(
    "scaled-by-the-full-embedding-width",
    "the scores are scaled by √embed_dim; each head must scale by √head_dim (call your attention on the per-head "
    "tensors).")
QUERIES_FROM_K_PROJ = Diagnosis(
    "queries-from-k-proj",
    "a projection feeds the wrong role: queries come from q_proj, keys from k_proj, values from v_proj.")
HEADS_AVERAGED = Diagnosis(
    "attention-averaged-over-heads",
    "the returned attention is averaged over the heads: return each head's weights, shape (B, H, L, L).")


def _forward(task, layer, x, mask=None, return_attention=True, what="MultiheadAttention.forward"):
    before = x.clone()
    kwargs = {} if mask is None else {"mask": mask}
    result = call(task, what, layer, x, return_attention=return_attention, **kwargs)
    expect_unchanged(task, before, x)
    return result


def _expect_heads(task, cls, case, embed_dim, num_heads):
    layer = load(task, build(task, cls, "MultiheadAttention", embed_dim, num_heads), attention_slots, case["weights"],
                 "MultiheadAttention")
    x, (batch_size, seq_len, _) = case["x"], case["x"].shape
    plain = _forward(task, layer, x, return_attention=False)
    expect_output(task, "MultiheadAttention(x)", plain, x.shape, x.dtype)
    for mask_name, expected in case["masks"].items():
        what = f"MultiheadAttention with {num_heads} heads" + ("" if mask_name == "none" else f", mask {mask_name}")
        if mask_name == "(B, L, L)" and not _right(layer, x, expected["mask"], expected) \
                and _right(layer, x, expected["mask"].unsqueeze(1), expected):
            if _right(layer, x, expected["mask"], case["masks"]["none"]):
                task.fail(f"{what}: a (B, L, L) mask is ignored (the result equals the unmasked one), while the same "
                          "mask as (B, 1, L, L) works: give it the head axis, mask.unsqueeze(1), and use it.")
            task.fail(f"{what}: {HEAD_AXIS_MISSING}", HEAD_AXIS_MISSING.slug)
        outputs, attention = expect_output(task, what, _forward_masked(task, layer, x, case, mask_name),
                                           x.shape, x.dtype, True)
        expect_tensor(task, f"{what}: attention", attention, (batch_size, num_heads, seq_len, seq_len), x.dtype)
        if not (matches(attention, expected["attention"], ATOL, RTOL)
                and matches(outputs, expected["outputs"], ATOL, RTOL)):
            _explain(task, what, layer, x, expected, (outputs, attention), num_heads)
        expect_close(task, f"{what}: attention", attention, expected["attention"], ATOL, RTOL,
                     signatures(expected, "attention"))
        expect_close(task, f"{what}: outputs", outputs, expected["outputs"], ATOL, RTOL,
                     signatures(expected, "outputs"))
    return layer


def _forward_masked(task, layer, x, case, mask_name):
    """_forward with the case's mask of that name; when it raises, fail saying which mask shapes work and raise."""
    try:
        return _forward(task, layer, x, case["masks"][mask_name]["mask"])
    except CheckFailure as failure:
        if mask_name == "none":
            raise
        raised = [name for name, masked in case["masks"].items() if name != "none"
                  and outcome(layer, x, mask=masked["mask"], return_attention=True)[0] == "raised"]
        works = [name for name in case["masks"] if name not in raised and name != "none"]
        if not works:
            raise
        fix = (": only a 3-D mask needs the head axis, `if mask.dim() == 3: mask = mask.unsqueeze(1)`; (L, L) and "
               "4-D masks already broadcast to (B, H, L, L)" if works == ["(B, L, L)"] else
               ": every mask shape the task lists must broadcast to (B, H, L, L)")
        task.fail(f"{what_of(failure)} works with a mask of shape {', '.join(works)} but raises with "
                  f"{', '.join(raised)}{fix}.")


def _explain(task, what, layer, x, expected, got, num_heads):
    """Name a known mistake, or else the property that fails, for wrong weights or outputs."""
    outputs, attention = got
    expect_finite(task, f"{what}: attention", attention)
    expect_finite(task, f"{what}: outputs", outputs)
    diagnose(task, f"{what}: attention", attention, signatures(expected, "attention"), ATOL, RTOL)
    diagnose(task, f"{what}: outputs", outputs, signatures(expected, "outputs"), ATOL, RTOL)
    explain_parts(task, what, [("the scaled_softmax_attention it calls", 1, attention_function(type(layer)))],
                  __package__)
    if _right_with_exchanged(layer, "q_proj", "k_proj", x, expected):
        task.fail(f"{what}: {QUERY_KEY_SWAPPED}", QUERY_KEY_SWAPPED.slug)
    if expected["mask"] is None:
        # q_proj and k_proj unused are named by explain_heads, which sees them change no attention weight
        explain_unused(task, what, layer, lambda module: module(x, return_attention=True),
                       roles=("v_proj.weight", "o_proj.weight"))
        explain_heads(task, what, layer, x, expected, attention_slots(layer), num_heads)
    else:
        if _right(layer, x, expected["mask"].transpose(-2, -1), expected):
            task.fail(f"{what}: the result is right only when the mask is given transposed: mask[..., i, j] says "
                      "whether query i may attend to key j; use it without transposing.")
        explain_mask(task, what, attention, expected["mask"])


def _right_with_exchanged(layer, first, second, x, expected):
    """Whether a copy of the layer with the weights of two projections exchanged gives the expected result."""
    try:
        swapped = copy.deepcopy(layer)
        one, other = getattr(swapped, first), getattr(swapped, second)
        with torch.no_grad():
            for name in ("weight", "bias"):
                mine, theirs = getattr(one, name), getattr(other, name)
                saved = mine.clone()
                mine.copy_(theirs)
                theirs.copy_(saved)
    except Exception:  # noqa: BLE001 -- only a probe: no such projections, or of other shapes
        return False
    return _right(swapped, x, expected["mask"], expected)


def _right(layer, x, mask, expected):
    """Whether the layer gives the expected outputs and attention with this mask (any error: no)."""
    try:
        outputs, attention = layer(x, mask=mask, return_attention=True)
        return matches(outputs, expected["outputs"], ATOL, RTOL) \
            and matches(attention, expected["attention"], ATOL, RTOL)
    except Exception:  # noqa: BLE001 -- only a probe: the checks that follow report the error itself
        return False


def _expect_batch_independent(task, layer, x):
    full = expect_output(task, "MultiheadAttention(x)", _forward(task, layer, x, return_attention=False),
                         x.shape, x.dtype)
    alone = expect_output(task, "MultiheadAttention(x[1:])", _forward(task, layer, x[1:], return_attention=False),
                          x[1:].shape, x.dtype)
    if not torch.allclose(full[1:], alone, atol=ATOL):
        task.fail("the output for one batch element depends on the other elements: check the order of your "
                  "view / transpose / reshape when splitting and merging heads.")


@check_function(2)
def check_task_2(task, MultiheadAttention):
    """Check MultiheadAttention(embed_dim, num_heads) against fixed weights, masks and properties."""
    expect_module_class(task, MultiheadAttention, "MultiheadAttention")
    fixture = load_fixture(__package__, 2)
    for num_heads, case in fixture["cases"].items():
        layer = _expect_heads(task, MultiheadAttention, case, fixture["embed_dim"], num_heads)
    x = fixture["cases"][2]["x"]
    _expect_batch_independent(task, layer, x)
    inputs = x.clone().requires_grad_(True)
    outputs = expect_output(task, "MultiheadAttention(x)", _forward(task, layer, inputs, return_attention=False),
                            x.shape, x.dtype)
    expect_gradients_everywhere(task, layer, outputs.pow(2).sum(), inputs, "MultiheadAttention")
    single = build(task, MultiheadAttention, "MultiheadAttention", fixture["embed_dim"], 2, dtype=torch.float32,
                   native=True)
    single = load(task, single, attention_slots, fixture["cases"][2]["weights"], "MultiheadAttention")
    expect_native_output(task, single, "MultiheadAttention", "MultiheadAttention on float32 input",
                         lambda: _forward(task, single, x.float(), return_attention=False),
                         fixture["cases"][2]["masks"]["none"]["outputs"])
    task.passed("projections, head split and merge, all mask shapes, 2 and 4 heads, gradients and dtypes are right.")
