"""What a wrong PatchEmbedding output is: its tokens compared, one part at a time, with those built from the loaded
weights and the fixture's projected patches (so every known mistake is named by construction, not by a stored output).
"""
import math

import torch

from .._compare import matches
from .._core import Diagnosis
from ._probes_linear import coefficients

ATOL, RTOL = 1e-9, 1e-9
CLS_LAST = Diagnosis(
    "cls-last",
    "the [CLS] token comes after the patches: put it first, torch.cat([cls, patches], dim=1), so that the "
    "classifier finds it at position 0.")
CLS_NOT_SHARED = Diagnosis(
    "cls-not-shared",
    "the token at position 0 differs between images: it should be the [CLS] token, one learned vector "
    "shared by every image (expand or repeat it over the batch), plus row 0 of position_embedding.")
CLS_NO_POSITION = Diagnosis(
    "cls-no-position",
    "the [CLS] token gets no position embedding: add all N + 1 rows of position_embedding to the "
    "concatenated tokens, row 0 to [CLS] and rows 1 .. N to the patches.")
NO_POSITIONS = Diagnosis(
    "no-positions",
    "the patch tokens get no position embedding: add position_embedding (1, N + 1, embed_dim) to the "
    "tokens, rows 1 .. N to the patches; without it the model cannot tell where a patch was.")
SHIFTED = Diagnosis(
    "shifted",
    "the patches get rows 0 .. N - 1 of position_embedding: row 0 belongs to the [CLS] token at position 0, "
    "so patch n (token n + 1) gets row n + 1.")
PATCH_TOKENS = Diagnosis(
    "patch-tokens",
    "tokens 1 .. N minus rows 1 .. N of position_embedding should be projection(patchify(images, "
    "patch_size)), each patch's C·p·p pixels mapped to embed_dim, in patchify's order.")
SINUSOIDAL = Diagnosis(
    "sinusoidal",
    "the tokens get a fixed sinusoidal table added, not position_embedding: ViT learns its positions, so add "
    "the learned nn.Parameter position_embedding (1, N + 1, embed_dim) to the tokens.")
OTHER_TABLE = Diagnosis(
    "other-table",
    "the tokens get a table added that is not position_embedding (the same for every image): add the "
    "learned position_embedding (1, N + 1, embed_dim), row 0 to [CLS] and rows 1 .. N to the patches.")
NORMALISED = Diagnosis(
    "normalised",
    "every token is normalised (mean 0 and variance 1 over embed_dim), as by a LayerNorm: PatchEmbedding "
    "returns torch.cat([cls, patches], dim=1) + position_embedding as it is; the blocks normalise.")
SCALED = Diagnosis(
    "scaled",
    "the projected patches are multiplied by {scale:.4g}: tokens 1 .. N should be projection(patchify(images, "
    "patch_size)) plus rows 1 .. N of position_embedding, unscaled.")
CLS_UNUSED = Diagnosis(
    "cls-unused",
    "the patch tokens are right, but token 0 is row 0 of position_embedding alone: the learned cls_token is "
    "not used; put cls_token (expanded over the batch) at position 0 before adding the positions.")
CLS_WRONG = Diagnosis(
    "cls-wrong",
    "the patch tokens are right, but token 0 is not cls_token plus row 0 of position_embedding: put the "
    "learned cls_token (expanded over the batch) at position 0, then add position_embedding.")
BOTH_WRONG = Diagnosis(
    "both-wrong",
    "both token 0 and the patch tokens differ from torch.cat([cls_token, projection(patchify(images, "
    "patch_size))], dim=1) + position_embedding, with cls_token expanded over the batch.")


def _same_for_every_image(tokens):
    """Whether tokens (B, ...) are one value repeated over the batch."""
    return matches(tokens, tokens[:1].expand_as(tokens), ATOL, RTOL)


