"""Task 3: multi-head attention with a context (self- and cross-attention)."""
import torch

from .._compare import diagnose, expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import CheckFailure, NotImplementedYet, check_function, expect_module_class, load_fixture, one_line
from .._modules import build, expect_gradients_everywhere, expect_native_output, expect_output, load
from .._probes import explain_heads, explain_mask
from ._attention_probes import (explain_head_axis, explain_length_error, explain_mask_error,
                                explain_output_projection, explain_sources, explain_truth_value)
from ._weights import attention_slots
from .._core import Diagnosis

ATOL, RTOL = 1e-6, 1e-6
SAME_LENGTH = Diagnosis(
    "same-length",
    "cross-attention, context as long as x")
# Sentences the known mistakes' diagnoses quote (course/seq2seq/mistakes.py).
KV_FROM_X = Diagnosis(
    "kv-from-x",
    "the keys and values come from x instead of the context: key = k_proj(context), "
    "value = v_proj(context); only the queries come from x.")
Q_FROM_CONTEXT = Diagnosis(
    "q-from-context",
    "the queries come from the context instead of x: query = q_proj(x); keys and values use the context.")
MERGE_KEY_LEN = Diagnosis(
    "merge-key-len",
    "it works when the context is as long as x but not otherwise: something uses the context's length "
    "L_k where x's length L_q belongs; the output has one row per query, "
    "merge the heads with reshape(B, L_q, D).")
SWAPPED = Diagnosis(
    "swapped",
    "the queries come from the context and the keys and values from x, the other way round: query = "
    "q_proj(x); key = k_proj(context), value = v_proj(context).")
MASK_HEADS = Diagnosis(
    "mask-heads",
    "the mask is not broadcast over the heads: a mask of shape (B, 1, 1, L_k) or (B, 1, L_q, L_k) must "
    "keep its head axis of size 1, so that it lines up with the scores (B, H, L_q, L_k).")


def _call(task, layer, run, return_attention=True):
    kwargs = {key: run[key] for key in ("context", "mask") if key in run}
    befores = {key: value.clone() for key, value in kwargs.items() if isinstance(value, torch.Tensor)}
    x = run["x"]
    before = x.clone()
    try:
        result = task.call("MultiheadAttention.forward", layer, x, return_attention=return_attention, **kwargs)
    except NotImplementedYet:
        raise
    except CheckFailure:
        explain_mask_error(task, layer, x, kwargs)
        explain_truth_value(task, layer, x, kwargs)
        raise
    if not torch.equal(before, x) or any(not torch.equal(value, kwargs[key]) for key, value in befores.items()):
        task.fail("MultiheadAttention.forward modified one of its inputs in place (e.g. `x += ...`); build a new "
                  "tensor instead.")
    if result is None:
        task.fail("MultiheadAttention.forward returned None: is a `return` statement missing?")
    return result


def _expect_run(task, layer, name, runs, num_heads):
    """One run of the fixture; a cross-attention that differs is also probed with L_k != L_q to name the cause."""
    what, run = f"MultiheadAttention with {num_heads} heads, {name}", runs[name]
    x, key_len = run["x"], run.get("context", run["x"]).size(1)
    if name == "cross-attention":
        _expect_other_length(task, layer, run, what)
    outputs, attention = expect_output(task, what, _call(task, layer, run), x.shape, x.dtype, with_attention=True)
    explain_head_axis(task, what, attention, run["attention"])
    expect_tensor(task, f"{what}: attention", attention, (x.size(0), num_heads, x.size(1), key_len), x.dtype)
    if not (matches(outputs, run["outputs"], ATOL, RTOL) and matches(attention, run["attention"], ATOL, RTOL)):
        expect_finite(task, f"{what}: attention", attention)
        expect_finite(task, f"{what}: the output", outputs)
        diagnose(task, f"{what}: attention", attention, signatures(run, "attention"), ATOL, RTOL)
        diagnose(task, f"{what}: the output", outputs, signatures(run, "outputs"), ATOL, RTOL)
        if name == SAME_LENGTH:
            if _roles_swapped(layer, run):
                task.fail(f"{what}: MultiheadAttention(context, context=x) gives the expected output of "
                          f"MultiheadAttention(x, context=context): {SWAPPED}", SWAPPED.slug)
            explain_sources(task, what, layer, run, attention_slots(layer), KV_FROM_X)
            if "cross-attention" in runs:
                _expect_other_length(task, layer, runs["cross-attention"], what, same_length_right=False)
        explain_output_projection(task, what, layer, run, attention_slots(layer))
        if name == "self-attention":
            explain_heads(task, what, layer, x, run, attention_slots(layer), num_heads)
        if run.get("mask") is not None:
            explain_mask(task, what, attention, run["mask"])
    expect_close(task, f"{what}: attention", attention, run["attention"], ATOL, RTOL)
    expect_close(task, f"{what}: the output", outputs, run["outputs"], ATOL, RTOL)


