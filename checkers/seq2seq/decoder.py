"""Task 4: the post-norm decoder block."""
import torch
import torch.nn as nn

from .._block_probes import explain_activation
from .._compare import diagnose, expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import (Diagnosis, CheckFailure, NotImplementedYet, check_function, expect_module_class, load_fixture,
                    slug_of)
from .._dependencies import explain_parts, part_class
from .._modules import DROPOUT_IN_EVAL  # one sentence for every assignment's block
from .._modules import build, expect_gradients_everywhere, expect_native_output, expect_output, load
from ._probes_spies import call_order
from ._weights import decoder_block_slots

ATOL, RTOL = 1e-6, 1e-6
WHAT = "DecoderBlock"
# Sentences the known mistakes' diagnoses quote (course/seq2seq/mistakes.py).
PRE_NORM = Diagnosis(
    "pre-norm",
    "the block normalises before each sub-layer (pre-norm); this block is post-norm: "
    "x = norm1(x + dropout(self_attention(x))), then norm2 around cross-attention, norm3 around the "
    "feed-forward network.")
CROSS_FIRST = Diagnosis(
    "cross-first",
    "cross-attention runs before self-attention: the order is self-attention (norm1), then "
    "cross-attention to the memory (norm2), then the feed-forward network (norm3).")
MEMORY_MASK_IGNORED = Diagnosis(
    "memory-mask-ignored",
    "memory_mask is not used: pass it to cross-attention, cross_attention(x, context=memory, "
    "mask=memory_mask), so that no query attends the memory's padding.")
SELF_MASK_IGNORED = Diagnosis(
    "self-mask-ignored",
    "self_mask is not used: pass it to self-attention, self_attention(x, mask=self_mask), so that "
    "no position reads a later one.")
ONE_NORM = Diagnosis(
    "one-norm",
    "one LayerNorm is used for several sub-layers: norm1 after self-attention, norm2 after cross-attention "
    "and norm3 after the feed-forward network, each with its own weights.")
RESIDUAL_MISSING = Diagnosis(
    "residual-missing",
    "the residual connection around {name} is missing (x + dropout(sub-layer output)).")
SHARED = "is the same module as"  # said by checkers.seq2seq._weights for one module in two roles
DROPOUT_ON_RESIDUAL = Diagnosis(
    "dropout-on-residual",
    "dropout acts on the residual path too: with every sub-layer's output zero, dropout in train "
    "mode still changes the output; apply it to each sub-layer's output only, "
    "norm1(x + dropout(attended)).")
NO_SUBLAYER_DROPOUT = Diagnosis(
    "no-sublayer-dropout",
    "the output of {name} gets no dropout: with dropout=0.5 in train mode and the other sub-layers' "
    "outputs set to zero, two forward passes give the same output; apply self.dropout to it before "
    "the residual sum, {formula}.")
SUBLAYER_FORMULAS = {"self_attention": "x = norm1(x + dropout(self_attention(x, mask=self_mask)))",
                     "cross_attention": "x = norm2(x + dropout(cross_attention(x, context=memory, mask=memory_mask)))",
                     "feedforward": "x = norm3(x + dropout(feedforward(x)))"}
# Sub-layers given the wrong inputs (found by a probe whose memory is as long as x, where nothing crashes).
CROSS_QUERIES_FROM_MEMORY = Diagnosis(
    "cross-queries-from-memory",
    "cross_attention gets the memory as its queries: cross-attention takes its queries from x "
    "and its keys and values from the memory, cross_attention(x, context=memory, "
    "mask=memory_mask).")
CROSS_QUERIES_FROM_INPUT = Diagnosis(
    "cross-queries-from-input",
    "cross_attention gets the block's input x as its queries, not the output of the "
    "self-attention sub-layer: first x = norm1(x + dropout(attended)), then "
    "cross_attention(x, context=memory, mask=memory_mask) on that x.")
WEIGHTS_SWAPPED = Diagnosis(
    "weights-swapped",
    "with return_attention=True it returns the cross-attention weights second and the self-attention "
    "weights third: return (x, self-attention weights, cross-attention weights).")
CROSS_NO_CONTEXT = Diagnosis(
    "cross-no-context",
    "cross_attention gets no context, so it attends over x itself: pass the memory as its context, "
    "cross_attention(x, context=memory, mask=memory_mask).")
