"""Probes of a VisionTransformer whose output is wrong (Task 3): what its forward does with its own blocks' states.

Hooks record each block's input and output and each block's attention weights during one forward; the readout
probe recomputes candidate logits from the student's own last block output with the student's own final_norm and
head, so it names what the model classifies whatever its blocks compute.
"""
import torch

from .._compare import matches
from .._core import Diagnosis, slug_of

ATOL, RTOL = 1e-6, 1e-6
# Sentences the known mistakes' diagnoses quote (course/vit/mistakes.py).
MEAN_PATCHES = Diagnosis(
    "mean-patches",
    "it classifies the mean of the patch tokens; the head reads the [CLS] token only, "
    "head(final_norm(x[:, 0])).")
MEAN_TOKENS = Diagnosis(
    "mean-tokens",
    "it classifies the mean of all tokens; the head reads the [CLS] token only, head(final_norm(x[:, 0])).")
LAST_TOKEN = Diagnosis(
    "last-token",
    "it classifies the last token; the [CLS] token is the first one, position 0: "
    "head(final_norm(x[:, 0])).")
NO_FINAL_NORM = Diagnosis(
    "no-final-norm",
    "the [CLS] state does not go through final_norm: apply it after the last block, "
    "head(final_norm(x[:, 0])).")
FINAL_NORM_FIRST = Diagnosis(
    "final-norm-first",
    "final_norm is applied to the embedded tokens before the blocks; it belongs after the last "
    "block, head(final_norm(x[:, 0])).")
POST_NORM = Diagnosis(
    "post-norm",
    "that is a post-norm block (its output rows have mean 0 and variance 1 when norm2 has weight 1 and "
    "bias 0): use the provided PreNormBlock unchanged, x + attention(norm1(x)) then "
    "x + feedforward(norm2(x)).")
PROBABILITIES = Diagnosis(
    "probabilities",
    "it returns probabilities, softmax(logits): return the logits themselves, head(final_norm(x[:, 0])); "
    "cross_entropy applies the softmax itself.")
LOG_PROBABILITIES = Diagnosis(
    "log-probabilities",
    "it returns log-probabilities, log_softmax(logits): return the logits themselves, "
    "head(final_norm(x[:, 0])).")
RESIDUAL_TWICE = Diagnosis(
    "residual-twice",
    "blocks[{index}] receives x + blocks[{previous}](x), the residual added a second time: the block "
    "adds its own residual connections, so write x = block(x).")
NOT_CHAINED = Diagnosis(
    "not-chained",
    "blocks[{index}] receives the same input as blocks[{previous}], not its output: pass each block's "
    "output on to the next, x = block(x).")
NOT_PRE_NORM = Diagnosis(
    "not-pre-norm",
    "blocks[{index}] does not compute the provided PreNormBlock: build every block with "
    "PreNormBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout), unchanged.")


def _first(value):
    return (value[0] if isinstance(value, (tuple, list)) and value else value).detach()


def recorded(model, images):
    """{"inputs", "outputs", "attention"}: per block call, in call order, during model(images) (errors ignored)."""
    record = {"inputs": [], "outputs": [], "attention": [], "order": []}
    hooks = []
    for index, block in enumerate(model.blocks):
        def on_block(module, args, output, index=index):
            record["order"].append(index)
            record["inputs"].append(args[0].detach() if args else None)
            record["outputs"].append(_first(output))
        hooks.append(block.register_forward_hook(on_block))
        attention = getattr(block, "attention", None)
        if isinstance(attention, torch.nn.Module):
            hooks.append(attention.register_forward_hook(
                lambda module, args, output: record["attention"].append(
                    output[1].detach() if isinstance(output, (tuple, list)) and len(output) == 2 else None)))
    try:
        with torch.no_grad():
            model(images)
    except Exception:  # noqa: BLE001 -- only a probe
        pass
    finally:
        for hook in hooks:
            hook.remove()
    return record


