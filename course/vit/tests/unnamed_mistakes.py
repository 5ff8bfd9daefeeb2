"""Held-out student mistakes and correct variants for the vit assignment (Tasks 1, 2, 3 and 5).

Written from the student notebook's text and skeletons only, without reading the checks or the grader. Every
mistake is one change from this module's own correct base implementations; every variant is a correct
alternative that must be accepted. verify.py (next to this file) compares all of them with the reference.
"""
import math

import einops
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------------------------------------------------------
# Given code (the notebook's read-only cell), copied as the student has it
# ---------------------------------------------------------------------------------------------------------------

def scaled_softmax_attention(query, key, value, mask=None):
    """Scaled dot-product attention: (..., L_q, head_dim) queries over (..., L_k, head_dim) keys and values.

    Returns the (..., L_q, head_dim) weighted values and the (..., L_q, L_k) weights; mask is True where allowed.
    """
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # (..., L_q, L_k)
    if mask is not None:
        scores = scores.masked_fill(~mask.bool(), float("-inf"))
    attention = torch.softmax(scores, dim=-1)  # (..., L_q, L_k)
    return attention @ value, attention


class MultiheadAttention(nn.Module):
    """Multi-head self-attention of the first workbook: H heads of head_dim = D / H features."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        assert embed_dim % num_heads == 0, "embed_dim must be divisible by num_heads"
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.o_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x, mask=None, return_attention=False):
        """x (B, T, D) -> (B, T, D) [, attention (B, H, T, T)]."""
        batch_size, seq_len, _ = x.shape
        heads_shape = (batch_size, seq_len, self.num_heads, self.head_dim)
        query = self.q_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, T, head_dim)
        key = self.k_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, T, head_dim)
        value = self.v_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, T, head_dim)
        heads, attention = scaled_softmax_attention(query, key, value, mask)  # (B, H, T, head_dim), (B, H, T, T)
        outputs = self.o_proj(heads.transpose(1, 2).reshape(batch_size, seq_len, self.embed_dim))  # (B, T, D)
        return (outputs, attention) if return_attention else outputs


class PreNormBlock(nn.Module):
    """The pre-norm encoder block: x + attention(norm1(x)), then x + feedforward(norm2(x)). No mask, no RoPE."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.GELU, dropout=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(embed_dim)
        self.attention = MultiheadAttention(embed_dim, num_heads)
        self.norm2 = nn.LayerNorm(embed_dim)
        self.feedforward = nn.Sequential(nn.Linear(embed_dim, feedforward_dim), activation(),
                                         nn.Linear(feedforward_dim, embed_dim))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, return_attention=False):
        """x (B, T, D) -> (B, T, D) [, attention (B, H, T, T)]."""
        attended, attention = self.attention(self.norm1(x), return_attention=True)  # (B, T, D), (B, H, T, T)
        x = x + self.dropout(attended)
        x = x + self.dropout(self.feedforward(self.norm2(x)))
        return (x, attention) if return_attention else x


# ---------------------------------------------------------------------------------------------------------------
# Correct bases
# ---------------------------------------------------------------------------------------------------------------

def patchify(images, patch_size):
    """Cut images into non-overlapping square patches, each flattened channel first."""
    B, C, H, W = images.shape
    p = patch_size
    if H % p != 0 or W % p != 0:
        raise ValueError(f"image size {H}x{W} is not a multiple of the patch size {p}")
    h, w = H // p, W // p
    x = images.view(B, C, h, p, w, p)  # (B, C, h, p, w, p)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, h, w, C, p, p)
    return x.reshape(B, h * w, C * p * p)  # (B, N, C p p)


class PatchEmbedding(nn.Module):
    """Patches -> tokens: a linear projection of each patch, a learned [CLS] token first, learned positions added."""

    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        num_patches = (image_size // patch_size) ** 2
        self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)
        self.cls_token = nn.Parameter(0.02 * torch.randn(embed_dim))
        self.position_embedding = nn.Parameter(0.02 * torch.randn(1, num_patches + 1, embed_dim))

    def forward(self, images):
        """images (B, C, H, W) -> tokens (B, N + 1, D), the [CLS] token at position 0."""
        tokens = self.projection(patchify(images, self.patch_size))  # (B, N, D)
        cls = self.cls_token.view(1, 1, -1).expand(tokens.shape[0], -1, -1)  # (B, 1, D)
        tokens = torch.cat((cls, tokens), dim=1)  # (B, N + 1, D)
        return tokens + self.position_embedding