CROSS_CONTEXT_NOT_MEMORY = Diagnosis(
    "cross-context-not-memory",
    "cross_attention's context is not the memory: its keys and values come from the memory, "
    "cross_attention(x, context=memory, mask=memory_mask).")
CROSS_GETS_SELF_MASK = Diagnosis(
    "cross-gets-self-mask",
    "cross_attention gets self_mask: the cross-attention's mask is memory_mask (the real source "
    "positions), cross_attention(x, context=memory, mask=memory_mask).")
SELF_GETS_MEMORY_MASK = Diagnosis(
    "self-gets-memory-mask",
    "self_attention gets memory_mask: the self-attention's mask is self_mask (the causal mask "
    "over the target), self_attention(x, mask=self_mask).")
SUBLAYER_OUTPUTS = ("self_attention.o_proj.weight", "self_attention.o_proj.bias", "cross_attention.o_proj.weight",
                    "cross_attention.o_proj.bias", "feedforward.out.weight", "feedforward.out.bias")


def _forward(task, block, x, memory, **kwargs):
    befores = (x.clone(), memory.clone())
    result = task.call("DecoderBlock.forward", block, x, memory, **kwargs)
    if not (torch.equal(befores[0], x) and torch.equal(befores[1], memory)):
        task.fail("DecoderBlock.forward modified `x` or `memory` in place (e.g. `x += ...`); build a new tensor "
                  "instead.")
    if result is None:
        task.fail("DecoderBlock.forward returned None: is a `return` statement missing?")
    return result


def _outputs(task, block, fixture, x=None, masked=True, what=WHAT):
    x = fixture["x"] if x is None else x
    masks = {key: fixture[key] for key in ("self_mask", "memory_mask")} if masked else {}
    return expect_output(task, what, _forward(task, block, x, fixture["memory"], **masks), x.shape, x.dtype)


def _loaded(task, cls, fixture, activation="ReLU", dropout=0.0, dtype=torch.float64):
    sizes = fixture["embed_dim"], fixture["num_heads"], fixture["feedforward_dim"]
    block = build(task, cls, "DecoderBlock", *sizes, activation=getattr(nn, activation), dropout=dropout,
                  dtype=dtype, native=dtype != torch.float64)
    return load(task, block, decoder_block_slots, fixture["cases"][activation]["weights"], "DecoderBlock").eval()


def _expect_values(task, cls, block, fixture, activation):
    case, what = fixture["cases"][activation], f"DecoderBlock (activation=nn.{activation}) with both masks"
    try:
        outputs = _outputs(task, block, fixture, what=what)
    except NotImplementedYet:
        raise
    except CheckFailure:  # e.g. a size mismatch from a swapped mask or context: say which sub-layer got it
        _explain_wiring(task, block, fixture, what)
        raise
    if not matches(outputs, case["outputs"], ATOL, RTOL):
        expect_finite(task, what, outputs)
        diagnose(task, f"{what}: output", outputs, signatures(case, "outputs"), ATOL, RTOL)
        explain_parts(task, what, [("its self_attention module", 3, part_class(block, "self_attention")),
                                   ("its norm1 module", 1, part_class(block, "norm1"))], __package__)
        _explain_wiring(task, block, fixture, what)
        _explain_masks(task, block, fixture, what)
        _explain_residuals(task, block, fixture, what)
        sizes = fixture["embed_dim"], fixture["num_heads"], fixture["feedforward_dim"]
        explain_activation(task, what, lambda act: _Masked(build(task, cls, "DecoderBlock", *sizes, activation=act)
                                                           .eval(), fixture), fixture["x"], fixture["feedforward_dim"])
        _explain_norm_order(task, block, fixture, what)
    expect_close(task, f"{what}: output", outputs, case["outputs"], ATOL, RTOL)
    x = fixture["x"]
    result = _forward(task, block, x, fixture["memory"], self_mask=fixture["self_mask"],
                      memory_mask=fixture["memory_mask"], return_attention=True)
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        task.fail(f"{what} with return_attention=True should return (x, self-attention weights, cross-attention "
                  "weights).")
    _explain_weights_order(task, what, result, case)
    for got, key in zip(result, ("outputs", "self_attention", "cross_attention")):
        expect_tensor(task, f"{what}: returned {key.replace('_', '-')}", got, case[key].shape, x.dtype)
        expect_close(task, f"{what}: returned {key.replace('_', '-')}", got, case[key], ATOL, RTOL)
    unmasked = _outputs(task, block, fixture, masked=False, what=f"DecoderBlock (activation=nn.{activation})")
    expect_close(task, f"DecoderBlock (activation=nn.{activation}) without masks: output", unmasked,
                 case["unmasked"]["outputs"], ATOL, RTOL, signatures(case["unmasked"], "outputs"))


