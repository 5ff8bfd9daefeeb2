"""Task 5: the GPT model: token embedding, blocks, final norm, a head tied to the embedding, the cache per block."""
import torch
import torch.nn as nn

from .._compare import diagnose, expect_close, expect_finite, expect_pair, expect_tensor, matches, signatures
from .._core import Diagnosis, check_function, expect_module_class, load_fixture
from .._dependencies import explain_parts
from .._modules import build, load
from .._probes import normalised_axis
from .._weights import MissingPart
from ._cache_branch import call_with_cache
from ._probes_generic import call_inputs
from ._roles import gpt_blocks, gpt_slots, same_cache

ATOL, RTOL = 1e-6, 1e-6
NAME = "GPT"
# Sentences the known mistakes' diagnoses quote (course/gpt/mistakes.py).
NO_FINAL_NORM = Diagnosis(
    "no-final-norm",
    "the logits do not go through final_norm: apply it to the last block's output before the head, "
    "lm_head(final_norm(x)).")
SCALED = Diagnosis(
    "scaled",
    "the token embeddings are multiplied by √embed_dim; a GPT with a tied head uses them unscaled, "
    "x = token_embedding(tokens).")
UNTIED_COPY = Diagnosis(
    "untied-copy",
    "lm_head.weight is a separate Parameter (a copy of the embedding, or its own random values): tie them "
    "with `self.lm_head.weight = self.token_embedding.weight`, one Parameter used twice.")
UNTIED_DATA = Diagnosis(
    "untied-data",
    "lm_head.weight shares the embedding's storage (.data) but is a second Parameter with its own "
    "gradient, so the optimiser updates the two apart: tie them with "
    "`self.lm_head.weight = self.token_embedding.weight`.")
POSITION_TABLE = Diagnosis(
    "position-table",
    "`{name}` of shape {shape} looks like an absolute position table; RoPE inside the attention carries "
    "the positions, so the model adds no position embedding: remove it.")
MAX_LEN = Diagnosis(
    "max-len",
    "GPT.max_len should store the max_len argument ({max_len} here), found {found}; generate reads it.")
BLOCK_CACHE = Diagnosis(
    "block-cache",
    "block {index} is not given its own entry of the cache: pass cache[{index}] to blocks[{index}] "
    "(None when cache is None) and collect each block's new cache into the returned list.")


RETURNS_GIVEN_CACHE = Diagnosis(
    "returns-given-cache",
    "with a cache it returns the cache it was given: return the list of the new caches the blocks "
    "give back, each holding all L_past + L positions.")


def _structure(task, model, config):
    """max_len, the embedding, the blocks, the final norm, a bias-free head tied by identity, no position table."""
    if getattr(model, "max_len", None) != config["max_len"]:
        found = repr(model.max_len) if hasattr(model, "max_len") else "nothing"
        task.fail(MAX_LEN.format(max_len=config["max_len"], found=found))
    sizes = (config["vocab_size"], config["embed_dim"])
    embedding, head = getattr(model, "token_embedding", None), getattr(model, "lm_head", None)
    if not isinstance(embedding, nn.Embedding) or (embedding.num_embeddings, embedding.embedding_dim) != sizes:
        task.fail(f"{NAME}.token_embedding should be nn.Embedding(vocab_size, embed_dim) = nn.Embedding{sizes}.")
    if not isinstance(head, nn.Linear) or (head.in_features, head.out_features) != sizes[::-1]:
        task.fail(f"{NAME}.lm_head should be nn.Linear(embed_dim, vocab_size, bias=False) = nn.Linear{sizes[::-1]}.")
    if head.bias is not None:
        task.fail(f"{NAME}.lm_head has a bias; create it with bias=False (the tied head is the embedding matrix "
                  "alone).")
    if head.weight is not embedding.weight:
        task.fail(UNTIED_DATA if head.weight.data_ptr() == embedding.weight.data_ptr() else UNTIED_COPY)
    blocks = getattr(model, "blocks", None)
    if not isinstance(blocks, (nn.ModuleList, nn.Sequential)) or len(blocks) != config["num_layers"]:
        task.fail(f"{NAME}.blocks should be an nn.ModuleList of num_layers = {config['num_layers']} GPTBlocks.")
    shared = len(blocks) - len({id(block) for block in blocks})
    if shared:
        task.fail(f"{NAME}.blocks holds one GPTBlock object more than once ({len(blocks)} entries, "
                  f"{len(blocks) - shared} distinct), so those layers share their weights ([block] * num_layers "
                  "repeats one object): build a new block per layer, nn.ModuleList([GPTBlock(...) for _ in "
                  "range(num_layers)]).")
    _no_position_table(task, model, config)
    try:
        gpt_slots(model)
    except MissingPart as missing:
        task.fail(f"{NAME}: {missing}.", missing.diagnosis)