def _roles_swapped(layer, run):
    """Whether the layer with x and the context exchanged gives the expected output (a probe, same lengths, no mask)."""
    try:
        outputs = layer(run["context"], context=run["x"])
    except Exception:  # noqa: BLE001 -- only a probe: the caller reports the failure itself
        return False
    return isinstance(outputs, torch.Tensor) and matches(outputs, run["outputs"], ATOL, RTOL)


def _expect_other_length(task, layer, run, what, same_length_right=True):
    """With L_k != L_q, name which length went where before the values are compared.

    Args:
        same_length_right: whether the context as long as x gave the expected values (then a failure here is a
            length put where the other belongs).
    """
    (batch_size, query_len, embed_dim), key_len = run["x"].shape, run["context"].size(1)
    try:
        result = layer(run["x"], context=run["context"], return_attention=True)
    except NotImplementedError:
        return  # the call that follows reports it
    except Exception as error:  # noqa: BLE001 -- the student's error, named below
        if not same_length_right:
            return
        explain_length_error(task, what, layer, run)
        task.fail(f"{what} (L_q = {query_len}, L_k = {key_len}) raised {type(error).__name__}: {one_line(error, 120)}; "
                  f"{MERGE_KEY_LEN}", MERGE_KEY_LEN.slug)
    if not isinstance(result, (tuple, list)) or len(result) != 2 or not all(
            isinstance(part, torch.Tensor) for part in result):
        return
    outputs, attention = result
    swapped = outputs.dim() == 3 and outputs.size(1) == key_len and attention.dim() == 4
    if swapped and attention.size(-1) == query_len:
        task.fail(f"{what} (L_q = {query_len}, L_k = {key_len}): the output has {key_len} rows and the attention "
                  f"{query_len} keys: {SWAPPED}", SWAPPED.slug)
    if outputs.dim() == 3 and outputs.size(1) == key_len:
        task.fail(f"{what}: the output has L_k = {key_len} rows instead of L_q = {query_len}: {Q_FROM_CONTEXT}",
                  Q_FROM_CONTEXT.slug)
    if attention.dim() == 4 and attention.size(-1) == query_len:
        task.fail(f"{what}: the attention has {query_len} keys instead of the context's {key_len}: {KV_FROM_X}",
                  KV_FROM_X.slug)
    if tuple(outputs.shape) != (batch_size, query_len, embed_dim) and same_length_right:
        task.fail(f"{what}: the output has shape {tuple(outputs.shape)}, expected "
                  f"{(batch_size, query_len, embed_dim)}; {MERGE_KEY_LEN}", MERGE_KEY_LEN.slug)


def _loaded(task, cls, fixture, num_heads, dtype=torch.float64):
    layer = build(task, cls, "MultiheadAttention", fixture["embed_dim"], num_heads, dtype=dtype,
                  native=dtype != torch.float64)
    return load(task, layer, attention_slots, fixture["cases"][num_heads]["weights"], "MultiheadAttention")


@check_function(3)
def check_task_3(task, MultiheadAttention):
    """Check MultiheadAttention(embed_dim, num_heads) as self- and cross-attention, with every mask shape."""
    expect_module_class(task, MultiheadAttention, "MultiheadAttention")
    fixture = load_fixture(__package__, 3)
    order = ["self-attention", SAME_LENGTH]  # a context as long as x first: it tells which input went where
    for num_heads, case in fixture["cases"].items():
        layer = _loaded(task, MultiheadAttention, fixture, num_heads)
        for name in order + [name for name in case["runs"] if name not in order]:
            _expect_run(task, layer, name, case["runs"], num_heads)
    run = case["runs"]["cross-attention"]
    plain = _call(task, layer, run, return_attention=False)
    expect_output(task, "MultiheadAttention(x, context=context)", plain, run["x"].shape, run["x"].dtype)
    inputs, context = run["x"].clone().requires_grad_(True), run["context"].clone().requires_grad_(True)
    outputs = _call(task, layer, dict(x=inputs, context=context), return_attention=False)
    expect_gradients_everywhere(task, layer, outputs.pow(2).sum(), inputs, "MultiheadAttention")
    if context.grad is None or not torch.isfinite(context.grad).all():
        task.fail("no gradient reaches the `context` of MultiheadAttention: is it detached?")
    single = _loaded(task, MultiheadAttention, fixture, 2, dtype=torch.float32)
    float_run = {key: value.float() if key in ("x", "context") else value for key, value in run.items()}
    expect_native_output(task, single, "MultiheadAttention", "MultiheadAttention on float32 input",
                         lambda: _call(task, single, float_run, return_attention=False),
                         fixture["cases"][2]["runs"]["cross-attention"]["outputs"])
    task.passed("queries from x, keys and values from the context, head split and merge, every mask shape, 2 and 4 "
                "heads, gradients and dtypes are right.")
