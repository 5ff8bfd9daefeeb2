"""Task 3: the VisionTransformer: patch embedding, the provided pre-norm blocks, a final norm, a head on [CLS]."""
import torch
import torch.nn as nn

from .._compare import diagnose, expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import (Diagnosis, CheckFailure, NotImplementedYet, check_function, expect_module_class, load_fixture,
                    slug_of)
from .._dependencies import attention_function, explain_parts, part_class
from .._modules import build, expect_gradients_everywhere, load
from .._weights import MissingPart
from ._build_probes import embedding_sizes, swapped_block_sizes
from ._roles import attribute_path, vit_blocks, vit_slots
from ._model_probes import explain_block, explain_flow, explain_readout, recorded
from . import _probes_model as probes

ATOL, RTOL = 1e-6, 1e-6
NAME = "VisionTransformer"
# Sentences the known mistakes' diagnoses quote (course/vit/mistakes.py).
SHARED_BLOCKS = Diagnosis(
    "shared-blocks",
    "every layer shares one block's weights: create a new PreNormBlock for every layer (in a loop or "
    "a list comprehension) rather than repeating one block, [block] * num_layers.")
HEAD_EVERY_TOKEN = Diagnosis(
    "head-every-token",
    "it returns logits for every token: apply the head to the [CLS] token only, "
    "head(final_norm(x[:, 0])) -> (B, num_classes).")
REVERSED = Diagnosis(
    "reversed",
    "forward_attention returns the maps last block first: append each block's map as it runs, first block first.")
ONLY_LAST = Diagnosis(
    "only-last",
    "forward_attention returns only the last block's map: return a list with one (B, H, N + 1, N + 1) map "
    "per block, first block first.")
HEADS_AVERAGED = Diagnosis(
    "heads-averaged",
    "forward_attention averages the heads, (B, N + 1, N + 1): return each block's weights as the block "
    "gives them, (B, H, N + 1, N + 1); attention_rollout averages the heads itself.")
DISAGREES = Diagnosis(
    "disagrees",
    "forward_attention does not run what forward runs: embed the images with patch_embedding, then pass "
    "each block's output on to the next block, block(x, return_attention=True), collecting the maps.")
DROPOUT_AT_EVAL = Diagnosis(
    "dropout-at-eval",
    "in eval mode with dropout=0.5 two calls give different logits: dropout is applied at eval; use "
    "nn.Dropout modules (or F.dropout(x, p, training=self.training)), which eval() switches off.")
DROPOUT_NOT_PASSED = Diagnosis(
    "dropout-not-passed",
    "VisionTransformer(dropout=0.5) in train mode gave the same logits twice: pass `dropout` on to "
    "every PreNormBlock.")


def _expect_blocks_listed(task, cls, model, config):
    """blocks is an nn.ModuleList (or nn.Sequential) of num_layers blocks; a failure says what a probe finds."""
    blocks, num_layers = getattr(model, "blocks", None), config["num_layers"]
    listed = probes.plain_list(blocks)
    if listed:
        task.fail(f"{NAME}.blocks {listed}")
    if not isinstance(blocks, (nn.ModuleList, nn.Sequential)):
        task.fail(f"{NAME}.blocks should be an nn.ModuleList of num_layers = {num_layers} PreNormBlocks.")
    if len(blocks) != num_layers:
        rule = probes.count_rule(lambda changed: cls(**changed), config, "num_layers",
                                 lambda built: len(getattr(built, "blocks", ())))
        task.fail(f"{NAME}.blocks holds {len(blocks)} blocks for num_layers = {num_layers}"
                  f"{f' ({rule})' if rule else ''}: build exactly num_layers PreNormBlocks, one per layer.")


