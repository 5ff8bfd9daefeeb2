"""Correct Tasks 1-2 answers written differently from the reference: the checks must accept every one.

Each is its own formulation (not a copy of the reference answer cells). The PatchEmbedding variants call this
module's `patchify` by its global name, as a student's class calls the notebook's.
"""
import einops
import torch
import torch.nn as nn
import torch.nn.functional as F


def _divisible(images, patch_size):
    height, width = images.shape[-2:]
    if height % patch_size or width % patch_size:
        raise ValueError(f"height {height} and width {width} must be multiples of patch_size {patch_size}")


# ----- Task 1: patchify ---------------------------------------------------------------------------------------------

def patchify_einops(images, patch_size):
    """The one-line einops answer."""
    _divisible(images, patch_size)
    return einops.rearrange(images, "b c (h p1) (w p2) -> b (h w) (c p1 p2)", p1=patch_size, p2=patch_size)


def patchify_im2col(images, patch_size):
    """F.unfold (im2col) with stride = kernel: (B, C·p·p, N), channel first, patches row-major; then transposed."""
    _divisible(images, patch_size)
    return F.unfold(images, kernel_size=patch_size, stride=patch_size).transpose(1, 2)  # (B, N, C·p·p)


def patchify_tensor_unfold(images, patch_size):
    """Tensor.unfold on the height then the width: (B, C, h, w, p, p), the grid moved in front of the channel."""
    _divisible(images, patch_size)
    blocks = images.unfold(2, patch_size, patch_size).unfold(3, patch_size, patch_size)  # (B, C, h, w, p, p)
    return blocks.permute(0, 2, 3, 1, 4, 5).flatten(3).flatten(1, 2)  # (B, N, C·p·p)


def patchify_unflatten(images, patch_size):
    """unflatten H and W, then flatten the grid and the patch (contiguous() before a view of the permuted tensor)."""
    _divisible(images, patch_size)
    grid = images.unflatten(2, (-1, patch_size)).unflatten(4, (-1, patch_size))  # (B, C, h, p, w, p)
    grid = grid.permute(0, 2, 4, 1, 3, 5).contiguous()  # (B, h, w, C, p, p)
    return grid.view(images.size(0), -1, images.size(1) * patch_size ** 2)  # (B, N, C·p·p)


def patchify_pixel_offsets(images, patch_size):
    """A loop over the p x p pixels of a patch, each a strided slice of every patch at once: the work grows with
    the patch, not with the number of patches (Python loops over the patches are what Task 1 rules out)."""
    _divisible(images, patch_size)
    pixels = [images[:, :, row::patch_size, col::patch_size].flatten(2)  # (B, C, N): this pixel of every patch
              for row in range(patch_size) for col in range(patch_size)]
    return torch.stack(pixels, dim=-1).transpose(1, 2).flatten(2)  # (B, C, N, p·p) -> (B, N, C·p·p)


PATCHIFIES = [patchify_einops, patchify_im2col, patchify_tensor_unfold, patchify_unflatten, patchify_pixel_offsets]
patchify = patchify_tensor_unfold  # what the PatchEmbedding variants below call


# ----- Task 2: PatchEmbedding ---------------------------------------------------------------------------------------

class EmbeddingCatExpand(nn.Module):
    """cls_token (1, 1, D) from zeros, expanded over the batch; positions added after the concatenation."""

    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        self.projection = nn.Linear(in_channels * patch_size * patch_size, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.position_embedding = nn.Parameter(torch.zeros(1, (image_size // patch_size) ** 2 + 1, embed_dim))

    def forward(self, images):
        tokens = self.projection(patchify(images, self.patch_size))  # (B, N, D)
        cls = self.cls_token.expand(tokens.size(0), -1, -1)  # (B, 1, D)
        return torch.cat((cls, tokens), dim=1) + self.position_embedding  # (B, N + 1, D)


class EmbeddingRepeatFirst(nn.Module):
    """cls_token (D,) from a truncated normal, repeated over the batch; positions added before the concatenation,
    each part its own rows; a dropout module after (no parameters)."""

    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        self.patch_size = patch_size
        self.cls_token = nn.Parameter(nn.init.trunc_normal_(torch.empty(embed_dim), std=0.02))
        self.position_embedding = nn.Parameter(nn.init.trunc_normal_(torch.empty(1, num_patches + 1, embed_dim)))
        self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)
        self.dropout = nn.Dropout(0.0)

    def forward(self, images):
        patches = self.projection(patchify(images, self.patch_size)) + self.position_embedding[:, 1:]  # (B, N, D)
        first = (self.cls_token + self.position_embedding[0, 0]).repeat(images.size(0), 1, 1)  # (B, 1, D)
        return self.dropout(torch.cat([first, patches], dim=1))  # (B, N + 1, D)


class EmbeddingSinusoidStart(nn.Module):
    """position_embedding learned but started from a sinusoidal table (an init choice); cls_token (1, 1, D) from
    large random values; the [CLS] row written into a new tensor with torch.empty and slicing."""

    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        positions = torch.arange((image_size // patch_size) ** 2 + 1)[:, None]  # (N + 1, 1)
        angles = positions / 100.0 ** (torch.arange(embed_dim) / embed_dim)  # (N + 1, D)
        self.position_embedding = nn.Parameter(torch.sin(angles)[None].clone())  # (1, N + 1, D)
        self.cls_token = nn.Parameter(torch.randn(1, 1, embed_dim) * 100)
        self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)

    def forward(self, images):
        patches = self.projection(patchify(images, self.patch_size))  # (B, N, D)
        tokens = patches.new_empty(patches.size(0), patches.size(1) + 1, patches.size(2))  # (B, N + 1, D)
        tokens[:, 0] = self.cls_token[0]
        tokens[:, 1:] = patches
        return tokens + self.position_embedding  # (B, N + 1, D)


EMBEDDINGS = [EmbeddingCatExpand, EmbeddingRepeatFirst, EmbeddingSinusoidStart]
