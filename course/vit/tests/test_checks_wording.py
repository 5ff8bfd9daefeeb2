"""The sentences of check_task_2 and check_task_3 for mistakes an independent student answer made (vit-student's
findings 6-9): each case gets the sentence its evidence supports, not a neighbouring mistake's; an earlier task's stub
is blamed on that task; every message names the student's own attributes; each check stays within a second."""
import math
import re

import pytest
import torch
import torch.nn as nn

from checkers.vit import _model_probes, _tokens
from checkers.vit.embedding import N_ROWS
from .checks import cpu_seconds, failure_of, reference, variant


# ----- Task 2: PatchEmbedding ---------------------------------------------------------------------------------------

def _sinusoids(length, embed_dim, halves=False):
    """A fixed sine/cosine table (1, length, D) in float32, as the first workbook builds one (interleaved or halves)."""
    position = torch.arange(length).float()[:, None]  # (length, 1)
    frequency = torch.exp(torch.arange(0, embed_dim, 2).float() * (-math.log(10000.0) / embed_dim))  # (ceil(D / 2),)
    if halves:
        return torch.cat([torch.sin(position * frequency), torch.cos(position * frequency)], dim=1)[None, :, :embed_dim]
    table = torch.zeros(length, embed_dim)  # (length, D)
    angles = position * frequency  # (length, ceil(D / 2))
    table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)[:, :embed_dim // 2]
    return table[None]


def embedding(tokens_of):
    """The reference PatchEmbedding with forward = tokens_of(self, cls (B, 1, D), projected patches (B, N, D))."""
    ns = reference()
    base, patchify = ns["PatchEmbedding"], ns["patchify"]

    def forward(self, images):
        patches = self.projection(patchify(images, self.patch_size))  # (B, N, D)
        return tokens_of(self, self.cls_token.expand(patches.size(0), 1, -1), patches)
    return type("PatchEmbedding", (base,), {"forward": forward})


def _with_table(table_of):
    def tokens_of(self, cls, patches):
        tokens = torch.cat([cls, patches], dim=1)  # (B, N + 1, D)
        return tokens + table_of(self, tokens).to(tokens.dtype)
    return tokens_of


EMBEDDINGS = {
    "sinusoid added in forward": (_with_table(lambda self, tokens: _sinusoids(*tokens.shape[1:])),
                                  _tokens.SINUSOIDAL),
    "sinusoid in halves added in forward": (
        _with_table(lambda self, tokens: _sinusoids(*tokens.shape[1:], halves=True)), _tokens.SINUSOIDAL),
    "positions reversed": (_with_table(lambda self, tokens: self.position_embedding.flip(1)), _tokens.OTHER_TABLE),
    "zeros in the [CLS] slot": (lambda self, cls, patches: torch.cat([torch.zeros_like(cls), patches], dim=1)
                                + self.position_embedding, _tokens.CLS_UNUSED),
    "[CLS] doubled": (lambda self, cls, patches: torch.cat([2 * cls, patches], dim=1) + self.position_embedding,
                      "token 0 is 2·cls_token + 1·(row 0 of position_embedding): it holds cls_token twice"),
    "LayerNorm on the tokens": (lambda self, cls, patches: nn.functional.layer_norm(
        torch.cat([cls, patches], dim=1) + self.position_embedding, cls.shape[-1:]), _tokens.NORMALISED),
    "every token doubled": (lambda self, cls, patches: 2 * (torch.cat([cls, patches], dim=1)
                                                             + self.position_embedding), _tokens.BOTH_WRONG),
}


@pytest.mark.fast
@pytest.mark.parametrize("name", EMBEDDINGS)
def test_task_2_names_what_the_evidence_shows(name):
    tokens_of, sentence = EMBEDDINGS[name]
    message = failure_of(2, embedding(tokens_of))
    assert sentence in message, message


@pytest.mark.fast
def test_task_2_names_the_factor_of_scaled_patches():
    scaled = embedding(lambda self, cls, patches: torch.cat([cls, patches * math.sqrt(patches.size(-1))], dim=1)
                       + self.position_embedding)
    message = failure_of(2, scaled)
    factor = float(re.search(r"multiplied by ([0-9.]+)", message).group(1))
    embed_dim = int(re.search(r"embed_dim=(\d+)", message).group(1))
    assert _tokens.SCALED.split("{")[0] in message and factor == pytest.approx(math.sqrt(embed_dim), abs=1e-3), message


@pytest.mark.fast
@pytest.mark.parametrize("name", ["zeros in the [CLS] slot", "[CLS] doubled", "LayerNorm on the tokens"])
def test_task_2_blames_the_patch_tokens_only_when_they_are_wrong(name):
    message = failure_of(2, embedding(EMBEDDINGS[name][0]))
    assert _tokens.PATCH_TOKENS not in message, message


@pytest.mark.fast
def test_the_reference_tokens_are_no_sinusoid():
    """The sinusoid probe tells tables apart: the check's own tables are the test's tables, not the learned ones."""
    for halves, table in zip((False, True), _tokens.sinusoids(17, 6)):
        assert torch.allclose(table[None].float(), _sinusoids(17, 6, halves), atol=1e-6)


# ----- Task 3: VisionTransformer readout and flow -------------------------------------------------------------------

def model(forward=None, after_init=None):
    """The reference VisionTransformer with forward(self, x) on the embedded tokens, or a change after __init__."""
    base = reference()["VisionTransformer"]
    methods = {}
    if forward:
        methods["forward"] = lambda self, images: forward(self, self.patch_embedding(images))
    if after_init:
        def __init__(self, *args, **kwargs):
            base.__init__(self, *args, **kwargs)
            after_init(self)
        methods["__init__"] = __init__
    return type("VisionTransformer", (base,), methods)


def _blocks(self, x, link=lambda block, x: block(x)):
    for block in self.blocks:
        x = link(block, x)  # (B, N + 1, D)
    return x


READOUTS = {
    "probabilities": (lambda self, x: self.head(self.final_norm(_blocks(self, x)[:, 0])).softmax(-1),
                      _model_probes.PROBABILITIES),
    "log-probabilities": (lambda self, x: self.head(self.final_norm(_blocks(self, x)[:, 0])).log_softmax(-1),
                          _model_probes.LOG_PROBABILITIES),
    "norm, then the mean of the patches": (lambda self, x: self.head(self.final_norm(_blocks(self, x))[:, 1:]
                                                                     .mean(dim=1)), _model_probes.MEAN_PATCHES),
    "norm, then the mean of all tokens": (lambda self, x: self.head(self.final_norm(_blocks(self, x)).mean(dim=1)),
                                          _model_probes.MEAN_TOKENS),
    "residual added twice": (lambda self, x: self.head(self.final_norm(
        _blocks(self, x, lambda block, x: x + block(x))[:, 0])),
        _model_probes.RESIDUAL_TWICE.format(index=1, previous=0)),
    "blocks not chained": (lambda self, x: self.head(self.final_norm(
        [block(x) for block in self.blocks][-1][:, 0])), _model_probes.NOT_CHAINED.format(index=1, previous=0)),
    "each block's output doubled": (lambda self, x: self.head(self.final_norm(
        _blocks(self, x, lambda block, x: 2 * block(x))[:, 0])),
        "blocks[1] receives something other than the output of blocks[0]"),
}


@pytest.mark.fast
@pytest.mark.parametrize("name", READOUTS)
def test_task_3_names_what_the_logits_are(name):
    forward, sentence = READOUTS[name]
    message = failure_of(3, model(forward))
    assert sentence in message and "logits are not head(final_norm" not in message, message


def _rename_final_norm(self):
    self.norm = self.final_norm
    del self.final_norm


@pytest.mark.fast
@pytest.mark.parametrize("change, found", [
    (_rename_final_norm, "found nothing (a LayerNorm named `norm` is there: name it final_norm)"),
    (lambda self: setattr(self, "final_norm", nn.LayerNorm(4)), "found nn.LayerNorm(4)"),
    (lambda self: setattr(self, "final_norm", nn.Identity()), "found Identity"),
], ids=["renamed", "wrong size", "Identity"])
def test_task_3_says_what_final_norm_is(change, found):
    message = failure_of(3, model(after_init=change))
    assert "final_norm should be nn.LayerNorm(embed_dim)" in message and found in message, message


@pytest.mark.fast
def test_a_wrong_shape_is_named_by_the_students_own_attribute():
    """feedforward_dim ignored: the message names an attribute the student's model really has."""
    base = reference()["VisionTransformer"]

    class Model(base):
        def __init__(self, image_size, patch_size, in_channels, num_classes, embed_dim, num_heads, feedforward_dim,
                     num_layers, dropout=0.0):
            super().__init__(image_size, patch_size, in_channels, num_classes, embed_dim, num_heads, 4 * embed_dim,
                             num_layers, dropout)
    message = failure_of(3, Model)
    path = re.search(r"`([^`]+)` has shape \((\d+), (\d+)\)", message)
    assert path and ".in." not in path.group(1), message
    built = Model(8, 2, 1, 10, 8, 2, 16, 2)
    parameter = eval(f"built.{path.group(1)}", {"built": built})  # the path the message names
    assert tuple(parameter.shape) == (int(path.group(2)), int(path.group(3))), message


# ----- Task 3 blames a stub or a wrong part of an earlier task on that task -----------------------------------------

def _patchify_stub(source):
    return source.replace("    batch_size, channels, height, width = images.shape\n",
                          "    raise NotImplementedError()\n", 1)


class StubEmbedding(nn.Module):
    """The notebook's PatchEmbedding before Task 2 is done: an empty constructor, a forward that raises."""

    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()

    def forward(self, images):
        raise NotImplementedError()


def with_embedding(embedding_class):
    """The reference VisionTransformer with patch_embedding an instance of embedding_class."""
    base = reference()["VisionTransformer"]

    class Model(base):
        def __init__(self, image_size, patch_size, in_channels, num_classes, embed_dim, *rest, **kwargs):
            super().__init__(image_size, patch_size, in_channels, num_classes, embed_dim, *rest, **kwargs)
            self.patch_embedding = embedding_class(image_size, patch_size, in_channels, embed_dim)
    return Model


def n_rows_embedding():
    """A PatchEmbedding whose table has N rows, added to the patches before [CLS] is put first."""
    base = reference()["PatchEmbedding"]

    class Embedding(base):
        def __init__(self, image_size, patch_size, in_channels, embed_dim):
            super().__init__(image_size, patch_size, in_channels, embed_dim)
            self.position_embedding = nn.Parameter(torch.zeros(1, (image_size // patch_size) ** 2, embed_dim))

        def forward(self, images):
            patches = self.projection(reference()["patchify"](images, self.patch_size)) + self.position_embedding
            return torch.cat([self.cls_token.expand(patches.size(0), 1, -1), patches], dim=1)
    return Embedding


@pytest.mark.fast
def test_task_3_blames_a_patchify_stub_on_task_1():
    message = failure_of(3, variant(_patchify_stub)["VisionTransformer"])
    assert "its patchify does not pass check_task_1" in message and "raised NotImplementedError" in message \
        and "fix Task 1 first" in message, message


@pytest.mark.fast
def test_task_3_blames_an_empty_patch_embedding_on_task_2():
    message = failure_of(3, with_embedding(StubEmbedding))
    assert "does not pass check_task_2" in message and "fix Task 2 first" in message and "found nothing" not in message


@pytest.mark.fast
def test_task_3_blames_a_patch_embedding_forward_stub_on_task_2():
    built = type("PatchEmbedding", (reference()["PatchEmbedding"],), {"forward": StubEmbedding.forward})
    message = failure_of(3, with_embedding(built))
    assert "does not pass check_task_2" in message and "fix Task 2 first" in message, message


@pytest.mark.fast
def test_task_3_blames_a_position_table_of_n_rows_on_task_2():
    message = failure_of(3, with_embedding(n_rows_embedding()))
    assert "does not pass check_task_2" in message and N_ROWS[:40] in message, message


@pytest.mark.full
@pytest.mark.parametrize("task, make", [
    (2, lambda: embedding(EMBEDDINGS["sinusoid added in forward"][0])),
    (3, lambda: variant(_patchify_stub)["VisionTransformer"]),
    (3, lambda: with_embedding(StubEmbedding)),
    (3, lambda: model(READOUTS["residual added twice"][0])),
], ids=["sinusoid", "patchify stub", "embedding stub", "residual twice"])
def test_checks_take_under_a_second(task, make):
    obj = make()

    assert cpu_seconds(lambda: failure_of(task, obj)) <= 1.0