class VisionTransformer(nn.Module):
    """Images -> class logits: patch embedding, pre-norm blocks, a final norm, a linear head on the [CLS] token."""

    def __init__(self, image_size, patch_size, in_channels, num_classes, embed_dim, num_heads, feedforward_dim,
                 num_layers, dropout=0.0):
        super().__init__()
        self.patch_embedding = PatchEmbedding(image_size, patch_size, in_channels, embed_dim)
        self.blocks = nn.ModuleList(
            [PreNormBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout) for _ in range(num_layers)])
        self.final_norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, images):
        """images (B, C, H, W) -> logits (B, K)."""
        x = self.patch_embedding(images)
        for block in self.blocks:
            x = block(x)
        cls_state = x[:, 0]  # (B, D)
        return self.head(self.final_norm(cls_state))

    def forward_attention(self, images):
        """images (B, C, H, W) -> a list of (B, H, N + 1, N + 1) attention weights, one per block."""
        x = self.patch_embedding(images)
        maps = []
        for block in self.blocks:
            x, attention = block(x, return_attention=True)
            maps.append(attention)
        return maps


def attention_rollout(attention_maps):
    """How much each token's output draws on each input token, through every layer (Abnar & Zuidema, 2020)."""
    result = None
    for weights in attention_maps:
        averaged = weights.mean(dim=1)  # (B, T, T)
        eye = torch.eye(averaged.shape[-1], dtype=averaged.dtype, device=averaged.device)
        layer = averaged + eye
        layer = layer / layer.sum(dim=-1, keepdim=True)
        result = layer if result is None else layer @ result
    return result


# ---------------------------------------------------------------------------------------------------------------
# Task 1 mistakes: patchify
# ---------------------------------------------------------------------------------------------------------------