def _explain_weights_order(task, what, result, case):
    """Name the two attention maps returned in each other's place (by shape, or by values where shapes agree)."""
    maps = result[1:]
    if not all(isinstance(got, torch.Tensor) for got in maps):
        return
    swapped = zip(maps, (case["cross_attention"], case["self_attention"]))
    same_values = all(got.shape == want.shape and matches(got.detach().to(want.dtype), want, ATOL, RTOL)
                      for got, want in swapped)
    same_shapes = maps[0].shape == case["cross_attention"].shape != case["self_attention"].shape and \
        maps[1].shape == case["self_attention"].shape
    if same_values or same_shapes:
        task.fail(f"{what}: {WEIGHTS_SWAPPED}", WEIGHTS_SWAPPED.slug)


class _Masked(nn.Module):
    """A block called with the fixture's memory and masks, for probes that call block(x)."""

    def __init__(self, block, fixture):
        super().__init__()
        self.block, self.fixture = block, fixture

    def forward(self, x):
        return self.block(x, self.fixture["memory"], self_mask=self.fixture["self_mask"],
                          memory_mask=self.fixture["memory_mask"])


def _probe(block, x, memory, fixture):
    try:
        return block(x, memory, self_mask=fixture["self_mask"], memory_mask=fixture["memory_mask"]).detach()
    except Exception:  # noqa: BLE001 -- only a probe
        return None


def _masks_given(block, fixture):
    """{"self_attention": bool, "cross_attention": bool}: whether each attention got a mask in one forward."""
    given, hooks = {}, []
    for name in ("self_attention", "cross_attention"):
        part = getattr(block, name, None)
        if isinstance(part, nn.Module):
            def record(module, args, kwargs, name=name):
                given[name] = given.get(name, False) or kwargs.get("mask") is not None or (
                    len(args) > 2 and args[2] is not None)
            hooks.append(part.register_forward_pre_hook(record, with_kwargs=True))
    try:
        _probe(block, fixture["x"], fixture["memory"], fixture)
    finally:
        for hook in hooks:
            hook.remove()
    return given


def _same(value, tensor):
    """Whether value is the given tensor (or holds the same numbers in the same shape)."""
    return value is tensor or (isinstance(value, torch.Tensor) and value.shape == tensor.shape
                               and torch.equal(value, tensor))


def _explain_wiring(task, block, fixture, what):
    """Name a sub-layer given the wrong queries, context or mask: a probe with a memory as long as x (S = T), where
    swapped masks or contexts run without a size mismatch, records what each attention receives."""
    x, length = fixture["x"], fixture["x"].size(1)
    memory, self_mask = fixture["memory"][:, :length], fixture["self_mask"]
    memory_mask = fixture["memory_mask"][..., :length].clone()  # (B, 1, 1, T): a padded row and a full row
    received, hooks = {}, []
    for name in ("self_attention", "cross_attention"):
        part = getattr(block, name, None)
        if isinstance(part, nn.Module):
            def record(module, args, kwargs, name=name):
                values = list(args) + [None] * 3
                received.setdefault(name, (values[0] if args else kwargs.get("x"),
                                           values[1] if len(args) > 1 else kwargs.get("context"),
                                           values[2] if len(args) > 2 else kwargs.get("mask")))
            hooks.append(part.register_forward_pre_hook(record, with_kwargs=True))
    try:
        with torch.no_grad():
            block(x, memory, self_mask=self_mask, memory_mask=memory_mask)
    except Exception:  # noqa: BLE001 -- only a probe: what was received before a crash still counts
        pass
    finally:
        for hook in hooks:
            hook.remove()
    if "self_attention" in received and _same(received["self_attention"][2], memory_mask):
        task.fail(f"{what}: {SELF_GETS_MEMORY_MASK}", SELF_GETS_MEMORY_MASK.slug)
    if "cross_attention" in received:
        queries, context, mask = received["cross_attention"]
        if _same(queries, memory):
            task.fail(f"{what}: {CROSS_QUERIES_FROM_MEMORY}", CROSS_QUERIES_FROM_MEMORY.slug)
        if _same(queries, x):
            task.fail(f"{what}: {CROSS_QUERIES_FROM_INPUT}", CROSS_QUERIES_FROM_INPUT.slug)
        if context is None:
            task.fail(f"{what}: {CROSS_NO_CONTEXT}", CROSS_NO_CONTEXT.slug)
        if not _same(context, memory):
            task.fail(f"{what}: {CROSS_CONTEXT_NOT_MEMORY}", CROSS_CONTEXT_NOT_MEMORY.slug)
        if _same(mask, self_mask):
            task.fail(f"{what}: {CROSS_GETS_SELF_MASK}", CROSS_GETS_SELF_MASK.slug)