def _no_position_table(task, model, config):
    tables = {(config["max_len"], config["embed_dim"]), (1, config["max_len"], config["embed_dim"])}
    for name, value in list(model.named_parameters()) + list(model.named_buffers()):
        if tuple(value.shape) in tables and not name.startswith("blocks."):  # RoPE's tables live in the blocks
            task.fail(POSITION_TABLE.format(name=name, shape=tuple(value.shape)))


def _run(task, model, tokens, cache=None, what=NAME):
    """(logits (B, L, V), new_cache) of model(tokens, cache), with the cache a list of one entry per block."""
    result = task.call(f"{NAME}.forward", model, tokens) if cache is None else \
        call_with_cache(task, f"{NAME}.forward", model, _first_attention(model), cache, cache[0], tokens)
    logits, new_cache = expect_pair(task, what, result, "(logits, new_cache)")
    if isinstance(logits, torch.Tensor) and tuple(logits.shape) == (tokens.size(0), model.lm_head.out_features) \
            and tokens.size(1) > 1:
        task.fail(f"{what}: logits has shape {tuple(logits.shape)}, (B, V), one position's: return the logits of "
                  f"every position, (B, L, V) = {(*tokens.shape, model.lm_head.out_features)}, lm_head applied to the "
                  "whole (B, L, D).")
    expect_tensor(task, f"{what}: logits", logits, (*tokens.shape, model.lm_head.out_features))
    blocks = len(gpt_blocks(model))
    if not isinstance(new_cache, (list, tuple)) or len(new_cache) != blocks:
        size = f" of length {len(new_cache)}" if isinstance(new_cache, (list, tuple)) else ""
        task.fail(f"{what}: new_cache should be a list with one (keys, values) per block ({blocks}), got "
                  f"{type(new_cache).__name__}{size}.")
    return logits, new_cache


def _first_attention(model):
    """The first block's attention module, or None."""
    try:
        return getattr(gpt_blocks(model)[0], "attention", None)
    except Exception:  # noqa: BLE001 -- only a probe
        return None


def _explain(task, model, what, got, fixture, key):
    """Fail naming a block that fails Task 4, or a known mistake."""
    expect_finite(task, what, got)
    blocks = gpt_blocks(model)
    block_class = type(blocks[0]) if blocks and not type(blocks[0]).__module__.startswith("torch") else None
    explain_parts(task, what, [("its GPTBlock class", 4, block_class)], __package__)
    diagnose(task, what, got, signatures(fixture, key), ATOL, RTOL)
    _explain_final_norm(task, model, fixture["tokens"], what)
    _explain_probabilities(task, got, what)
    _explain_final_norm_calls(task, model, fixture["tokens"], what)


def _explain_probabilities(task, got, what):
    """Logits that are probabilities (each row >= 0, summing to 1 over the vocabulary): a softmax too many."""
    if (got >= 0).all() and normalised_axis(got) == got.dim() - 1:
        task.fail(f"{what}: every row is >= 0 and sums to 1 over the vocabulary: forward returns probabilities; "
                  "return the logits, lm_head(final_norm(x)), without a softmax (the loss takes logits).")


def _explain_final_norm_calls(task, model, tokens, what):
    """final_norm applied more than once per forward (between blocks, or to the embeddings)."""
    inputs = call_inputs(model, "final_norm", lambda: model(tokens))
    if not inputs or len(inputs) == 1:
        return
    try:
        with torch.no_grad():
            embedded = model.token_embedding(tokens)
    except Exception:  # noqa: BLE001 -- only a probe
        embedded = None
    first = " (the first time on the token embeddings)" if embedded is not None and inputs[0] is not None and \
        inputs[0].shape == embedded.shape and torch.allclose(inputs[0], embedded) else ""
    task.fail(f"{what}: final_norm runs {len(inputs)} times in one forward{first}: apply it once, to the last "
              "block's output, just before lm_head.")


def _explain_final_norm(task, model, tokens, what):
    """Fail when changing final_norm's weight and bias leaves the logits alone: the norm is not applied."""
    norm = getattr(model, "final_norm", None)
    if not isinstance(norm, nn.LayerNorm) or norm.weight is None or norm.bias is None:
        return
    saved = norm.weight.detach().clone(), norm.bias.detach().clone()
    try:
        with torch.no_grad():
            first = model(tokens)[0]
            norm.weight.mul_(2).add_(0.5)
            norm.bias.add_(0.5)
            second = model(tokens)[0]
    except Exception:  # noqa: BLE001 -- only a probe
        return
    finally:
        with torch.no_grad():
            norm.weight.copy_(saved[0])
            norm.bias.copy_(saved[1])
    if torch.allclose(first, second, atol=1e-12):
        task.fail(f"{what}: {NO_FINAL_NORM}", NO_FINAL_NORM.slug)


