"""Task 7: Linformer attention, block and classifier."""
import contextlib

import torch
import torch.nn as nn

from .._compare import diagnose, expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import Diagnosis, CheckFailure, NotImplementedYet, check_function, expect_module_class, load_fixture
from .._modules import expect_gradients_everywhere, expect_native_output, expect_output, expect_unchanged, load
from ._student_errors import build, call, call_site, fail_at
from .._block_probes import explain_block
from .._probes import explain_heads
from ._linformer_probes import explain_compressions
from ._roles import (MissingPart, encoder_blocks, linformer_attention_slots, linformer_block_slots,
                     linformer_classifier_slots)
from .classifier import build_loaded, expect_classifier, expect_max_len_used
from .encoder import expect_dropout_on_each_sublayer
from ._probes_generic import failing_operation, holds_values_of
from ._probes_words import explain_unused

ATOL, RTOL = 1e-6, 1e-6
QUERIES_PROJECTED = Diagnosis(
    "queries-projected",
    "the queries are compressed along the sequence too: apply e_proj to the keys and f_proj to the "
    "values only; the queries keep all L rows, so the output has one row per position.")
SEQUENCE_AXIS = Diagnosis(
    "sequence-axis",
    "e_proj and f_proj compress the sequence axis: give them the keys and values as (B, H, head_dim, L), "
    "key.transpose(-2, -1), and transpose their output back to (B, H, proj_dim, head_dim).")
NOT_LINFORMER = Diagnosis(
    "not-linformer",
    "LinformerBlock.attention is not a LinformerAttention: after super().__init__(...), replace it with "
    "LinformerAttention(embed_dim, num_heads, sequence_length, proj_dim).")
# Sentences the known mistakes' diagnoses quote (course/transformer/mistakes.py).
E_FOR_VALUES = Diagnosis(
    "e-reused-for-the-values",
    "the values are compressed with e_proj; use f_proj (F) for the values, e_proj (E) for the keys.")
NOT_SCALED = Diagnosis(
    "linformer-no-scaling",
    "the scores are not divided by √head_dim.")
SOFTMAX_OVER_QUERIES = Diagnosis(
    "linformer-softmax-over-the-queries",
    "the softmax runs over the queries (dim=-2); it must run over the proj_dim compressed keys, the last axis.")
FEATURE_AXIS = Diagnosis(
    "projection-along-the-feature-axis",
    "E and F must mix the L positions of each feature: lay the keys and values out as (B, H, head_dim, L) with "
    "permute or transpose (a reshape scrambles them), apply e_proj / f_proj, then transpose back to (B, H, "
    "proj_dim, head_dim).")


def _forward(task, module, x, what, **kwargs):
    before = x.clone()
    result = call(task, what, module, x, **kwargs)
    expect_unchanged(task, before, x)
    return result


def _expect_layer(task, module, case, name, explain):
    """Outputs and attention against the fixture (naming projected queries, or a failed property), then gradients."""
    try:
        _expect_values(task, module, case, name, explain)
    except NotImplementedYet:
        raise
    except CheckFailure:
        _explain_compressed_axis(task, module, case["x"], name)
        _explain_compressed_not_moved_back(task, module, case["x"], name)
        _explain_projections(task, module, case["x"], name)
        raise
    inputs = case["x"].clone().requires_grad_(True)
    outputs = expect_output(task, f"{name}(x)", _forward(task, module, inputs, f"{name}.forward"), inputs.shape,
                            inputs.dtype)
    loss = outputs.pow(2).sum()
    expect_gradients_everywhere(task, module, loss, inputs, name)


def _expect_values(task, module, case, name, explain):
    x = case["x"]
    outputs = expect_output(task, f"{name}(x)", _forward(task, module, x, f"{name}.forward"), x.shape, x.dtype)
    if not matches(outputs, case["outputs"], ATOL, RTOL):
        expect_finite(task, f"{name} output", outputs)
        diagnose(task, f"{name} output", outputs, signatures(case, "outputs"), ATOL, RTOL)
        _explain_projections(task, module, x, name)
        explain()
    expect_close(task, f"{name} output", outputs, case["outputs"], ATOL, RTOL, signatures(case, "outputs"))
    result = _forward(task, module, x, f"{name}.forward", return_attention=True)
    _, attention = expect_output(task, name, result, x.shape, x.dtype, with_attention=True)
    expect_tensor(task, f"{name} attention (B, H, L, proj_dim)", attention, case["attention"].shape, x.dtype)
    expect_close(task, f"{name} attention", attention, case["attention"], ATOL, RTOL, signatures(case, "attention"))