def patchify_no_permute(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    if H % p != 0 or W % p != 0:
        raise ValueError(f"image size {H}x{W} is not a multiple of the patch size {p}")
    return images.reshape(B, (H // p) * (W // p), C * p * p)  # one reshape: pixels of neighbouring patches mixed


def patchify_column_major(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    if H % p != 0 or W % p != 0:
        raise ValueError(f"image size {H}x{W} is not a multiple of the patch size {p}")
    h, w = H // p, W // p
    x = images.view(B, C, h, p, w, p).permute(0, 4, 2, 1, 3, 5)  # (B, w, h, C, p, p): columns first
    return x.reshape(B, h * w, C * p * p)


def patchify_channels_last(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    if H % p != 0 or W % p != 0:
        raise ValueError(f"image size {H}x{W} is not a multiple of the patch size {p}")
    h, w = H // p, W // p
    x = images.view(B, C, h, p, w, p).permute(0, 2, 4, 3, 5, 1)  # (B, h, w, p, p, C)
    return x.reshape(B, h * w, C * p * p)


def patchify_transposed_patch(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    if H % p != 0 or W % p != 0:
        raise ValueError(f"image size {H}x{W} is not a multiple of the patch size {p}")
    h, w = H // p, W // p
    x = images.view(B, C, h, p, w, p).permute(0, 2, 4, 1, 5, 3)  # (B, h, w, C, p_col, p_row)
    return x.reshape(B, h * w, C * p * p)


def patchify_square_only(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    if H % p != 0 or W % p != 0:
        raise ValueError(f"image size {H}x{W} is not a multiple of the patch size {p}")
    n = H // p  # patches per side (the digits are square)
    x = images.reshape(B, C, n, p, n, p).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, n * n, C * p * p)


def patchify_unfold_no_check(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    x = images.unfold(2, p, p).unfold(3, p, p)  # (B, C, h, w, p, p); drops leftover pixels silently
    x = x.permute(0, 2, 3, 1, 4, 5)  # (B, h, w, C, p, p)
    return x.reshape(B, -1, C * p * p)


def patchify_assert_check(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    assert H % p == 0 and W % p == 0, f"image size {H}x{W} is not a multiple of the patch size {p}"
    h, w = H // p, W // p
    x = images.view(B, C, h, p, w, p).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, h * w, C * p * p)


def patchify_batch_mixed(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    if H % p != 0 or W % p != 0:
        raise ValueError(f"image size {H}x{W} is not a multiple of the patch size {p}")
    h, w = H // p, W // p
    x = images.view(B, C, h, p, w, p).permute(2, 4, 0, 1, 3, 5)  # (h, w, B, C, p, p): batch moved inside
    return x.reshape(B, h * w, C * p * p)


def patchify_image_size_8(images, patch_size):
    B, C, H, W = images.shape
    p = patch_size
    if H % p != 0 or W % p != 0:
        raise ValueError(f"image size {H}x{W} is not a multiple of the patch size {p}")
    h = w = 8 // p  # the digits are 8 x 8
    x = images.reshape(B, C, h, p, w, p).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, h * w, -1)


# ---------------------------------------------------------------------------------------------------------------
# Task 2 mistakes: PatchEmbedding
# ---------------------------------------------------------------------------------------------------------------

class PatchEmbeddingClsLast(PatchEmbedding):
    def forward(self, images):
        tokens = self.projection(patchify(images, self.patch_size))
        cls = self.cls_token.view(1, 1, -1).expand(tokens.shape[0], -1, -1)
        tokens = torch.cat((tokens, cls), dim=1)  # [CLS] appended after the patches
        return tokens + self.position_embedding


class PatchEmbeddingNoClsPosition(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        num_patches = (image_size // patch_size) ** 2
        self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)
        self.cls_token = nn.Parameter(0.02 * torch.randn(embed_dim))
        self.position_embedding = nn.Parameter(0.02 * torch.randn(1, num_patches, embed_dim))  # patches only

    def forward(self, images):
        tokens = self.projection(patchify(images, self.patch_size)) + self.position_embedding
        cls = self.cls_token.view(1, 1, -1).expand(tokens.shape[0], -1, -1)
        return torch.cat((cls, tokens), dim=1)


class PatchEmbeddingPositionsBeforeCls(PatchEmbedding):
    def forward(self, images):
        tokens = self.projection(patchify(images, self.patch_size))
        tokens = tokens + self.position_embedding[:, :tokens.shape[1]]  # positions 0..N-1 go to the patches
        cls = self.cls_token.view(1, 1, -1).expand(tokens.shape[0], -1, -1)
        return torch.cat((cls, tokens), dim=1)


class PatchEmbeddingClsNotBatched(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        num_patches = (image_size // patch_size) ** 2
        self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)
        self.cls_token = nn.Parameter(0.02 * torch.randn(1, 1, embed_dim))
        self.position_embedding = nn.Parameter(0.02 * torch.randn(1, num_patches + 1, embed_dim))

    def forward(self, images):
        tokens = self.projection(patchify(images, self.patch_size))
        tokens = torch.cat((self.cls_token, tokens), dim=1)  # (1, 1, D) next to (B, N, D): only works for B = 1
        return tokens + self.position_embedding


class PatchEmbeddingClsNotParameter(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        num_patches = (image_size // patch_size) ** 2
        self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)
        self.cls_token = 0.02 * torch.randn(embed_dim)  # a plain tensor: never learned, not in the state_dict
        self.position_embedding = nn.Parameter(0.02 * torch.randn(1, num_patches + 1, embed_dim))

    def forward(self, images):
        tokens = self.projection(patchify(images, self.patch_size))
        cls = self.cls_token.view(1, 1, -1).expand(tokens.shape[0], -1, -1)
        return torch.cat((cls, tokens), dim=1) + self.position_embedding


class PatchEmbeddingSinusoidalPositions(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        num_patches = (image_size // patch_size) ** 2
        self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)
        self.cls_token = nn.Parameter(0.02 * torch.randn(embed_dim))
        # the first workbook's fixed table, kept as a buffer instead of a learned parameter
        position = torch.arange(num_patches + 1).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, embed_dim, 2) * (-math.log(10000.0) / embed_dim))
        table = torch.zeros(1, num_patches + 1, embed_dim)
        table[0, :, 0::2] = torch.sin(position * frequency)
        table[0, :, 1::2] = torch.cos(position * frequency)
        self.register_buffer("position_embedding", table)

    def forward(self, images):
        tokens = self.projection(patchify(images, self.patch_size))
        cls = self.cls_token.view(1, 1, -1).expand(tokens.shape[0], -1, -1)
        return torch.cat((cls, tokens), dim=1) + self.position_embedding


class PatchEmbeddingPatchesNotSquared(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        num_patches = image_size // patch_size  # patches along one side, not the whole grid
        self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)
        self.cls_token = nn.Parameter(0.02 * torch.randn(embed_dim))
        self.position_embedding = nn.Parameter(0.02 * torch.randn(1, num_patches + 1, embed_dim))

    def forward(self, images):
        tokens = self.projection(patchify(images, self.patch_size))
        cls = self.cls_token.view(1, 1, -1).expand(tokens.shape[0], -1, -1)
        return torch.cat((cls, tokens), dim=1) + self.position_embedding


class PatchEmbeddingOneChannel(nn.Module):
    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        num_patches = (image_size // patch_size) ** 2
        self.projection = nn.Linear(patch_size ** 2, embed_dim)  # grey digits: one channel assumed
        self.cls_token = nn.Parameter(0.02 * torch.randn(embed_dim))
        self.position_embedding = nn.Parameter(0.02 * torch.randn(1, num_patches + 1, embed_dim))

    def forward(self, images):
        tokens = self.projection(patchify(images, self.patch_size))
        cls = self.cls_token.view(1, 1, -1).expand(tokens.shape[0], -1, -1)
        return torch.cat((cls, tokens), dim=1) + self.position_embedding


class PatchEmbeddingPatchSize2(PatchEmbedding):
    def forward(self, images):
        tokens = self.projection(patchify(images, 2))  # the notebook's patch size, hard-coded
        cls = self.cls_token.view(1, 1, -1).expand(tokens.shape[0], -1, -1)
        return torch.cat((cls, tokens), dim=1) + self.position_embedding


# ---------------------------------------------------------------------------------------------------------------
# Task 3 mistakes: VisionTransformer
# ---------------------------------------------------------------------------------------------------------------

class VisionTransformerMeanPool(VisionTransformer):
    def forward(self, images):
        x = self.patch_embedding(images)
        for block in self.blocks:
            x = block(x)
        return self.head(self.final_norm(x.mean(dim=1)))  # average of all tokens instead of [CLS]


class VisionTransformerLastToken(VisionTransformer):
    def forward(self, images):
        x = self.patch_embedding(images)
        for block in self.blocks:
            x = block(x)
        return self.head(self.final_norm(x[:, -1]))  # the last token, as a GPT reads out


class VisionTransformerNoFinalNorm(VisionTransformer):
    def forward(self, images):
        x = self.patch_embedding(images)
        for block in self.blocks:
            x = block(x)
        return self.head(x[:, 0])  # final_norm created but never applied


class VisionTransformerNormBeforeBlocks(VisionTransformer):
    def forward(self, images):
        x = self.final_norm(self.patch_embedding(images))  # normalised on the way in instead of before the head
        for block in self.blocks:
            x = block(x)
        return self.head(x[:, 0])


class VisionTransformerSoftmaxOutput(VisionTransformer):
    def forward(self, images):
        x = self.patch_embedding(images)
        for block in self.blocks:
            x = block(x)
        return torch.softmax(self.head(self.final_norm(x[:, 0])), dim=-1)  # probabilities, not logits


class VisionTransformerSharedBlock(VisionTransformer):
    def __init__(self, image_size, patch_size, in_channels, num_classes, embed_dim, num_heads, feedforward_dim,
                 num_layers, dropout=0.0):
        nn.Module.__init__(self)
        self.patch_embedding = PatchEmbedding(image_size, patch_size, in_channels, embed_dim)
        block = PreNormBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout)
        self.blocks = nn.ModuleList([block] * num_layers)  # the same block, num_layers times
        self.final_norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)


class VisionTransformerNoDropout(VisionTransformer):
    def __init__(self, image_size, patch_size, in_channels, num_classes, embed_dim, num_heads, feedforward_dim,
                 num_layers, dropout=0.0):
        nn.Module.__init__(self)
        self.patch_embedding = PatchEmbedding(image_size, patch_size, in_channels, embed_dim)
        self.blocks = nn.ModuleList(
            [PreNormBlock(embed_dim, num_heads, feedforward_dim) for _ in range(num_layers)])  # dropout not passed
        self.final_norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)


class VisionTransformerSwappedBlockArgs(VisionTransformer):
    def __init__(self, image_size, patch_size, in_channels, num_classes, embed_dim, num_heads, feedforward_dim,
                 num_layers, dropout=0.0):
        nn.Module.__init__(self)
        self.patch_embedding = PatchEmbedding(image_size, patch_size, in_channels, embed_dim)
        self.blocks = nn.ModuleList(
            [PreNormBlock(embed_dim, feedforward_dim, num_heads, dropout=dropout) for _ in range(num_layers)])
        self.final_norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)


class VisionTransformerDigitsOnly(VisionTransformer):
    def __init__(self, image_size, patch_size, in_channels, num_classes, embed_dim, num_heads, feedforward_dim,
                 num_layers, dropout=0.0):
        nn.Module.__init__(self)
        self.patch_embedding = PatchEmbedding(8, patch_size, 1, embed_dim)  # 8 x 8 grey digits hard-coded
        self.blocks = nn.ModuleList(
            [PreNormBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout) for _ in range(num_layers)])
        self.final_norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)


class VisionTransformerAttentionNotChained(VisionTransformer):
    def forward_attention(self, images):
        x = self.patch_embedding(images)
        maps = []
        for block in self.blocks:
            _, attention = block(x, return_attention=True)  # every block reads the embeddings, not the previous block
            maps.append(attention)
        return maps


class VisionTransformerAttentionReversed(VisionTransformer):
    def forward_attention(self, images):
        x = self.patch_embedding(images)
        maps = []
        for block in self.blocks:
            x, attention = block(x, return_attention=True)
            maps.insert(0, attention)  # last block first
        return maps


class VisionTransformerAttentionHeadMean(VisionTransformer):
    def forward_attention(self, images):
        x = self.patch_embedding(images)
        maps = []
        for block in self.blocks:
            x, attention = block(x, return_attention=True)
            maps.append(attention.mean(dim=1))  # heads averaged already: (B, T, T)
        return maps


class VisionTransformerAttentionLastOnly(VisionTransformer):
    def forward_attention(self, images):
        x = self.patch_embedding(images)
        for block in self.blocks:
            x, attention = block(x, return_attention=True)
        return [attention]  # only the map of the last block survives the loop


# ---------------------------------------------------------------------------------------------------------------
# Task 5 mistakes: attention_rollout
# ---------------------------------------------------------------------------------------------------------------

def attention_rollout_no_identity(attention_maps):
    result = None
    for weights in attention_maps:
        layer = weights.mean(dim=1)  # the residual path forgotten
        layer = layer / layer.sum(dim=-1, keepdim=True)
        result = layer if result is None else layer @ result
    return result


def attention_rollout_no_renormalise(attention_maps):
    result = None
    for weights in attention_maps:
        averaged = weights.mean(dim=1)
        layer = averaged + torch.eye(averaged.shape[-1], dtype=averaged.dtype, device=averaged.device)
        result = layer if result is None else layer @ result  # rows sum to 2, then 4, ...
    return result


def attention_rollout_right_multiply(attention_maps):
    result = None
    for weights in attention_maps:
        averaged = weights.mean(dim=1)
        layer = averaged + torch.eye(averaged.shape[-1], dtype=averaged.dtype, device=averaged.device)
        layer = layer / layer.sum(dim=-1, keepdim=True)
        result = layer if result is None else result @ layer  # later block on the right
    return result


def attention_rollout_max_heads(attention_maps):
    result = None
    for weights in attention_maps:
        fused = weights.max(dim=1).values  # the strongest head instead of the mean
        layer = fused + torch.eye(fused.shape[-1], dtype=fused.dtype, device=fused.device)
        layer = layer / layer.sum(dim=-1, keepdim=True)
        result = layer if result is None else layer @ result
    return result


def attention_rollout_column_normalise(attention_maps):
    result = None
    for weights in attention_maps:
        averaged = weights.mean(dim=1)
        layer = averaged + torch.eye(averaged.shape[-1], dtype=averaged.dtype, device=averaged.device)
        layer = layer / layer.sum(dim=1, keepdim=True)  # dim 1 of (B, T, T) is the rows' index: columns sum to 1
        result = layer if result is None else layer @ result
    return result


def attention_rollout_softmax_normalise(attention_maps):
    result = None
    for weights in attention_maps:
        averaged = weights.mean(dim=1)
        layer = averaged + torch.eye(averaged.shape[-1], dtype=averaged.dtype, device=averaged.device)
        layer = torch.softmax(layer, dim=-1)  # "normalise the rows" done with a softmax
        result = layer if result is None else layer @ result
    return result


def attention_rollout_inplace_identity(attention_maps):
    result = None
    for weights in attention_maps:
        weights += torch.eye(weights.shape[-1], dtype=weights.dtype, device=weights.device)  # edits the caller's maps
        layer = weights.mean(dim=1)
        layer = layer / layer.sum(dim=-1, keepdim=True)
        result = layer if result is None else layer @ result
    return result


def attention_rollout_detached(attention_maps):
    result = None
    for weights in attention_maps:
        averaged = weights.detach().mean(dim=1)  # only for the plot, so no gradients needed
        layer = averaged + torch.eye(averaged.shape[-1], dtype=averaged.dtype, device=averaged.device)
        layer = layer / layer.sum(dim=-1, keepdim=True)
        result = layer if result is None else layer @ result
    return result


def attention_rollout_cls_row(attention_maps):
    result = None
    for weights in attention_maps:
        averaged = weights.mean(dim=1)
        layer = averaged + torch.eye(averaged.shape[-1], dtype=averaged.dtype, device=averaged.device)
        layer = layer / layer.sum(dim=-1, keepdim=True)
        result = layer if result is None else layer @ result
    return result[:, 0]  # only [CLS]'s row, (B, T)


def attention_rollout_float32_identity(attention_maps):
    num_tokens = attention_maps[0].shape[-1]
    result = torch.eye(num_tokens)  # R_0 = I, created in the default dtype
    for weights in attention_maps:
        averaged = weights.mean(dim=1)
        layer = averaged + torch.eye(num_tokens)
        layer = layer / layer.sum(dim=-1, keepdim=True)
        result = layer @ result
    return result


def attention_rollout_batch_mean(attention_maps):
    result = None
    for weights in attention_maps:
        averaged = weights.mean(dim=0)  # averaged over the batch instead of the heads
        layer = averaged + torch.eye(averaged.shape[-1], dtype=averaged.dtype, device=averaged.device)
        layer = layer / layer.sum(dim=-1, keepdim=True)
        result = layer if result is None else layer @ result
    return result


# ---------------------------------------------------------------------------------------------------------------
# Correct variants
# ---------------------------------------------------------------------------------------------------------------

def patchify_einops(images, patch_size):
    height, width = images.shape[-2:]
    if height % patch_size or width % patch_size:
        raise ValueError(f"cannot cut {height} x {width} images into {patch_size} x {patch_size} patches")
    return einops.rearrange(images, "b c (h p1) (w p2) -> b (h w) (c p1 p2)", p1=patch_size, p2=patch_size)


def patchify_functional_unfold(images, patch_size):
    height, width = images.shape[-2:]
    if height % patch_size != 0 or width % patch_size != 0:
        raise ValueError(f"image of {height} x {width} pixels, patch size {patch_size}: not a multiple")
    columns = F.unfold(images, kernel_size=patch_size, stride=patch_size)  # (B, C p p, N), channel first, row-major
    return columns.transpose(1, 2)  # (B, N, C p p)


def patchify_tensor_unfold(images, patch_size):
    batch_size, channels, height, width = images.shape
    if height % patch_size != 0 or width % patch_size != 0:
        raise ValueError(f"image size {height}x{width} not divisible by patch size {patch_size}")
    grid = images.unfold(2, patch_size, patch_size).unfold(3, patch_size, patch_size)  # (B, C, h, w, p, p)
    grid = grid.permute(0, 2, 3, 1, 4, 5).contiguous()  # (B, h, w, C, p, p)
    return grid.view(batch_size, -1, channels * patch_size * patch_size)


class PatchEmbeddingSplitPositions(nn.Module):
    """[CLS] as (1, 1, D) zeros, its position and the patches' positions added separately, then joined."""

    def __init__(self, image_size, patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        grid = image_size // patch_size
        self.projection = nn.Linear(in_channels * patch_size * patch_size, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.position_embedding = nn.Parameter(torch.empty(1, grid * grid + 1, embed_dim))
        nn.init.trunc_normal_(self.position_embedding, std=0.02)

    def forward(self, images):
        patches = self.projection(patchify_einops(images, self.patch_size))  # (B, N, D)
        patches = patches + self.position_embedding[:, 1:]
        cls = (self.cls_token + self.position_embedding[:, :1]).repeat(patches.size(0), 1, 1)  # (B, 1, D)
        return torch.cat([cls, patches], dim=1)


class VisionTransformerNormAllTokens(VisionTransformer):
    """One shared pass for both methods; the final norm applied to every token, then [CLS] read."""

    def _encode(self, images, return_attention):
        x, maps = self.patch_embedding(images), []
        for index in range(len(self.blocks)):
            if return_attention:
                x, attention = self.blocks[index](x, return_attention=True)
                maps.append(attention)
            else:
                x = self.blocks[index](x)
        return x, maps

    def forward(self, images):
        x, _ = self._encode(images, return_attention=False)
        return self.head(self.final_norm(x))[:, 0]

    def forward_attention(self, images):
        return self._encode(images, return_attention=True)[1]


class PatchEmbeddingEinopsRepeat(PatchEmbedding):
    """[CLS] copied over the batch with einops.repeat; patches projected from the einops patchify."""

    def forward(self, images):
        tokens = self.projection(patchify_einops(images, self.patch_size))  # (B, N, D)
        cls = einops.repeat(self.cls_token, "d -> b 1 d", b=images.shape[0])  # (B, 1, D)
        return torch.cat([cls, tokens], dim=1) + self.position_embedding


class VisionTransformerAttentionTuple(VisionTransformer):
    """forward reuses the attention-returning path of the blocks and throws the maps away."""

    def forward(self, images):
        x = self.patch_embedding(images)
        for block in self.blocks:
            x, _ = block(x, return_attention=True)
        return self.head(self.final_norm(x)[:, 0, :])


def attention_rollout_half_identity(attention_maps):
    """0.5 W + 0.5 I needs no renormalising (rows of W sum to 1); R_0 = I in the input's dtype and device."""
    first = attention_maps[0]
    rollout = torch.eye(first.shape[-1], dtype=first.dtype, device=first.device).expand(first.shape[0], -1, -1)
    for attention in attention_maps:
        eye = torch.eye(attention.shape[-1], dtype=attention.dtype, device=attention.device)
        rollout = torch.bmm(0.5 * attention.mean(dim=1) + 0.5 * eye, rollout)
    return rollout


def attention_rollout_reversed_product(attention_maps):
    """The product written from the last block down, einops for the head mean, one normalisation at the end."""
    layers = []
    for attention in attention_maps:
        averaged = einops.reduce(attention, "b h q k -> b q k", "mean")
        layers.append(averaged + torch.eye(averaged.shape[-1], dtype=averaged.dtype, device=averaged.device))
    product = layers[-1]
    for layer in reversed(layers[:-1]):
        product = torch.einsum("bij,bjk->bik", product, layer)
    return product / product.sum(dim=-1, keepdim=True)


# ---------------------------------------------------------------------------------------------------------------
# The lists
# ---------------------------------------------------------------------------------------------------------------

MISTAKES = [
    dict(task=1, name="patchify_no_permute", objects={"patchify": patchify_no_permute},
         what="A single reshape of (B, C, H, W) to (B, N, C p p) runs along whole image rows, so each token mixes "
              "pixels of neighbouring patches; split H and W, permute, then flatten."),
    dict(task=1, name="patchify_column_major", objects={"patchify": patchify_column_major},
         what="The patches are numbered column by column (the w axis before the h axis), not row by row."),
    dict(task=1, name="patchify_channels_last", objects={"patchify": patchify_channels_last},
         what="Inside a patch the channel is the fastest axis (row, column, channel) instead of channel first, "
              "which only shows on images with more than one channel."),
    dict(task=1, name="patchify_transposed_patch", objects={"patchify": patchify_transposed_patch},
         what="Inside each patch the pixels are flattened column by column (the two within-patch axes swapped), "
              "so every patch is transposed."),
    dict(task=1, name="patchify_square_only", objects={"patchify": patchify_square_only},
         what="The number of patches per row is taken from the height for both sides, so non-square images fail."),
    dict(task=1, name="patchify_unfold_no_check", objects={"patchify": patchify_unfold_no_check},
         what="No ValueError when H or W is not a multiple of the patch size: unfold silently drops the leftover "
              "pixels."),
    dict(task=1, name="patchify_assert_check", objects={"patchify": patchify_assert_check},
         what="The size check is an assert, which raises AssertionError (and vanishes under python -O) instead of "
              "the ValueError asked for."),
    dict(task=1, name="patchify_batch_mixed", objects={"patchify": patchify_batch_mixed},
         what="The permute moves the batch axis behind the patch grid, so the final reshape mixes patches of "
              "different images into one sequence (only visible with B > 1)."),
    dict(task=1, name="patchify_image_size_8", objects={"patchify": patchify_image_size_8},
         what="The grid is hard-coded as 8 // p patches a side, so any image that is not 8 x 8 fails."),

    dict(task=2, name="embedding_cls_last", objects={"PatchEmbedding": PatchEmbeddingClsLast},
         what="[CLS] is concatenated after the patches instead of in front of them, at position N instead of 0."),
    dict(task=2, name="embedding_no_cls_position", objects={"PatchEmbedding": PatchEmbeddingNoClsPosition},
         what="The position table has N rows and is added to the patches only: [CLS] gets no position of its own "
              "(the table should be (1, N + 1, D))."),
    dict(task=2, name="embedding_positions_before_cls", objects={"PatchEmbedding": PatchEmbeddingPositionsBeforeCls},
         what="Positions 0..N-1 of the table are added to the patches before [CLS] is prepended, so every patch "
              "gets its neighbour's position and [CLS] none."),
    dict(task=2, name="embedding_cls_not_batched", objects={"PatchEmbedding": PatchEmbeddingClsNotBatched},
         what="The (1, 1, D) [CLS] token is concatenated without expanding it over the batch, so it only works for "
              "a batch of one image."),
    dict(task=2, name="embedding_cls_not_parameter", objects={"PatchEmbedding": PatchEmbeddingClsNotParameter},
         what="cls_token is a plain tensor, not an nn.Parameter, so it is never trained nor saved."),
    dict(task=2, name="embedding_sinusoidal_positions",
         objects={"PatchEmbedding": PatchEmbeddingSinusoidalPositions},
         what="The positions are the first workbook's fixed sinusoidal table in a buffer, not a learned "
              "nn.Parameter."),
    dict(task=2, name="embedding_patches_not_squared", objects={"PatchEmbedding": PatchEmbeddingPatchesNotSquared},
         what="num_patches is image_size // patch_size (one side of the grid) instead of its square, so the "
              "position table is too short."),
    dict(task=2, name="embedding_one_channel", objects={"PatchEmbedding": PatchEmbeddingOneChannel},
         what="The projection takes patch_size ** 2 inputs, ignoring in_channels, so colour images fail."),
    dict(task=2, name="embedding_patch_size_2", objects={"PatchEmbedding": PatchEmbeddingPatchSize2},
         what="forward calls patchify with a hard-coded patch size 2 instead of the patch_size given."),

    dict(task=3, name="vit_mean_pool", objects={"VisionTransformer": VisionTransformerMeanPool},
         what="The head reads the mean of all tokens instead of the [CLS] token's final state."),
    dict(task=3, name="vit_last_token", objects={"VisionTransformer": VisionTransformerLastToken},
         what="The head reads the last token x[:, -1] (a patch) instead of [CLS] at position 0."),
    dict(task=3, name="vit_no_final_norm", objects={"VisionTransformer": VisionTransformerNoFinalNorm},
         what="final_norm is created but never applied: the head reads the un-normalised [CLS] state."),
    dict(task=3, name="vit_norm_before_blocks", objects={"VisionTransformer": VisionTransformerNormBeforeBlocks},
         what="final_norm is applied to the embeddings before the blocks instead of to [CLS] after them."),
    dict(task=3, name="vit_softmax_output", objects={"VisionTransformer": VisionTransformerSoftmaxOutput},
         what="forward returns softmax probabilities instead of logits (cross-entropy applies its own softmax)."),
    dict(task=3, name="vit_shared_block", objects={"VisionTransformer": VisionTransformerSharedBlock},
         what="[block] * num_layers puts the same block in the list num_layers times, so all layers share weights."),
    dict(task=3, name="vit_dropout_not_passed", objects={"VisionTransformer": VisionTransformerNoDropout},
         what="The dropout argument is never passed to the blocks, so the model never drops anything."),
    dict(task=3, name="vit_swapped_block_args", objects={"VisionTransformer": VisionTransformerSwappedBlockArgs},
         what="PreNormBlock gets feedforward_dim and num_heads in swapped positions."),
    dict(task=3, name="vit_digits_only", objects={"VisionTransformer": VisionTransformerDigitsOnly},
         what="The patch embedding is built for 8 x 8 one-channel images whatever image_size and in_channels say."),
    dict(task=3, name="vit_attention_not_chained",
         objects={"VisionTransformer": VisionTransformerAttentionNotChained},
         what="forward_attention feeds every block the embeddings instead of the previous block's output, so "
              "maps after the first block are wrong."),
    dict(task=3, name="vit_attention_reversed", objects={"VisionTransformer": VisionTransformerAttentionReversed},
         what="forward_attention returns the maps last block first."),
    dict(task=3, name="vit_attention_head_mean", objects={"VisionTransformer": VisionTransformerAttentionHeadMean},
         what="forward_attention averages the heads itself and returns (B, T, T) maps instead of (B, H, T, T)."),
    dict(task=3, name="vit_attention_last_only", objects={"VisionTransformer": VisionTransformerAttentionLastOnly},
         what="forward_attention returns a list with only the last block's map instead of one map per block."),

    dict(task=5, name="rollout_no_identity", objects={"attention_rollout": attention_rollout_no_identity},
         what="The identity (the residual path) is not added before normalising, so each layer is just the "
              "head-averaged attention."),
    dict(task=5, name="rollout_no_renormalise", objects={"attention_rollout": attention_rollout_no_renormalise},
         what="W + I is not renormalised, so the rows of the result sum to 2^L instead of 1."),
    dict(task=5, name="rollout_right_multiply", objects={"attention_rollout": attention_rollout_right_multiply},
         what="The later block multiplies from the right (R A_l instead of A_l R)."),
    dict(task=5, name="rollout_max_heads", objects={"attention_rollout": attention_rollout_max_heads},
         what="The heads are fused with a max instead of the mean."),
    dict(task=5, name="rollout_column_normalise", objects={"attention_rollout": attention_rollout_column_normalise},
         what="W + I is divided by its column sums (sum over dim 1) instead of its row sums (dim -1)."),
    dict(task=5, name="rollout_softmax_normalise",
         objects={"attention_rollout": attention_rollout_softmax_normalise},
         what="The rows are renormalised with a softmax instead of dividing by their sums."),
    dict(task=5, name="rollout_inplace_identity", objects={"attention_rollout": attention_rollout_inplace_identity},
         what="The identity is added in place (+=) to the input maps, changing the caller's tensors."),
    dict(task=5, name="rollout_detached", objects={"attention_rollout": attention_rollout_detached},
         what="The maps are detached, so no gradient flows back through the rollout."),
    dict(task=5, name="rollout_cls_row", objects={"attention_rollout": attention_rollout_cls_row},
         what="Only [CLS]'s row (B, T) is returned instead of the whole (B, T, T) rollout."),
    dict(task=5, name="rollout_float32_identity", objects={"attention_rollout": attention_rollout_float32_identity},
         what="torch.eye is created without the maps' dtype and device, so float64 (or GPU) maps fail."),
    dict(task=5, name="rollout_batch_mean", objects={"attention_rollout": attention_rollout_batch_mean},
         what="The maps are averaged over dim 0 (the batch) instead of dim 1 (the heads)."),
]

VARIANTS = [
    dict(task=1, name="patchify_einops", objects={"patchify": patchify_einops},
         what="einops.rearrange with the pattern the notebook gives, plus the ValueError check."),
    dict(task=1, name="patchify_functional_unfold", objects={"patchify": patchify_functional_unfold},
         what="torch.nn.functional.unfold with kernel and stride p (channel-first, row-major columns), transposed."),
    dict(task=1, name="patchify_tensor_unfold", objects={"patchify": patchify_tensor_unfold},
         what="Tensor.unfold on the height and the width, a permute to (B, h, w, C, p, p), then view."),
    dict(task=2, name="embedding_split_positions", objects={"PatchEmbedding": PatchEmbeddingSplitPositions},
         what="[CLS] of shape (1, 1, D) initialised to zeros, positions added to [CLS] and to the patches "
              "separately before concatenating, repeat instead of expand."),
    dict(task=2, name="embedding_einops_repeat", objects={"PatchEmbedding": PatchEmbeddingEinopsRepeat},
         what="[CLS] repeated over the batch with einops.repeat, the patches cut with einops."),
    dict(task=3, name="vit_attention_tuple", objects={"VisionTransformer": VisionTransformerAttentionTuple},
         what="forward calls the blocks with return_attention=True and discards the maps; final norm on all "
              "tokens, then [CLS]."),
    dict(task=3, name="vit_norm_all_tokens", objects={"VisionTransformer": VisionTransformerNormAllTokens},
         what="A shared encoding helper; the final LayerNorm and head applied to every token, then [CLS] read "
              "(LayerNorm and Linear act per token, so this equals reading [CLS] first)."),
    dict(task=5, name="rollout_half_identity", objects={"attention_rollout": attention_rollout_half_identity},
         what="0.5 W + 0.5 I (rows already sum to 1, so no division needed), starting from R_0 = I, with bmm."),
    dict(task=5, name="rollout_reversed_product", objects={"attention_rollout": attention_rollout_reversed_product},
         what="The product built from the last block down with einsum, rows normalised once at the end (each "
              "W + I row sums to 2, so this is the same)."),
]
