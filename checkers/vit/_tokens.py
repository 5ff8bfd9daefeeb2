"""What a wrong PatchEmbedding output is: its tokens compared, one part at a time, with those built from the loaded
weights and the fixture's projected patches (so every known mistake is named by construction, not by a stored output).
"""
import torch

from .._compare import matches

ATOL, RTOL = 1e-9, 1e-9
CLS_LAST = ("the [CLS] token comes after the patches: put it first, torch.cat([cls, patches], dim=1), so that the "
            "classifier finds it at position 0.")
CLS_NOT_SHARED = ("the token at position 0 differs between images: it should be the [CLS] token, one learned vector "
                  "shared by every image (expand or repeat it over the batch), plus row 0 of position_embedding.")
CLS_NO_POSITION = ("the [CLS] token gets no position embedding: add all N + 1 rows of position_embedding to the "
                   "concatenated tokens, row 0 to [CLS] and rows 1 .. N to the patches.")
NO_POSITIONS = ("the patch tokens get no position embedding: add position_embedding (1, N + 1, embed_dim) to the "
                "tokens, rows 1 .. N to the patches; without it the model cannot tell where a patch was.")
SHIFTED = ("the patches get rows 0 .. N - 1 of position_embedding: row 0 belongs to the [CLS] token at position 0, "
           "so patch n (token n + 1) gets row n + 1.")
PATCH_TOKENS = ("tokens 1 .. N minus rows 1 .. N of position_embedding should be projection(patchify(images, "
                "patch_size)), each patch's C·p·p pixels mapped to embed_dim, in patchify's order.")


def _same_for_every_image(tokens):
    """Whether tokens (B, D) are one vector repeated over the batch."""
    return matches(tokens, tokens[:1].expand_as(tokens), ATOL, RTOL)


def explain_tokens(task, got, case, what):
    """Fail naming what is wrong with got (B, N + 1, D), built from the case's weights and projected patches."""
    weights, projected = case["weights"], case["projected"]  # projected: (B, N, D)
    cls_token = weights["cls_token"].reshape(-1)  # (D,)
    positions = weights["position_embedding"].reshape(-1, cls_token.numel())  # (N + 1, D)
    first, patches = got.detach()[:, 0], got.detach()[:, 1:]  # (B, D), (B, N, D)
    if not _same_for_every_image(first):
        if _same_for_every_image(got.detach()[:, -1]):
            task.fail(f"{what} is wrong: {CLS_LAST}")
        task.fail(f"{what} is wrong: {CLS_NOT_SHARED}")
    if matches(patches, projected, ATOL, RTOL):
        task.fail(f"{what} is wrong: {NO_POSITIONS}")
    if matches(patches, projected + positions[:-1], ATOL, RTOL):
        task.fail(f"{what} is wrong: {SHIFTED}")
    if not matches(patches, projected + positions[1:], ATOL, RTOL):
        task.fail(f"{what} is wrong: {PATCH_TOKENS}")
    if matches(first, cls_token.expand_as(first), ATOL, RTOL):
        task.fail(f"{what} is wrong: {CLS_NO_POSITION}")
