"""Correct Tasks 1-4 answers written differently from the reference: the checks must accept every one.

Each is its own formulation (not a copy of the reference answer cells). The classes that build on an attention or a
LayerNorm take the reference's (a student's own earlier answers), passed in through make_* functions.
"""
import math

import torch
import torch.nn as nn


# ----- Task 1: LayerNorm ------------------------------------------------------------------------------

class LayerNormVarMean(nn.Module):
    """torch.var_mean with unbiased=False, eps kept as a buffer."""

    def __init__(self, embed_dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(embed_dim))
        self.bias = nn.Parameter(torch.zeros(embed_dim))
        self.register_buffer("eps", torch.tensor(eps))

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
        return self.weight * (x - mean) / (var + self.eps).sqrt() + self.bias


class LayerNormRsqrt(nn.Module):
    """rsqrt, parameters registered by name, an extra attribute, positional-only-looking signature."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.dim, self.epsilon = dim, eps
        self.register_parameter("weight", nn.Parameter(torch.full((dim,), 1.0)))
        self.register_parameter("bias", nn.Parameter(torch.zeros(dim)))

    def forward(self, inputs):
        centred = inputs - inputs.mean(-1, keepdim=True)
        return centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + self.epsilon) * self.weight + self.bias


class LayerNormVarianceAroundDetachedMean(nn.Module):
    """The variance measured around a detached copy of the mean: the same values and, as d var / d mean = 0 at the
    mean, the same gradients as torch's own (only a detached mean in the centring, or a detached variance, differ)."""

    def __init__(self, embed_dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(embed_dim))
        self.bias = nn.Parameter(torch.zeros(embed_dim))

    def forward(self, x):
        var = (x - x.mean(-1, keepdim=True).detach()).square().mean(-1, keepdim=True)
        return (x - x.mean(-1, keepdim=True)) / (var + self.eps).sqrt() * self.weight + self.bias


LAYER_NORMS = [LayerNormVarMean, LayerNormRsqrt, LayerNormVarianceAroundDetachedMean]


# ----- Task 2: masks ------------------------------------------------------------------------------------

def causal_mask_arange(seq_len, device=None):
    positions = torch.arange(seq_len, device=device)
    return positions[None, :] <= positions[:, None]


def causal_mask_not_triu(seq_len, device=None):
    return ~torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device), diagonal=1)


def padding_mask_unsqueeze(tokens, pad_id):
    return tokens.ne(pad_id).unsqueeze(1).unsqueeze(2)


def padding_mask_view(tokens, pad_id):
    batch_size, seq_len = tokens.shape
    return (tokens != pad_id).view(batch_size, 1, 1, seq_len)


def causal_mask_moved(seq_len, device=None):
    """Built on the CPU, then moved to the device asked for."""
    return torch.tril(torch.ones(seq_len, seq_len)).bool().to(device)


def causal_mask_from_indices(seq_len, device=None):
    """Filled through nonzero indexing: the device reaches torch through the factories only."""
    mask = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    rows, columns = torch.ones(seq_len, seq_len, device=device).tril().nonzero().unbind(1)
    mask[rows, columns] = True
    return mask


MASKS = [(causal_mask_arange, padding_mask_unsqueeze), (causal_mask_not_triu, padding_mask_view),
         (causal_mask_moved, padding_mask_unsqueeze), (causal_mask_from_indices, padding_mask_view)]


# ----- Task 3: MultiheadAttention ---------------------------------------------------------------------