def _expect_logits(task, model, fixture):
    """The logits of the whole batch against the fixture."""
    logits, _ = _run(task, model, fixture["tokens"])
    what = f"{NAME}(tokens)"
    if not matches(logits, fixture["logits"], ATOL, RTOL):
        _explain(task, model, f"{what}: logits", logits, fixture, "logits")
    expect_close(task, f"{what}: logits", logits, fixture["logits"], ATOL, RTOL)


def _expect_cache(task, model, fixture):
    """The last positions run on the cache of the first ones give the full run's logits; block i gets cache[i]."""
    tokens, prefix = fixture["tokens"], fixture["prefix"]
    what = f"{NAME}(tokens[:, {prefix}:], cache) with the cache of tokens[:, :{prefix}]"
    _, cache = _run(task, model, tokens[:, :prefix], what=f"{NAME}(tokens[:, :{prefix}])")
    received, hooks = {}, []
    for index, block in enumerate(gpt_blocks(model)):
        def record(module, args, kwargs, index=index):
            received[index] = kwargs["cache"] if "cache" in kwargs else (args[1] if len(args) > 1 else None)
        hooks.append(block.register_forward_pre_hook(record, with_kwargs=True))
    try:
        continued, new_cache = _run(task, model, tokens[:, prefix:], cache=cache, what=what)
    finally:
        for hook in hooks:
            hook.remove()
    for index, entry in enumerate(cache):
        if not same_cache(received.get(index), entry):
            task.fail(f"{what}: {BLOCK_CACHE.format(index=index)}", BLOCK_CACHE.slug)
    if not matches(continued, fixture["continued"], ATOL, RTOL):
        _explain(task, model, f"{what}: logits", continued, fixture, "continued")
    expect_close(task, f"{what}: logits", continued, fixture["continued"], ATOL, RTOL)
    _expect_grown(task, new_cache, cache, tokens.size(1), what)


def _expect_grown(task, new_cache, cache, total, what):
    """Each block's new cache holds the keys of all L_past + L positions, not the cache it was given."""
    for index, (entry, given) in enumerate(zip(new_cache, cache)):
        keys = entry[0] if isinstance(entry, (tuple, list)) and len(entry) == 2 else None
        if isinstance(keys, torch.Tensor) and keys.dim() == 4 and keys.size(2) == total:
            continue
        if same_cache(entry, given):
            task.fail(f"{what}: {RETURNS_GIVEN_CACHE}", RETURNS_GIVEN_CACHE.slug)
        held = f"keys of shape {tuple(keys.shape)}" if isinstance(keys, torch.Tensor) else type(entry).__name__
        task.fail(f"{what}: new_cache[{index}] should be block {index}'s new (keys, values), each (B, H, {total}, "
                  f"head_dim) for all L_past + L = {total} positions, got {held}.")


def _expect_training_behaviour(task, cls, fixture):
    """Dropout passed on to the blocks, and a finite gradient for every parameter (the tied one included)."""
    model = build(task, cls, NAME, **dict(fixture["config"], dropout=0.5)).train()
    with torch.random.fork_rng(devices=[]):  # dropout draws from the global generator: leave the student's alone
        torch.manual_seed(0)
        first, second = (_run(task, model, fixture["tokens"])[0] for _ in range(2))
    if torch.equal(first, second):
        task.fail(f"{NAME}(dropout=0.5) in train mode gave the same logits twice: pass `dropout` on to every block.")
    model.zero_grad(set_to_none=True)
    task.call(f"backward through {NAME}", first.pow(2).sum().backward)
    for name, parameter in model.named_parameters():
        if parameter.requires_grad and (parameter.grad is None or not torch.isfinite(parameter.grad).all()):
            task.fail(f"no gradient reaches `{name}`: is it created but never used in forward, or used through "
                      ".data / .detach()?")

TANH_GELU = Diagnosis(
    "gelu-tanh-approximation",
    "its blocks use GELU's tanh approximation; GPT builds GPTBlock with its default activation, "
    "nn.GELU() (exact), as the grader's reference does: leave `activation` at its default.")


def _exact_gelu(task, model):
    """The pinned GPT builds its blocks with GPTBlock's default activation, nn.GELU() (exact): no tanh approximation."""
    if any(isinstance(module, nn.GELU) and module.approximate != "none" for module in model.modules()):
        task.fail(TANH_GELU)
    return model


@check_function(5)
def check_task_5(task, GPT):
    """Check GPT: structure and tied head, logits, the cache list, dropout and gradients."""
    expect_module_class(task, GPT, NAME)
    fixture = load_fixture(__package__, 5)
    model = build(task, GPT, NAME, **fixture["config"])
    _structure(task, model, fixture["config"])
    _exact_gelu(task, load(task, model, gpt_slots, fixture["weights"], NAME).eval())
    _expect_logits(task, model, fixture)
    _expect_cache(task, model, fixture)
    _expect_training_behaviour(task, GPT, fixture)
    task.passed("token embedding, blocks, final norm, a head tied to the embedding, no position table, the cache "
                "per block, dropout and gradients are right.")