def explain_flow(task, what, model, record, hidden):
    """Fail when forward does not run every block once, in order, on the embedded tokens and each other's outputs.

    No recorded call at all says nothing: block.forward(x) called directly runs no hooks.
    """
    blocks = len(model.blocks)
    if not record["order"]:
        return
    if record["order"] != list(range(blocks)):
        task.fail(f"{what}: forward should run each of the {blocks} blocks of self.blocks once, in order; it ran "
                  f"blocks {record['order']}.")
    first = record["inputs"][0]
    if first is None or not matches(first, hidden[0], ATOL, RTOL):
        normalised = _call(model.final_norm, hidden[0])
        if first is not None and normalised is not None and matches(first, normalised, ATOL, RTOL):
            task.fail(f"{what}: {FINAL_NORM_FIRST}", FINAL_NORM_FIRST.slug)
        task.fail(f"{what}: the first block should receive patch_embedding(images), (B, N + 1, D), but receives "
                  "something else.")
    for index in range(1, blocks):
        _explain_link(task, what, record, index)


def _explain_link(task, what, record, index):
    """Fail when blocks[index] does not receive the output of blocks[index - 1], naming what it receives instead."""
    received, before, after = record["inputs"][index], record["inputs"][index - 1], record["outputs"][index - 1]
    if received is None or before is None or matches(received, after, ATOL, RTOL):
        return
    if received.shape == after.shape == before.shape and matches(received, before + after, ATOL, RTOL):
        task.fail(f"{what}: {RESIDUAL_TWICE.format(index=index, previous=index - 1)}", RESIDUAL_TWICE.slug)
    if matches(received, before, ATOL, RTOL):
        task.fail(f"{what}: {NOT_CHAINED.format(index=index, previous=index - 1)}", NOT_CHAINED.slug)
    task.fail(f"{what}: blocks[{index}] receives something other than the output of blocks[{index - 1}]: pass each "
              "block's output on to the next, x = block(x).")


def _call(fn, *args):
    try:
        with torch.no_grad():
            return _first(fn(*args))
    except Exception:  # noqa: BLE001 -- only a probe
        return None


def explain_readout(task, what, model, logits, record):
    """Fail naming what the logits are made of when they are a known wrong readout of the last block's output."""
    if not record["outputs"]:
        return
    last = record["outputs"][-1]  # (B, N + 1, D)
    norm, head = model.final_norm, model.head
    candidates = {MEAN_PATCHES: lambda: head(norm(last[:, 1:].mean(dim=1))),
                  MEAN_TOKENS: lambda: head(norm(last.mean(dim=1))),
                  LAST_TOKEN: lambda: head(norm(last[:, -1])),
                  NO_FINAL_NORM: lambda: head(last[:, 0])}
    # the same mistakes with final_norm applied to every token first: norm and mean commute only for a token alone
    normed = [(MEAN_PATCHES, lambda: head(norm(last)[:, 1:].mean(dim=1))),
              (MEAN_TOKENS, lambda: head(norm(last).mean(dim=1)))]
    right = _call(lambda: head(norm(last[:, 0])))
    scored = [(PROBABILITIES, lambda: right.softmax(dim=-1)), (LOG_PROBABILITIES, lambda: right.log_softmax(dim=-1))]
    for diagnosis, candidate in [*candidates.items(), *normed, *scored]:
        value = _call(candidate)
        if value is not None and matches(logits, value, ATOL, RTOL):
            task.fail(f"{what} logits are wrong: {diagnosis}", slug_of(diagnosis))
    if right is not None and not matches(logits, right, ATOL, RTOL):
        task.fail(f"{what} logits are not head(final_norm(x[:, 0])) of the last block's output x: return the [CLS] "
                  "token's final state passed through final_norm and then head, as it is.")


def _standardised(rows):
    mean, variance = rows.mean(-1), rows.var(-1, unbiased=False)
    return torch.allclose(mean, torch.zeros_like(mean), atol=1e-6) \
        and torch.allclose(variance, torch.ones_like(variance), atol=1e-3)


def explain_block(task, what, block, x, index):
    """Fail naming a post-norm block (its output standardised with norm2's weight 1, bias 0), else not pre-norm."""
    norm = getattr(block, "norm2", None)
    if isinstance(norm, torch.nn.LayerNorm) and norm.weight is not None and norm.bias is not None:
        saved = norm.weight.detach().clone(), norm.bias.detach().clone()
        try:
            with torch.no_grad():
                norm.weight.fill_(1.0)
                norm.bias.fill_(0.0)
            out = _call(block, x)
        finally:
            with torch.no_grad():
                norm.weight.copy_(saved[0])
                norm.bias.copy_(saved[1])
        if out is not None and out.shape == x.shape and _standardised(out):
            task.fail(f"{what}: {POST_NORM}", POST_NORM.slug)
    task.fail(f"{what}: {NOT_PRE_NORM.format(index=index)}", NOT_PRE_NORM.slug)