def _explain_compressed_axis(task, module, x, name):
    """Fail naming e_proj or f_proj when a forward pass gives it a tensor whose last axis is not the sequence."""
    attention = getattr(module, "attention", module)
    parts = {key: getattr(attention, key, None) for key in ("e_proj", "f_proj")}
    shapes = {}
    hooks = [part.register_forward_pre_hook(lambda _, args, key=key: shapes.setdefault(key, tuple(args[0].shape)))
             for key, part in parts.items() if isinstance(part, nn.Linear) and hasattr(attention, "num_heads")]
    _forward_with_hooks(module, x, hooks, torch.no_grad)
    embed_dim = x.size(-1) if name == "LinformerAttention" else None
    heads = (x.size(0), attention.num_heads, x.size(-1) // attention.num_heads, x.size(1))
    for key, shape in shapes.items():
        if shape != heads and sorted(shape) == sorted(heads) and shape[-1] == heads[-1]:
            role = "keys" if key == "e_proj" else "values"
            task.fail(f"{name}: {key} was given a tensor of shape {shape}, but the {role} must reach it as "
                      f"(B, H, head_dim, L) = {heads}: its leading axes are in another "
                      "order; view as (B, L, H, head_dim), then permute(0, 2, 3, 1).")
        length, last = parts[key].in_features, shape[-1]
        if last != length:
            held = f"the {last} features of a head (head_dim)" if last * attention.num_heads == embed_dim else \
                f"the {last} features (embed_dim)" if last == embed_dim else f"size {last}"
            task.fail(f"{name}: {key} was given a tensor of shape {shape} whose last axis holds {held}, not the "
                      f"sequence_length = {length} positions: {SEQUENCE_AXIS}", SEQUENCE_AXIS.slug)


def _explain_compressed_not_moved_back(task, module, x, name):
    """Fail when the operation that raises reads e_proj's or f_proj's output as it came out, (..., head_dim, proj_dim),
    without moving the compressed axis back."""
    attention = getattr(module, "attention", module)
    made = {}
    hooks = [part.register_forward_hook(lambda _, __, output, key=key: made.setdefault(key, output.detach()))
             for key, part in ((key, getattr(attention, key, None)) for key in ("e_proj", "f_proj"))
             if isinstance(part, nn.Linear)]
    try:
        failed = failing_operation(module, x)
    finally:
        for hook in hooks:
            hook.remove()
    if failed is None:
        return
    operation, operands = failed
    for key, output in made.items():
        if any(operand.shape == output.shape and holds_values_of(operand, output) for operand in operands):
            what = "keys" if key == "e_proj" else "values"
            task.fail(f"{name}: {operation} raised on the compressed {what} as {key} returned them, of shape "
                      f"{tuple(output.shape)} (B, H, head_dim, proj_dim): move the compressed axis back, "
                      f"{key}(...).transpose(-2, -1), to (B, H, proj_dim, head_dim).")


def _forward_with_hooks(module, x, hooks, context=contextlib.nullcontext):
    """module(x) once for what the hooks record, then the hooks removed; an error is the caller's to report."""
    try:
        with context():
            module(x)
    except Exception:  # noqa: BLE001 -- only a probe: the caller reports the failure itself
        pass
    finally:
        for hook in hooks:
            hook.remove()


def _explain_projections(task, module, x, name):
    """Fail naming projected queries when one forward pass runs E and F unequally often, both at least once; the
    student's line shown is the one that projects the queries (the call whose input holds q_proj's output values),
    or none when no call does."""
    attention = getattr(module, "attention", module)
    calls, queries = {"e_proj": [], "f_proj": []}, []  # per call of E or F: (its input, the student's line running)
    hooks = [part.register_forward_hook(
        lambda _, inputs, __, key=key: calls[key].append((_first(inputs), call_site())))
        for key, part in ((key, getattr(attention, key, None)) for key in calls) if isinstance(part, nn.Module)]
    if isinstance(getattr(attention, "q_proj", None), nn.Module):
        hooks.append(attention.q_proj.register_forward_hook(lambda _, __, output: queries.append(_first(output))))
    _forward_with_hooks(module, x, hooks)
    # keys and values are projected equally often (once, or once per head); a third tensor, the queries, breaks that
    if min(map(len, calls.values())) >= 1 and len(calls["e_proj"]) != len(calls["f_proj"]):
        located = next((site for found in calls.values() for given, site in found
                        if any(_same_values(given, query) for query in queries)), None)
        fail_at(task, f"{name}: {QUERIES_PROJECTED}", QUERIES_PROJECTED.slug, located)


def _first(value):
    value = value[0] if isinstance(value, (tuple, list)) and value else value
    return value.detach() if isinstance(value, torch.Tensor) else None


def _same_values(a, b):
    """Whether two tensors hold the same numbers in any layout (a view, transpose or permute of each other)."""
    return a is not None and b is not None and a.numel() == b.numel() and a.dtype == b.dtype and \
        torch.equal(a.flatten().sort().values, b.flatten().sort().values)


def _explain_positions_covered(task, model, case, name):
    """Fail when the classifier's blocks are not Linformer blocks, or its E or F takes one position fewer or more
    than the L + 1 its blocks see."""
    blocks = encoder_blocks(model)
    if blocks and not hasattr(getattr(blocks[0], "attention", None), "e_proj"):
        task.fail(f"{name}: encoder block 0, of class {type(blocks[0]).__name__}, has an attention with no e_proj "
                  "(full attention): after super().__init__(...), replace self.encoder with an nn.ModuleList of "
                  "LinformerBlock(embed_dim, num_heads, feedforward_dim, sequence_length, proj_dim, activation, "
                  "dropout).")
    try:
        slots = linformer_classifier_slots(model)
    except MissingPart:
        return  # load says what is missing
    for role, expected in case["weights"].items():
        got = tuple(slots[role].shape) if role in slots else None
        if role.endswith(("e_proj.weight", "f_proj.weight")) and got is not None and len(got) == 2 \
                and got == (expected.size(0), expected.size(1) - 1):
            task.fail(f"{name}: `{role}` has shape {got}, expected {tuple(expected.shape)}: E and F must cover all "
                      f"L + 1 = {expected.size(1)} positions the blocks see, because [CLS] is prepended to the L = "
                      f"{expected.size(1) - 1} tokens (the classifier's sequence_length already counts [CLS]).")
        if role.endswith(("e_proj.weight", "f_proj.weight")) and got == (expected.size(0), expected.size(1) + 1):
            task.fail(f"{name}: `{role}` has shape {got}, expected {tuple(expected.shape)}: E and F cover one position "
                      f"more than the L + 1 = {expected.size(1)} the blocks see: the classifier's sequence_length "
                      "already counts [CLS], so pass it on to the blocks unchanged.")


def _expect_linformer_block(task, block, LinformerAttention):
    """Fail naming a LinformerBlock that kept EncoderBlock's full attention."""
    if not isinstance(getattr(block, "attention", None), LinformerAttention) \
            and not hasattr(getattr(block, "attention", None), "e_proj"):
        task.fail(NOT_LINFORMER)
    return block


@check_function(7)
def check_task_7(task, LinformerAttention, LinformerBlock, LinformerForSequenceClassification):
    """Check the three Linformer classes against fixed weights (attention of shape (B, H, L, proj_dim))."""
    for cls, name in ((LinformerAttention, "LinformerAttention"), (LinformerBlock, "LinformerBlock"),
                      (LinformerForSequenceClassification, "LinformerForSequenceClassification")):
        expect_module_class(task, cls, name)
    fixture = load_fixture(__package__, 7)
    slots = linformer_attention_slots
    case = fixture["attention"]
    attention = load(task, build(task, LinformerAttention, "LinformerAttention", *case["args"]), slots,
                     case["weights"], "LinformerAttention")
    num_heads = case["args"][1]
    _expect_layer(task, attention, case, "LinformerAttention",
                  lambda: explain_unused(task, "LinformerAttention", attention, lambda module: module(case["x"])) or
                  explain_heads(task, "LinformerAttention", attention, case["x"], case, slots(attention),
                                        num_heads, variant=explain_compressions))
    single = build(task, LinformerAttention, "LinformerAttention", *case["args"], dtype=torch.float32, native=True)
    single = load(task, single, slots, case["weights"], "LinformerAttention")
    expect_native_output(task, single, "LinformerAttention", "LinformerAttention on float32 input",
                         lambda: _forward(task, single, case["x"].float(), "LinformerAttention.forward"),
                         case["outputs"])
    case = fixture["block"]
    block = build(task, LinformerBlock, "LinformerBlock", *case["args"])
    block_roles = linformer_block_slots
    block = load(task, _expect_linformer_block(task, block, LinformerAttention), block_roles, case["weights"],
                 "LinformerBlock").eval()
    _expect_layer(task, block, case, "LinformerBlock",
                  lambda: explain_block(task, "LinformerBlock", block, case["x"], block_roles(block)))
    dropping = load(task, build(task, LinformerBlock, "LinformerBlock", *case["args"], dropout=0.5), block_roles,
                    case["weights"], "LinformerBlock")
    expect_dropout_on_each_sublayer(task, "LinformerBlock(dropout=0.5)", dropping, case["x"], block_roles)
    case, name = fixture["classifier"], "LinformerForSequenceClassification"
    model = build_loaded(task, LinformerForSequenceClassification, name, case["config"], case, None,
                         linformer_classifier_slots, lambda model: _explain_positions_covered(task, model, case, name))
    rebuild = lambda activation: build(task, LinformerForSequenceClassification, name, **case["config"],
                                       activation=activation).eval()
    expect_classifier(task, model, case, case["x"], name, rebuild)
    expect_max_len_used(task, lambda **changed: build(task, LinformerForSequenceClassification, name,
                                                      **dict(case["config"], **changed)), name)
    task.passed("sequence-axis projections E and F, attention of shape (B, H, L, proj_dim), block and classifier "
                "are right.")