def _structure(task, model, config, cls):
    """patch_embedding, num_layers distinct blocks, final_norm LayerNorm(D), head Linear(D, K), every role present."""
    embed_dim, num_classes = config["embed_dim"], config["num_classes"]
    if not isinstance(getattr(model, "patch_embedding", None), nn.Module):
        task.fail(f"{NAME}.patch_embedding should be a PatchEmbedding(image_size, patch_size, in_channels, "
                  "embed_dim).")
    _expect_blocks_listed(task, cls, model, config)
    listed = vit_blocks(model)
    for second, block in enumerate(listed):
        first = next(index for index, other in enumerate(listed) if other is block)
        if first != second:
            task.fail(f"blocks[{first}] and blocks[{second}] are the same module: {SHARED_BLOCKS}", SHARED_BLOCKS.slug)
    _expect_final_norm(task, model, embed_dim)
    head = getattr(model, "head", None)
    if not isinstance(head, nn.Linear) or (head.in_features, head.out_features) != (embed_dim, num_classes):
        task.fail(f"{NAME}.head should be nn.Linear(embed_dim, num_classes) = nn.Linear({embed_dim}, {num_classes}).")
    try:
        vit_slots(model)
    except MissingPart as missing:
        if "`patch_embedding." in str(missing):
            _blame_earlier_tasks(task, model, f"{NAME}.patch_embedding")
        hint = "; build every block with the provided PreNormBlock" if "`blocks." in str(missing) else ""
        task.fail(f"{NAME}: {missing}{hint}.", missing.diagnosis)


def _expect_final_norm(task, model, embed_dim):
    """final_norm is nn.LayerNorm(embed_dim); a failure says what was found (and a LayerNorm of another name)."""
    norm = getattr(model, "final_norm", None)
    if isinstance(norm, nn.LayerNorm) and tuple(norm.normalized_shape) == (embed_dim,):
        return
    if norm is None:
        others = [name for name, child in model.named_children() if isinstance(child, nn.LayerNorm)]
        found = f"nothing (a LayerNorm named `{others[0]}` is there: name it final_norm)" if others else "nothing"
    elif isinstance(norm, nn.LayerNorm):
        found = f"nn.LayerNorm({', '.join(str(size) for size in norm.normalized_shape)})"
    else:
        found = type(norm).__name__
    task.fail(f"{NAME}.final_norm should be nn.LayerNorm(embed_dim) = nn.LayerNorm({embed_dim}), found {found}.")


def _blame_earlier_tasks(task, model, what, patchify_first=False):
    """Fail naming the student's PatchEmbedding class (Task 2) or its patchify (Task 1) when that fails its check."""
    embedding_class = part_class(model, "patch_embedding")
    patchify = attention_function(embedding_class, "patchify") if embedding_class else None
    parts = [("its PatchEmbedding class", 2, embedding_class), ("its patchify", 1, patchify)]
    explain_parts(task, what, parts[::-1] if patchify_first else parts, __package__)


def _built(task, cls, config):
    """The student's VisionTransformer built with config; a failure names swapped block sizes when a probe shows it."""
    try:
        return build(task, cls, NAME, **config)
    except NotImplementedYet:
        raise
    except CheckFailure as failure:
        swapped = " raised " in str(failure) and swapped_block_sizes(lambda changed: cls(**changed), config)
        if swapped:
            task.fail(f"{str(failure).split(': ', 1)[1].rstrip('.')}; {swapped}", slug_of(swapped))
        raise


def _load(task, model, weights, config):
    """load() by role, a wrong shape named by the student's own attribute path (blocks[0].feedforward[0].weight)."""
    try:
        slots = vit_slots(model)
    except MissingPart:
        slots = {}  # load() names the missing part
    for role, value in weights.items():
        slot = slots.get(role)
        if slot is not None and tuple(slot.squeeze().shape) != tuple(value.squeeze().shape):
            if role.startswith("patch_embedding."):
                _blame_earlier_tasks(task, model, f"{NAME}.patch_embedding")
                sizes = embedding_sizes(model, config)
                if sizes:
                    task.fail(f"{NAME}.{sizes}")
            width = probes.feedforward_from(model, config) if role.startswith("blocks.") else None
            if width:
                task.fail(f"{NAME}: {width}")
            task.fail(f"{NAME}: `{attribute_path(model, slot, role)}` has shape {tuple(slot.shape)}, expected "
                      f"{tuple(value.shape)}.")
    return load(task, model, vit_slots, weights, NAME)