NORM_AFTER = {"norm1": "self_attention", "norm2": "cross_attention", "norm3": "feedforward"}


def _explain_norm_order(task, block, fixture, what):
    """Name norms run after another sub-layer than their own, from the order the block calls its parts in."""
    order = call_order(block, lambda: _probe(block, fixture["x"], fixture["memory"], fixture))
    steps = [name for name in order if name in NORM_AFTER or name in NORM_AFTER.values()]
    if sorted(steps) != sorted([*NORM_AFTER, *NORM_AFTER.values()]) or steps[0] in NORM_AFTER:
        return  # a part called twice, missing, or a norm first (pre-norm): said elsewhere
    follows = {norm: steps[steps.index(norm) - 1] for norm in NORM_AFTER}
    wrong = [f"{norm} follows {after}" for norm, after in follows.items() if after != NORM_AFTER[norm]]
    if wrong and all(after in NORM_AFTER.values() for after in follows.values()):
        task.fail(f"{what}: {' and '.join(wrong)}: each sub-layer's residual sum goes through its own norm, norm1 "
                  "after self-attention, norm2 after cross-attention, norm3 after the feed-forward network.")


def _explain_masks(task, block, fixture, what):
    """Causality and the memory's padding, measured: a later target token or a padded memory row changes nothing."""
    x, memory = fixture["x"], fixture["memory"]
    outputs, given = _probe(block, x, memory, fixture), _masks_given(block, fixture)
    later = x.clone()
    later[:, -1] += 1.0
    moved = _probe(block, later, memory, fixture)
    if outputs is not None and moved is not None and not torch.allclose(outputs[:, :-1], moved[:, :-1], atol=1e-9):
        cause = SELF_MASK_IGNORED if given.get("self_attention") is False else (
            "no position may read a later one: self_mask goes to self-attention, and cross-attention takes its "
            "queries from x and its keys and values from the memory only.")
        task.fail(f"{what}: changing the last target position changed the outputs of earlier positions: {cause}",
                  slug_of(cause))
    padded = ~fixture["memory_mask"].view(memory.size(0), 1, memory.size(1)).transpose(1, 2)  # (B, S, 1)
    moved = _probe(block, x, memory + (~padded) * torch.linspace(-1, 1, memory.size(-1), dtype=memory.dtype), fixture)
    if outputs is not None and moved is not None and torch.allclose(outputs, moved, atol=1e-9):
        task.fail(f"{what}: the output does not depend on the memory: cross_attention(x, context=memory, "
                  "mask=memory_mask) must run between self-attention and the feed-forward network.")
    moved = _probe(block, x, memory + padded * 3.0, fixture)
    if outputs is not None and moved is not None and not torch.allclose(outputs, moved, atol=1e-9):
        cause = MEMORY_MASK_IGNORED if given.get("cross_attention") is False else (
            "the memory's padded positions must not count: memory_mask goes to cross-attention, whose keys and "
            "values come from the memory.")
        task.fail(f"{what}: changing the memory at padded source positions changed the output: {cause}",
                  slug_of(cause))


def _explain_residuals(task, block, fixture, what):
    """With one sub-layer's output set to zero, the output must still depend on x through the residual path."""
    slots, x, memory = decoder_block_slots(block), fixture["x"], fixture["memory"]
    for name in ("self_attention", "cross_attention", "feedforward"):
        roles = [f"{name}.o_proj.weight", f"{name}.o_proj.bias"] if name != "feedforward" else \
            ["feedforward.out.weight", "feedforward.out.bias"]
        saved = [slots[role].detach().clone() for role in roles]
        try:
            with torch.no_grad():
                for role in roles:
                    slots[role].zero_()
            first = _probe(block, x, memory, fixture)
            second = _probe(block, x + torch.linspace(-1, 1, x.numel(), dtype=x.dtype).view_as(x), memory, fixture)
        finally:
            with torch.no_grad():
                for role, value in zip(roles, saved):
                    slots[role].copy_(value)
        if first is not None and second is not None and torch.allclose(first, second, atol=1e-9):
            task.fail(f"{what}: with the output of {name} set to zero, the block's output no longer depends on x: "
                      + RESIDUAL_MISSING.format(name=name))