def sinusoids(length, embed_dim):
    """The two usual layouts of the fixed sine/cosine table: interleaved and in halves, each (length, embed_dim)."""
    position = torch.arange(length, dtype=torch.float64)[:, None]  # (length, 1)
    frequency = torch.exp(torch.arange(0, embed_dim, 2, dtype=torch.float64) * (-math.log(10000.0) / embed_dim))
    angles = position * frequency  # (length, ceil(D / 2))
    interleaved = torch.zeros(length, embed_dim, dtype=torch.float64)  # (length, D)
    interleaved[:, 0::2], interleaved[:, 1::2] = angles.sin(), angles.cos()[:, :embed_dim // 2]
    halves = torch.cat([angles.sin(), angles.cos()], dim=1)[:, :embed_dim]  # (length, D)
    return interleaved, halves


def _explain_added_table(task, got, case, what):
    """Fail naming a sinusoidal (or another fixed) table added in place of the learned positions."""
    weights, projected = case["weights"], case["projected"]  # projected: (B, N, D)
    cls_token = weights["cls_token"].reshape(1, 1, -1).expand(len(projected), 1, -1)  # (B, 1, D)
    added = got.detach() - torch.cat([cls_token, projected], dim=1)  # (B, N + 1, D)
    if not _same_for_every_image(added):
        return
    for table in sinusoids(added.size(1), added.size(2)):
        # the student's table may be computed in float32: about 1e-7 from float64 values
        if torch.allclose(added[0, 1:], table[1:], atol=1e-5) or torch.allclose(added[0, 1:], table[:-1], atol=1e-5):
            task.fail(f"{what} is wrong: {SINUSOIDAL}", SINUSOIDAL.slug)
    task.fail(f"{what} is wrong: {OTHER_TABLE}", OTHER_TABLE.slug)


def _explain_patches(task, got, case, what, cls_right):
    """Fail naming normalised tokens, scaled patches, or which of token 0 and the patch tokens is wrong."""
    positions = case["weights"]["position_embedding"].reshape(got.size(1), -1)  # (N + 1, D)
    projected = case["projected"]  # (B, N, D)
    tokens = got.detach()
    mean, variance = tokens.mean(-1), tokens.var(-1, unbiased=False)  # (B, N + 1) each
    if torch.allclose(mean, torch.zeros_like(mean), atol=1e-6) and \
            torch.allclose(variance, torch.ones_like(variance), atol=1e-3):
        task.fail(f"{what} is wrong: {NORMALISED}", NORMALISED.slug)
    unpositioned = tokens[:, 1:] - positions[1:]  # (B, N, D)
    scale = ((unpositioned * projected).sum() / projected.pow(2).sum()).item()
    if abs(scale - 1) > 1e-6 and matches(unpositioned, scale * projected, 1e-6, 1e-6):
        task.fail(f"{what} is wrong: {SCALED.format(scale=scale)}", SCALED.slug)
    task.fail(f"{what} is wrong: {PATCH_TOKENS if cls_right else BOTH_WRONG}")


def explain_tokens(task, got, case, what):
    """Fail naming what is wrong with got (B, N + 1, D), built from the case's weights and projected patches."""
    weights, projected = case["weights"], case["projected"]  # projected: (B, N, D)
    cls_token = weights["cls_token"].reshape(-1)  # (D,)
    positions = weights["position_embedding"].reshape(-1, cls_token.numel())  # (N + 1, D)
    first, patches = got.detach()[:, 0], got.detach()[:, 1:]  # (B, D), (B, N, D)
    if not _same_for_every_image(first):
        if _same_for_every_image(got.detach()[:, -1]):
            task.fail(f"{what} is wrong: {CLS_LAST}", CLS_LAST.slug)
        task.fail(f"{what} is wrong: {CLS_NOT_SHARED}", CLS_NOT_SHARED.slug)
    if matches(patches, projected, ATOL, RTOL):
        task.fail(f"{what} is wrong: {NO_POSITIONS}", NO_POSITIONS.slug)
    if matches(patches, projected + positions[:-1], ATOL, RTOL):
        task.fail(f"{what} is wrong: {SHIFTED}", SHIFTED.slug)
    cls_right = matches(first, (cls_token + positions[0]).expand_as(first), ATOL, RTOL)
    if not matches(patches, projected + positions[1:], ATOL, RTOL):
        _explain_added_table(task, got, case, what)
        _explain_patches(task, got, case, what, cls_right)
    if matches(first, cls_token.expand_as(first), ATOL, RTOL):
        task.fail(f"{what} is wrong: {CLS_NO_POSITION}", CLS_NO_POSITION.slug)
    if matches(first, positions[0].expand_as(first), ATOL, RTOL):
        task.fail(f"{what} is wrong: {CLS_UNUSED}", CLS_UNUSED.slug)
    if not cls_right:
        _explain_first_token(task, first[0], cls_token, positions[0], what)
        task.fail(f"{what} is wrong: {CLS_WRONG}", CLS_WRONG.slug)


def _explain_first_token(task, first, cls_token, position, what):
    """Fail saying how many times token 0 holds cls_token and row 0 of the positions, when it is a sum of them."""
    found = coefficients(first, {"cls_token": cls_token, "position": position})
    if not found or found == {"cls_token": 1, "position": 1}:
        return
    times = {0: "not at all", 1: "once", 2: "twice"}
    said = {name: times.get(count, f"{count} times") for name, count in found.items()}
    task.fail(f"{what} is wrong: the patch tokens are right, but token 0 is {found['cls_token']}·cls_token + "
              f"{found['position']}·(row 0 of position_embedding): it holds cls_token {said['cls_token']} and row 0 "
              f"{said['position']}; add each once, torch.cat([cls, patches], dim=1) + position_embedding with cls "
              "the bare cls_token expanded over the batch.")