def _expect_embedding(task, model, fixture):
    """model.patch_embedding(images) against the fixture's tokens; a PatchEmbedding failing Task 2 is blamed."""
    what = f"{NAME}.patch_embedding(images)"
    try:
        tokens = task.call(what, model.patch_embedding, fixture["images"])
    except NotImplementedYet:  # a stub of Task 1 or 2 is that task's, not Task 3's
        _blame_earlier_tasks(task, model, what, patchify_first=True)
        raise
    expected = fixture["hidden"][0]
    if isinstance(tokens, torch.Tensor) and matches(tokens, expected, ATOL, RTOL):
        return
    embedding_class = part_class(model, "patch_embedding")
    explain_parts(task, what, [("its PatchEmbedding class", 2, embedding_class)], __package__)
    expect_tensor(task, what, tokens, expected.shape, expected.dtype)
    expect_finite(task, what, tokens)
    deviation = (tokens.detach() - expected).abs().max().item()
    task.fail(f"{what} differs from the expected tokens (largest deviation {deviation:.3g}) although the weights are "
              "loaded by role: check_task_2(PatchEmbedding) says what is wrong; fix Task 2 first.")


def _expect_blocks(task, model, fixture):
    """Each block maps the fixture's hidden state i to hidden state i + 1, as the provided PreNormBlock does."""
    hidden = fixture["hidden"]  # (L + 1, B, N + 1, D)
    for index, block in enumerate(vit_blocks(model)):
        what = f"{NAME}.blocks[{index}](x)"
        out = task.call(what, block, hidden[index])
        out = out[0] if isinstance(out, (tuple, list)) and out else out
        expect_tensor(task, what, out, hidden[index + 1].shape, hidden.dtype)
        if not matches(out, hidden[index + 1], ATOL, RTOL):
            explain_block(task, what, block, hidden[index], index)
        expect_close(task, what, out, hidden[index + 1], ATOL, RTOL)


def _expect_logits(task, model, fixture):
    """model(images) against the fixture's logits; on a difference, what the model does with its blocks' states."""
    images, expected = fixture["images"], fixture["logits"]
    what = f"{NAME}(images)"
    logits = task.call(what, model, images)
    if isinstance(logits, torch.Tensor) and logits.shape != expected.shape:
        outputs = recorded(model, images)["outputs"]
        read = outputs and probes.readout_of(model, outputs[-1], logits.detach())
        if read:
            task.fail(f"{what} has shape {tuple(logits.shape)}, expected {tuple(expected.shape)}: {read}.")
    if isinstance(logits, torch.Tensor) and logits.dim() == 3 and logits.shape[::2] == expected.shape and \
            logits.size(1) > 1:
        task.fail(f"{what} has shape {tuple(logits.shape)}: {HEAD_EVERY_TOKEN}", HEAD_EVERY_TOKEN.slug)
    expect_tensor(task, f"{what} logits", logits, expected.shape, expected.dtype)
    expect_finite(task, f"{what} logits", logits)
    if not matches(logits, expected, ATOL, RTOL):
        record = recorded(model, images)
        explain_flow(task, what, model, record, fixture["hidden"])
        explain_readout(task, what, model, logits, record)
        diagnose(task, f"{what} logits", logits, signatures(fixture, "logits"), ATOL, RTOL)
    expect_close(task, f"{what} logits", logits, expected, ATOL, RTOL)
    dropped = probes.batch_of_one(model, images, expected)
    if dropped:
        task.fail(f"{what}: {dropped}")
    alone = task.call(f"{what[:-1]}[:1])", model, images[:1])
    expect_tensor(task, f"{what[:-1]}[:1]) logits", alone, expected[:1].shape, expected.dtype)
    expect_close(task, f"{what[:-1]}[:1]) logits", alone, expected[:1], ATOL, RTOL)


def _expect_attention(task, model, fixture):
    """forward_attention(images): one (B, H, N + 1, N + 1) map per block, first block first, as forward runs them."""
    images, expected = fixture["images"], fixture["attention"]  # expected: (L, B, H, N + 1, N + 1)
    what = f"{NAME}.forward_attention(images)"
    maps = task.call(what, model.forward_attention, images)
    if isinstance(maps, torch.Tensor) or not isinstance(maps, (list, tuple)):
        task.fail(f"{what} should return a list of num_layers = {len(expected)} attention maps, one per block, got "
                  f"{type(maps).__name__}.")
    if len(maps) == 1 and len(expected) > 1 and isinstance(maps[0], torch.Tensor) \
            and matches(maps[0], expected[-1], ATOL, RTOL):
        task.fail(f"{what}: {ONLY_LAST}", ONLY_LAST.slug)
    if len(maps) != len(expected):
        task.fail(f"{what} should return num_layers = {len(expected)} maps, one per block, got {len(maps)}.")
    for index, attention in enumerate(maps):
        if isinstance(attention, torch.Tensor) and matches(attention, expected[index].mean(dim=1), ATOL, RTOL):
            task.fail(f"{what}: {HEADS_AVERAGED}", HEADS_AVERAGED.slug)
        expect_tensor(task, f"{what}[{index}]", attention, expected.shape[1:], expected.dtype)
        expect_finite(task, f"{what}[{index}]", attention)
    got = torch.stack([attention.detach() for attention in maps])  # (L, B, H, N + 1, N + 1)
    if not matches(got, expected, ATOL, RTOL):
        _explain_attention(task, what, model, got, fixture)
    expect_close(task, what, got, expected, ATOL, RTOL)