def _expect_dropout(task, cls, fixture):
    block = _loaded(task, cls, fixture, dropout=0.0).train()
    if not torch.equal(_outputs(task, block, fixture), _outputs(task, block, fixture)):
        task.fail("DecoderBlock(dropout=0.0) in train mode gave two different outputs for one input: something drops "
                  "values although dropout=0.0; create the dropout from the argument, nn.Dropout(dropout).")
    block = _loaded(task, cls, fixture, dropout=0.5)
    first = _outputs(task, block, fixture)
    if not torch.equal(first, _outputs(task, block, fixture)):
        task.fail(f"DecoderBlock(dropout=0.5) gave two different outputs for one input in eval mode: {DROPOUT_IN_EVAL}",
                  DROPOUT_IN_EVAL.slug)
    expect_close(task, "DecoderBlock(dropout=0.5) in eval mode (dropout must be off)", first,
                 fixture["cases"]["ReLU"]["outputs"], ATOL, RTOL)
    block.train()
    torch.manual_seed(0)
    if torch.allclose(_outputs(task, block, fixture), _outputs(task, block, fixture)):
        task.fail("with dropout=0.5 in train mode two forward passes gave the same output: is `dropout` used "
                  "(and created as nn.Dropout(dropout))?")
    slots = decoder_block_slots(block)
    with torch.no_grad():
        for role in SUBLAYER_OUTPUTS:
            slots[role].zero_()
    torch.manual_seed(1)
    if not torch.allclose(_outputs(task, block, fixture), _outputs(task, block, fixture), atol=ATOL):
        task.fail(f"DecoderBlock(dropout=0.5): {DROPOUT_ON_RESIDUAL}", DROPOUT_ON_RESIDUAL.slug)
    for name in SUBLAYER_FORMULAS:  # each sub-layer alone: its output must vary (dropout inside it counts too)
        block = _loaded(task, cls, fixture, dropout=0.5).train()
        slots = decoder_block_slots(block)
        with torch.no_grad():
            for role in SUBLAYER_OUTPUTS:
                if not role.startswith(f"{name}."):
                    slots[role].zero_()
        torch.manual_seed(2)
        if torch.allclose(_outputs(task, block, fixture), _outputs(task, block, fixture), atol=ATOL):
            task.fail("DecoderBlock(dropout=0.5): "
                      + NO_SUBLAYER_DROPOUT.format(name=name, formula=SUBLAYER_FORMULAS[name]),
                      NO_SUBLAYER_DROPOUT.slug)


@check_function(4)
def check_task_4(task, DecoderBlock):
    """Check DecoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout) against fixed weights."""
    expect_module_class(task, DecoderBlock, "DecoderBlock")
    fixture = load_fixture(__package__, 4)
    for activation in ("ReLU", "GELU"):
        block = _loaded(task, DecoderBlock, fixture, activation)
        _expect_values(task, DecoderBlock, block, fixture, activation)
    _expect_dropout(task, DecoderBlock, fixture)
    inputs = fixture["x"].clone().requires_grad_(True)
    outputs = _outputs(task, block, fixture, x=inputs)
    expect_gradients_everywhere(task, block, outputs.pow(2).sum(), inputs, "DecoderBlock")
    single = _loaded(task, DecoderBlock, fixture, dtype=torch.float32)
    floats = dict(fixture, x=fixture["x"].float(), memory=fixture["memory"].float())
    expect_native_output(task, single, "DecoderBlock", "DecoderBlock on float32 input",
                         lambda: _forward(task, single, floats["x"], floats["memory"], self_mask=fixture["self_mask"],
                                          memory_mask=fixture["memory_mask"]), fixture["cases"]["ReLU"]["outputs"])
    task.passed("self-attention with self_mask, cross-attention to the memory with memory_mask, feed-forward, "
                "post-norm with three LayerNorms, dropout, gradients and dtypes are right.")