class MultiheadAttentionEinsum(nn.Module):
    """einsum for scores and weighted values, masked_fill with the dtype's smallest value."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.q_proj, self.k_proj = nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, embed_dim)
        self.v_proj, self.o_proj = nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, embed_dim)

    def _heads(self, projected):
        batch_size, length, embed_dim = projected.shape
        return projected.reshape(batch_size, length, self.num_heads, embed_dim // self.num_heads)  # (B, L, H, d)

    def forward(self, x, context=None, mask=None, return_attention=False):
        source = x if context is None else context
        query = self._heads(self.q_proj(x))
        key, value = self._heads(self.k_proj(source)), self._heads(self.v_proj(source))
        scores = torch.einsum("bqhd,bkhd->bhqk", query, key) / math.sqrt(query.size(-1))
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        attention = scores.softmax(dim=-1)
        merged = torch.einsum("bhqk,bkhd->bqhd", attention, value).flatten(2)  # (B, L_q, D)
        outputs = self.o_proj(merged)
        return (outputs, attention) if return_attention else outputs


class MultiheadAttentionFused(nn.Module):
    """Heads folded into the batch axis, (B * H, L, d), with torch.bmm; the mask expanded to every head."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            setattr(self, name, nn.Linear(embed_dim, embed_dim))
        self.scale = (embed_dim // num_heads) ** -0.5

    def _fold(self, projected):
        batch_size, length, _ = projected.shape
        split = projected.view(batch_size, length, self.num_heads, -1).permute(0, 2, 1, 3)  # (B, H, L, d)
        return split.reshape(batch_size * self.num_heads, length, -1)  # (B * H, L, d)

    def forward(self, x, context=None, mask=None, return_attention=False):
        context = x if context is None else context
        batch_size, query_len, key_len = x.size(0), x.size(1), context.size(1)
        scores = torch.bmm(self._fold(self.q_proj(x)) * self.scale, self._fold(self.k_proj(context)).transpose(1, 2))
        scores = scores.view(batch_size, self.num_heads, query_len, key_len)
        if mask is not None:
            scores = torch.where(mask.expand(batch_size, self.num_heads, query_len, key_len), scores,
                                 torch.tensor(float("-inf"), dtype=scores.dtype))
        attention = torch.softmax(scores, dim=-1)  # (B, H, L_q, L_k)
        heads = torch.bmm(attention.reshape(-1, query_len, key_len), self._fold(self.v_proj(context)))
        merged = heads.view(batch_size, self.num_heads, query_len, -1).transpose(1, 2).reshape(
            batch_size, query_len, self.embed_dim)
        outputs = self.o_proj(merged)
        return (outputs, attention) if return_attention else outputs


MULTIHEADS = [MultiheadAttentionEinsum, MultiheadAttentionFused]


# ----- Task 4: DecoderBlock ---------------------------------------------------------------------------

def make_decoder_blocks(MultiheadAttention, LayerNorm):
    """Two correct decoder blocks built on the given (correct) attention and LayerNorm classes."""

    class DecoderBlockSublayers(nn.Module):
        """A helper method for the residual sub-layers, separate dropouts and an extra attribute."""

        def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.ReLU, dropout=0.0):
            super().__init__()
            self.self_attention = MultiheadAttention(embed_dim, num_heads)
            self.cross_attention = MultiheadAttention(embed_dim, num_heads)
            self.feedforward = nn.Sequential(nn.Linear(embed_dim, feedforward_dim), activation(),
                                             nn.Linear(feedforward_dim, embed_dim))
            self.norm1 = LayerNorm(embed_dim)
            self.norm2 = LayerNorm(embed_dim)
            self.norm3 = LayerNorm(embed_dim)
            self.dropout = nn.Dropout(dropout)
            self.dropouts = nn.ModuleList(nn.Dropout(dropout) for _ in range(3))
            self.sizes = (embed_dim, num_heads, feedforward_dim)

        def _add(self, norm, x, sublayer_output, index):
            return norm(x + self.dropouts[index](sublayer_output))

        def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
            attended, self_weights = self.self_attention(x, x, self_mask, True)
            x = self._add(self.norm1, x, attended, 0)
            attended, cross_weights = self.cross_attention(x, memory, memory_mask, True)
            x = self._add(self.norm2, x, attended, 1)
            x = self._add(self.norm3, x, self.feedforward(x), 2)
            if return_attention:
                return x, self_weights, cross_weights
            return x

    class DecoderBlockDropoutInside(nn.Module):
        """Dropout also inside the feed-forward network, modules created in another order, keyword calls."""

        def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.ReLU, dropout=0.0):
            super().__init__()
            self.norm3, self.norm2, self.norm1 = (LayerNorm(embed_dim) for _ in range(3))
            self.dropout = nn.Dropout(p=dropout)
            self.feedforward = nn.Sequential(nn.Linear(embed_dim, feedforward_dim), activation(), nn.Dropout(dropout),
                                             nn.Linear(feedforward_dim, embed_dim))
            self.cross_attention = MultiheadAttention(embed_dim, num_heads)
            self.self_attention = MultiheadAttention(embed_dim, num_heads)

        def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
            h, self_weights = self.self_attention(x=x, context=None, mask=self_mask, return_attention=True)
            h = self.norm1(self.dropout(h) + x)
            c, cross_weights = self.cross_attention(x=h, context=memory, mask=memory_mask, return_attention=True)
            c = self.norm2(self.dropout(c) + h)
            out = self.norm3(self.dropout(self.feedforward(c)) + c)
            return (out, self_weights, cross_weights) if return_attention else out

    return [DecoderBlockSublayers, DecoderBlockDropoutInside]