def _explain_attention(task, what, model, got, fixture):
    """Fail naming maps in reverse order, a known mistake, or maps that are not those forward computes."""
    if len(got) > 1 and matches(got.flip(0), fixture["attention"], ATOL, RTOL):
        task.fail(f"{what}: {REVERSED}", REVERSED.slug)
    sums = got.sum(dim=-1)  # (L, B, H, N + 1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-6):
        task.fail(f"{what}: each map's rows should sum to 1 (attention weights, after the softmax), but sum to values "
                  f"from {sums.min().item():.4g} to {sums.max().item():.4g}.")
    diagnose(task, what, got, signatures(fixture, "attention"), ATOL, RTOL)
    seen = recorded(model, fixture["images"])["attention"]
    if len(seen) == len(got) and all(isinstance(a, torch.Tensor) and a.shape == got.shape[1:] for a in seen) \
            and not matches(got, torch.stack(seen), ATOL, RTOL):
        unnormalised = probes.maps_without_norm(vit_blocks(model), recorded(model, fixture["images"])["inputs"], got)
        if unnormalised:
            task.fail(f"{what}: {unnormalised}")
        task.fail(f"{what}: {DISAGREES}", DISAGREES.slug)


def _expect_dropout(task, cls, fixture):
    """dropout=0.5: eval mode gives the dropout-free logits; train mode differs from call to call."""
    config = dict(fixture["config"], dropout=0.5)
    model = _load(task, _built(task, cls, config), fixture["weights"], config).eval()
    with torch.random.fork_rng(devices=[]):  # dropout draws from the global generator: leave the student's alone
        torch.manual_seed(0)
        first, second = (task.call(f"{NAME}(images)", model, fixture["images"]) for _ in range(2))
        if not torch.equal(first, second):
            task.fail(DROPOUT_AT_EVAL)
        expect_close(task, f"{NAME}(dropout=0.5) in eval mode: logits", first, fixture["logits"], ATOL, RTOL)
        model.train()
        first, second = (task.call(f"{NAME}(images)", model, fixture["images"]) for _ in range(2))
    if torch.equal(first, second):
        task.fail(DROPOUT_NOT_PASSED)
    return first


def _expect_gradients(task, model, fixture):
    """In train mode, a finite gradient for every parameter ([CLS] token and positions included) and the images."""
    images = fixture["images"].clone().requires_grad_(True)
    logits = task.call(f"{NAME}(images)", model.train(), images)
    if not logits.requires_grad:
        task.fail(f"{NAME}(images) gives logits that do not require grad, so training cannot change the model: is "
                  "forward run under torch.no_grad(), or its result detached?")
    expect_gradients_everywhere(task, model, logits.pow(2).sum(), images, NAME)


@check_function(3)
def check_task_3(task, VisionTransformer):
    """Check VisionTransformer: structure, embedding, blocks, [CLS] logits, forward_attention, gradients, dropout."""
    expect_module_class(task, VisionTransformer, NAME)
    fixture = load_fixture(__package__, 3)
    model = _built(task, VisionTransformer, fixture["config"])
    _structure(task, model, fixture["config"], VisionTransformer)
    _load(task, model, fixture["weights"], fixture["config"]).eval()
    _expect_embedding(task, model, fixture)
    _expect_blocks(task, model, fixture)
    _expect_logits(task, model, fixture)
    _expect_attention(task, model, fixture)
    _expect_gradients(task, model, fixture)
    _expect_dropout(task, VisionTransformer, fixture)
    task.passed("patch embedding, pre-norm blocks in order, final norm and head on the [CLS] token, one attention "
                "map per block from forward_attention, dropout off in eval mode, and gradients are right.")
