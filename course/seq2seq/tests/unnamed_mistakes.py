"""Held-out student answers for the seq2seq workbook: correct bases, realistic mistakes and valid variants.

Written from the student notebook's text and skeletons only (never from the checks or the grader). Each mistake
is one change from the correct base of its task; each variant is a correct answer written another way.
"""
import math

import torch
import torch.nn as nn


# ----------------------------------------------------------------------------------------------------------------
# Given code (read-only cells of the notebook), copied as the student has it.
# ----------------------------------------------------------------------------------------------------------------
def scaled_softmax_attention(query, key, value, mask=None):
    """Scaled dot-product attention of queries over keys and values (given)."""
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # (..., L_q, L_k)
    if mask is not None:
        scores = scores.masked_fill(~mask.bool(), float("-inf"))  # a row with every key masked would give NaN
    attention = torch.softmax(scores, dim=-1)  # (..., L_q, L_k)
    return attention @ value, attention  # (..., L_q, D_v), (..., L_q, L_k)


class PositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal position table to a batch of token embeddings (given)."""

    def __init__(self, embed_dim, max_len=5000):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)  # (max_len, 1)
        frequency = 10000.0 ** (-torch.arange(0, embed_dim, 2) / embed_dim)  # (ceil(D / 2),)
        angle = position * frequency  # (max_len, ceil(D / 2))
        pe = torch.zeros(max_len, embed_dim)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle[:, : embed_dim // 2])
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)  # (1, max_len, D)

    def forward(self, x):
        """x (B, L, D) -> x + pe[:, :L], (B, L, D)."""
        return x + self.pe[:, : x.size(1)]


# ================================================================================================================
# Task 1: LayerNorm
# ================================================================================================================
class LayerNorm(nn.Module):
    """Layer normalisation over the last axis, with a learned per-feature scale and shift."""

    def __init__(self, embed_dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(embed_dim))
        self.bias = nn.Parameter(torch.zeros(embed_dim))
        self.eps = eps

    def forward(self, x):
        """x (..., D) -> (..., D)."""
        mu = x.mean(-1, keepdim=True)
        sigma2 = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(sigma2 + self.eps) * self.weight + self.bias


class LayerNormUnbiasedVar(LayerNorm):
    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        sigma2 = x.var(-1, keepdim=True)  # unbiased: divides by D - 1
        return (x - mu) / torch.sqrt(sigma2 + self.eps) * self.weight + self.bias


class LayerNormEpsOutsideSqrt(LayerNorm):
    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        sigma2 = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / (torch.sqrt(sigma2) + self.eps) * self.weight + self.bias


class LayerNormStatsOverSequence(LayerNorm):
    def forward(self, x):
        mu = x.mean(1, keepdim=True)  # thought of axis 1 as the features
        sigma2 = ((x - mu) ** 2).mean(1, keepdim=True)
        return (x - mu) / torch.sqrt(sigma2 + self.eps) * self.weight + self.bias


class LayerNormNoShift(LayerNorm):
    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        sigma2 = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(sigma2 + self.eps) * self.weight  # bias forgotten


class LayerNormRandomGamma(LayerNorm):
    def __init__(self, embed_dim, eps=1e-5):
        nn.Module.__init__(self)
        self.weight = nn.Parameter(torch.randn(embed_dim))
        self.bias = nn.Parameter(torch.zeros(embed_dim))
        self.eps = eps


class LayerNormIgnoresEpsArgument(LayerNorm):
    def __init__(self, embed_dim, eps=1e-5):
        nn.Module.__init__(self)
        self.weight = nn.Parameter(torch.ones(embed_dim))
        self.bias = nn.Parameter(torch.zeros(embed_dim))
        self.eps = 1e-5  # the argument is ignored


class LayerNormVarRsqrt(nn.Module):
    """Variant: torch.var(unbiased=False) and rsqrt."""

    def __init__(self, embed_dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.bias = nn.Parameter(torch.zeros(embed_dim))
        self.weight = nn.Parameter(torch.ones(embed_dim))

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
        return torch.addcmul(self.bias, (x - mean) * torch.rsqrt(var + self.eps), self.weight)


# ================================================================================================================
# Task 2: masks
# ================================================================================================================
def causal_mask(seq_len, device=None):
    """(L, L) bool, True where j <= i."""
    return torch.tril(torch.ones(seq_len, seq_len, device=device)).bool()


def padding_mask(tokens, pad_id):
    """tokens (B, L) -> (B, 1, 1, L) bool."""
    return (tokens != pad_id).unsqueeze(1).unsqueeze(2)


def causal_mask_upper(seq_len, device=None):
    return torch.triu(torch.ones(seq_len, seq_len, device=device)).bool()


def causal_mask_strict(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, device=device), diagonal=-1).bool()


def causal_mask_additive(seq_len, device=None):
    # the "additive" convention of other tutorials: 0 where allowed, -inf where hidden
    upper = torch.triu(torch.ones(seq_len, seq_len, device=device), diagonal=1).bool()
    return torch.zeros(seq_len, seq_len, device=device).masked_fill(upper, float("-inf"))


def causal_mask_on_cpu(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len)).bool()  # device argument ignored


def padding_mask_flipped(tokens, pad_id):
    return (tokens == pad_id).unsqueeze(1).unsqueeze(2)


def padding_mask_over_queries(tokens, pad_id):
    return (tokens != pad_id)[:, None, :, None]  # (B, 1, L, 1): hides padded queries, not keys


def padding_mask_pad_zero(tokens, pad_id):
    return (tokens != 0).unsqueeze(1).unsqueeze(2)  # pad id hard-coded


def padding_mask_three_dims(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1)  # (B, 1, L): one singleton axis short


def causal_mask_arange(seq_len, device=None):
    """Variant: compare index grids."""
    index = torch.arange(seq_len, device=device)
    return index[None, :] <= index[:, None]


def padding_mask_view(tokens, pad_id):
    """Variant: ne + view."""
    return tokens.ne(pad_id).view(tokens.size(0), 1, 1, tokens.size(1))


def causal_mask_not_triu(seq_len, device=None):
    """Variant: complement of the strict upper triangle."""
    return ~torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).triu(1)


# ================================================================================================================
# Task 3: MultiheadAttention
# ================================================================================================================
class MultiheadAttention(nn.Module):
    """Multi-head attention: queries from x, keys and values from a context (x by default)."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        assert embed_dim % num_heads == 0, "embed_dim must be divisible by num_heads"
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.o_proj = nn.Linear(embed_dim, embed_dim)

    def _split(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, L, head_dim)

    def forward(self, x, context=None, mask=None, return_attention=False):
        if context is None:
            context = x
        b, lq, _ = x.shape
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(context))
        v = self._split(self.v_proj(context))
        out, attn = scaled_softmax_attention(q, k, v, mask)  # (B, H, L_q, head_dim)
        out = out.transpose(1, 2).contiguous().view(b, lq, self.embed_dim)
        out = self.o_proj(out)
        if return_attention:
            return out, attn
        return out


class MHAValueFromX(MultiheadAttention):
    def forward(self, x, context=None, mask=None, return_attention=False):
        if context is None:
            context = x
        b, lq, _ = x.shape
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(context))
        v = self._split(self.v_proj(x))  # copy-paste: values from x instead of the context
        out, attn = scaled_softmax_attention(q, k, v, mask)
        out = out.transpose(1, 2).contiguous().view(b, lq, self.embed_dim)
        out = self.o_proj(out)
        if return_attention:
            return out, attn
        return out


class MHAMergeWithKeyLength(MultiheadAttention):
    def forward(self, x, context=None, mask=None, return_attention=False):
        if context is None:
            context = x
        b, _, _ = x.shape
        lk = context.size(1)
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(context))
        v = self._split(self.v_proj(context))
        out, attn = scaled_softmax_attention(q, k, v, mask)
        out = out.transpose(1, 2).contiguous().view(b, lk, self.embed_dim)  # L_k where L_q belongs
        out = self.o_proj(out)
        if return_attention:
            return out, attn
        return out


class MHASplitWithoutTranspose(MultiheadAttention):
    def _split(self, t):
        b, n, _ = t.shape
        return t.view(b, self.num_heads, n, self.head_dim)  # reinterprets memory instead of moving the head axis


class MHAMergeWithoutTranspose(MultiheadAttention):
    def forward(self, x, context=None, mask=None, return_attention=False):
        if context is None:
            context = x
        b, lq, _ = x.shape
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(context))
        v = self._split(self.v_proj(context))
        out, attn = scaled_softmax_attention(q, k, v, mask)
        out = out.reshape(b, lq, self.embed_dim)  # (B, H, L_q, hd) reshaped directly: heads and positions mixed
        out = self.o_proj(out)
        if return_attention:
            return out, attn
        return out


class MHANoOutputProjection(MultiheadAttention):
    def forward(self, x, context=None, mask=None, return_attention=False):
        if context is None:
            context = x
        b, lq, _ = x.shape
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(context))
        v = self._split(self.v_proj(context))
        out, attn = scaled_softmax_attention(q, k, v, mask)
        out = out.transpose(1, 2).contiguous().view(b, lq, self.embed_dim)  # o_proj never applied
        if return_attention:
            return out, attn
        return out


class MHAIgnoresMask(MultiheadAttention):
    def forward(self, x, context=None, mask=None, return_attention=False):
        if context is None:
            context = x
        b, lq, _ = x.shape
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(context))
        v = self._split(self.v_proj(context))
        out, attn = scaled_softmax_attention(q, k, v)  # mask not passed on
        out = out.transpose(1, 2).contiguous().view(b, lq, self.embed_dim)
        out = self.o_proj(out)
        if return_attention:
            return out, attn
        return out


class MHAAveragedWeights(MultiheadAttention):
    def forward(self, x, context=None, mask=None, return_attention=False):
        if context is None:
            context = x
        b, lq, _ = x.shape
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(context))
        v = self._split(self.v_proj(context))
        out, attn = scaled_softmax_attention(q, k, v, mask)
        out = out.transpose(1, 2).contiguous().view(b, lq, self.embed_dim)
        out = self.o_proj(out)
        if return_attention:
            return out, attn.mean(dim=1)  # (B, L_q, L_k), like nn.MultiheadAttention's default
        return out


class MHAScaleByEmbedDim(MultiheadAttention):
    def forward(self, x, context=None, mask=None, return_attention=False):
        if context is None:
            context = x
        b, lq, _ = x.shape
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(context))
        v = self._split(self.v_proj(context))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.embed_dim)  # own attention, scaled by sqrt(D)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        attn = scores.softmax(-1)
        out = (attn @ v).transpose(1, 2).contiguous().view(b, lq, self.embed_dim)
        out = self.o_proj(out)
        if return_attention:
            return out, attn
        return out


class MHAMaskUnsqueezedForHeads(MultiheadAttention):
    def forward(self, x, context=None, mask=None, return_attention=False):
        if context is None:
            context = x
        b, lq, _ = x.shape
        q = self._split(self.q_proj(x))
        k = self._split(self.k_proj(context))
        v = self._split(self.v_proj(context))
        if mask is not None:
            mask = mask.unsqueeze(1)  # "add the head axis", although every given mask already broadcasts
        out, attn = scaled_softmax_attention(q, k, v, mask)
        out = out.transpose(1, 2).contiguous().view(b, lq, self.embed_dim)
        out = self.o_proj(out)
        if return_attention:
            return out, attn
        return out


class MHAEinsum(nn.Module):
    """Variant: einsum per-head projections, own softmax with a large negative fill, flatten/unflatten."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        assert embed_dim % num_heads == 0, "embed_dim must be divisible by num_heads"
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.o_proj = nn.Linear(embed_dim, embed_dim)  # created first: a different creation order is fine
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x, context=None, mask=None, return_attention=False):
        context = x if context is None else context
        q = self.q_proj(x).unflatten(-1, (self.num_heads, self.head_dim))  # (B, L_q, H, hd)
        k = self.k_proj(context).unflatten(-1, (self.num_heads, self.head_dim))  # (B, L_k, H, hd)
        v = self.v_proj(context).unflatten(-1, (self.num_heads, self.head_dim))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * self.head_dim ** -0.5
        if mask is not None:
            scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)  # (B, H, L_q, L_k)
        out = torch.einsum("bhqk,bkhd->bqhd", weights, v).flatten(-2)  # (B, L_q, D)
        out = self.o_proj(out)
        return (out, weights) if return_attention else out


class MHAHeadLoop(MultiheadAttention):
    """Variant: a Python loop over heads, slicing the projected features."""

    def forward(self, x, context=None, mask=None, return_attention=False):
        context = x if context is None else context
        q, k, v = self.q_proj(x), self.k_proj(context), self.v_proj(context)
        outs, weights = [], []
        for h in range(self.num_heads):
            part = slice(h * self.head_dim, (h + 1) * self.head_dim)
            head_mask = mask
            if mask is not None and mask.dim() == 4:  # (B, 1|H, L_q|1, L_k): pick this head's slice
                head_mask = mask[:, h if mask.size(1) > 1 else 0]
            out, w = scaled_softmax_attention(q[..., part], k[..., part], v[..., part], head_mask)
            outs.append(out)
            weights.append(w)
        out = self.o_proj(torch.cat(outs, dim=-1))
        attention = torch.stack(weights, dim=1)  # (B, H, L_q, L_k)
        return (out, attention) if return_attention else out


# ================================================================================================================
# Task 4: DecoderBlock
# ================================================================================================================
class DecoderBlock(nn.Module):
    """Post-norm decoder block: causal self-attention, cross-attention to the memory, feed-forward."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.ReLU, dropout=0.0):
        super().__init__()
        self.self_attention = MultiheadAttention(embed_dim, num_heads)
        self.cross_attention = MultiheadAttention(embed_dim, num_heads)
        self.feedforward = nn.Sequential(
            nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))
        self.norm1 = LayerNorm(embed_dim)
        self.norm2 = LayerNorm(embed_dim)
        self.norm3 = LayerNorm(embed_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
        sa, sa_w = self.self_attention(x, mask=self_mask, return_attention=True)
        x = self.norm1(x + self.dropout(sa))
        ca, ca_w = self.cross_attention(x, context=memory, mask=memory_mask, return_attention=True)
        x = self.norm2(x + self.dropout(ca))
        ff = self.feedforward(x)
        x = self.norm3(x + self.dropout(ff))
        if return_attention:
            return x, sa_w, ca_w
        return x


class DecoderBlockNoCrossResidual(DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
        sa, sa_w = self.self_attention(x, mask=self_mask, return_attention=True)
        x = self.norm1(x + self.dropout(sa))
        ca, ca_w = self.cross_attention(x, context=memory, mask=memory_mask, return_attention=True)
        x = self.norm2(self.dropout(ca))  # residual path dropped
        ff = self.feedforward(x)
        x = self.norm3(x + self.dropout(ff))
        if return_attention:
            return x, sa_w, ca_w
        return x


class DecoderBlockMasksSwapped(DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
        sa, sa_w = self.self_attention(x, mask=memory_mask, return_attention=True)
        x = self.norm1(x + self.dropout(sa))
        ca, ca_w = self.cross_attention(x, context=memory, mask=self_mask, return_attention=True)
        x = self.norm2(x + self.dropout(ca))
        ff = self.feedforward(x)
        x = self.norm3(x + self.dropout(ff))
        if return_attention:
            return x, sa_w, ca_w
        return x


class DecoderBlockSharedAttention(DecoderBlock):
    def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.ReLU, dropout=0.0):
        nn.Module.__init__(self)
        self.self_attention = self.cross_attention = MultiheadAttention(embed_dim, num_heads)  # one module, twice
        self.feedforward = nn.Sequential(
            nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))
        self.norm1 = LayerNorm(embed_dim)
        self.norm2 = LayerNorm(embed_dim)
        self.norm3 = LayerNorm(embed_dim)
        self.dropout = nn.Dropout(dropout)


class DecoderBlockPreNorm(DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
        sa, sa_w = self.self_attention(self.norm1(x), mask=self_mask, return_attention=True)
        x = x + self.dropout(sa)
        ca, ca_w = self.cross_attention(self.norm2(x), context=memory, mask=memory_mask, return_attention=True)
        x = x + self.dropout(ca)
        x = x + self.dropout(self.feedforward(self.norm3(x)))
        if return_attention:
            return x, sa_w, ca_w
        return x


class DecoderBlockQueriesFromMemory(DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
        sa, sa_w = self.self_attention(x, mask=self_mask, return_attention=True)
        x = self.norm1(x + self.dropout(sa))
        ca, ca_w = self.cross_attention(memory, context=x, mask=memory_mask, return_attention=True)  # roles swapped
        x = self.norm2(x + self.dropout(ca))
        ff = self.feedforward(x)
        x = self.norm3(x + self.dropout(ff))
        if return_attention:
            return x, sa_w, ca_w
        return x


class DecoderBlockCrossOnBlockInput(DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
        sa, sa_w = self.self_attention(x, mask=self_mask, return_attention=True)
        h = self.norm1(x + self.dropout(sa))
        ca, ca_w = self.cross_attention(x, context=memory, mask=memory_mask, return_attention=True)  # x, not h
        h = self.norm2(h + self.dropout(ca))
        ff = self.feedforward(h)
        h = self.norm3(h + self.dropout(ff))
        if return_attention:
            return h, sa_w, ca_w
        return h


class DecoderBlockNoFeedforwardDropout(DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
        sa, sa_w = self.self_attention(x, mask=self_mask, return_attention=True)
        x = self.norm1(x + self.dropout(sa))
        ca, ca_w = self.cross_attention(x, context=memory, mask=memory_mask, return_attention=True)
        x = self.norm2(x + self.dropout(ca))
        x = self.norm3(x + self.feedforward(x))  # dropout forgotten on the feed-forward output
        if return_attention:
            return x, sa_w, ca_w
        return x


class DecoderBlockWeightsSwapped(DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
        sa, sa_w = self.self_attention(x, mask=self_mask, return_attention=True)
        x = self.norm1(x + self.dropout(sa))
        ca, ca_w = self.cross_attention(x, context=memory, mask=memory_mask, return_attention=True)
        x = self.norm2(x + self.dropout(ca))
        ff = self.feedforward(x)
        x = self.norm3(x + self.dropout(ff))
        if return_attention:
            return x, ca_w, sa_w  # cross weights first
        return x


class DecoderBlockOneNormReused(DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
        sa, sa_w = self.self_attention(x, mask=self_mask, return_attention=True)
        x = self.norm1(x + self.dropout(sa))
        ca, ca_w = self.cross_attention(x, context=memory, mask=memory_mask, return_attention=True)
        x = self.norm1(x + self.dropout(ca))  # norm1 reused; norm2 and norm3 are never used
        ff = self.feedforward(x)
        x = self.norm1(x + self.dropout(ff))
        if return_attention:
            return x, sa_w, ca_w
        return x


class DecoderBlockSublayerHelper(nn.Module):
    """Variant: layers created in another order, a helper for the residual-dropout-norm step."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.ReLU, dropout=0.0):
        super().__init__()
        self.norm1, self.norm2, self.norm3 = (LayerNorm(embed_dim) for _ in range(3))
        self.dropout = nn.Dropout(dropout)
        self.feedforward = nn.Sequential(
            nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))
        self.cross_attention = MultiheadAttention(embed_dim, num_heads)
        self.self_attention = MultiheadAttention(embed_dim, num_heads)

    def _add_norm(self, norm, x, sublayer_out):
        return norm(x + self.dropout(sublayer_out))

    def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
        out, self_weights = self.self_attention(x, None, self_mask, True)
        x = self._add_norm(self.norm1, x, out)
        out, cross_weights = self.cross_attention(x, memory, memory_mask, True)
        x = self._add_norm(self.norm2, x, out)
        x = self._add_norm(self.norm3, x, self.feedforward(x))
        return (x, self_weights, cross_weights) if return_attention else x


# ================================================================================================================
# Given: EncoderBlock (copied from the read-only cell; uses this module's LayerNorm and MultiheadAttention)
# ================================================================================================================
class EncoderBlock(nn.Module):
    """Post-norm encoder block: self-attention and feed-forward, each with residual and LayerNorm."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.ReLU, dropout=0.0):
        super().__init__()
        self.attention = MultiheadAttention(embed_dim, num_heads)
        self.feedforward = nn.Sequential(
            nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))
        self.norm1, self.norm2 = LayerNorm(embed_dim), LayerNorm(embed_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None, return_attention=False):
        """x (B, L, D) -> (B, L, D) [, attention (B, H, L, L)]."""
        attended, attention = self.attention(x, mask=mask, return_attention=True)  # (B, L, D), (B, H, L, L)
        x = self.norm1(x + self.dropout(attended))
        x = self.norm2(x + self.dropout(self.feedforward(x)))
        return (x, attention) if return_attention else x


# ================================================================================================================
# Task 5: Seq2SeqTransformer
# ================================================================================================================
class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder Transformer over one shared token vocabulary (PAD, BOS and EOS included)."""

    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_encoder_layers, num_decoder_layers,
                 max_len=512, activation=nn.ReLU, dropout=0.0, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embed_dim = embed_dim
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.positional_encoding = PositionalEncoding(embed_dim, max_len)
        self.encoder = nn.ModuleList([
            EncoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout)
            for _ in range(num_encoder_layers)])
        self.decoder = nn.ModuleList([
            DecoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout)
            for _ in range(num_decoder_layers)])
        self.output = nn.Linear(embed_dim, vocab_size)

    def embed(self, tokens):
        return self.positional_encoding(self.embedding(tokens) * math.sqrt(self.embed_dim))

    def encode(self, source, attention=None):
        src_mask = padding_mask(source, self.pad_id)
        x = self.embed(source)
        for layer in self.encoder:
            x, w = layer(x, mask=src_mask, return_attention=True)
            if attention is not None:
                attention.append(w)
        return x

    def decode(self, target_input, memory, source, attention=None):
        tgt_mask = causal_mask(target_input.size(1), device=target_input.device)
        mem_mask = padding_mask(source, self.pad_id)
        x = self.embed(target_input)
        for layer in self.decoder:
            x, sw, cw = layer(x, memory, self_mask=tgt_mask, memory_mask=mem_mask, return_attention=True)
            if attention is not None:
                attention["decoder_self"].append(sw)
                attention["decoder_cross"].append(cw)
        return self.output(x)

    def forward(self, source, target_input):
        memory = self.encode(source)
        return self.decode(target_input, memory, source)

    def forward_attention(self, source, target_input):
        attention = {"encoder": [], "decoder_self": [], "decoder_cross": []}
        memory = self.encode(source, attention=attention["encoder"])
        self.decode(target_input, memory, source, attention=attention)
        return attention


class Seq2SeqNoEmbeddingScale(Seq2SeqTransformer):
    def embed(self, tokens):
        return self.positional_encoding(self.embedding(tokens))  # sqrt(D) scaling forgotten


class Seq2SeqScaleAfterPositions(Seq2SeqTransformer):
    def embed(self, tokens):
        return self.positional_encoding(self.embedding(tokens)) * math.sqrt(self.embed_dim)  # positions scaled too


class Seq2SeqNoCausalMask(Seq2SeqTransformer):
    def decode(self, target_input, memory, source, attention=None):
        mem_mask = padding_mask(source, self.pad_id)
        x = self.embed(target_input)
        for layer in self.decoder:
            x, sw, cw = layer(x, memory, self_mask=None, memory_mask=mem_mask, return_attention=True)
            if attention is not None:
                attention["decoder_self"].append(sw)
                attention["decoder_cross"].append(cw)
        return self.output(x)


class Seq2SeqNoMemoryMask(Seq2SeqTransformer):
    def decode(self, target_input, memory, source, attention=None):
        tgt_mask = causal_mask(target_input.size(1), device=target_input.device)
        x = self.embed(target_input)
        for layer in self.decoder:
            x, sw, cw = layer(x, memory, self_mask=tgt_mask, return_attention=True)  # source padding visible
            if attention is not None:
                attention["decoder_self"].append(sw)
                attention["decoder_cross"].append(cw)
        return self.output(x)


class Seq2SeqEncoderNoPaddingMask(Seq2SeqTransformer):
    def encode(self, source, attention=None):
        x = self.embed(source)
        for layer in self.encoder:
            x, w = layer(x, return_attention=True)  # encoder attends to PAD keys
            if attention is not None:
                attention.append(w)
        return x


class Seq2SeqRepeatedBlocks(Seq2SeqTransformer):
    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_encoder_layers, num_decoder_layers,
                 max_len=512, activation=nn.ReLU, dropout=0.0, pad_id=0):
        nn.Module.__init__(self)
        self.pad_id = pad_id
        self.embed_dim = embed_dim
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.positional_encoding = PositionalEncoding(embed_dim, max_len)
        # list multiplication: the same block object repeated, so all layers share their weights
        self.encoder = nn.ModuleList(
            [EncoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout)] * num_encoder_layers)
        self.decoder = nn.ModuleList(
            [DecoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout)] * num_decoder_layers)
        self.output = nn.Linear(embed_dim, vocab_size)


class Seq2SeqNoPaddingIdx(Seq2SeqTransformer):
    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_encoder_layers, num_decoder_layers,
                 max_len=512, activation=nn.ReLU, dropout=0.0, pad_id=0):
        nn.Module.__init__(self)
        self.pad_id = pad_id
        self.embed_dim = embed_dim
        self.embedding = nn.Embedding(vocab_size, embed_dim)  # padding_idx forgotten
        self.positional_encoding = PositionalEncoding(embed_dim, max_len)
        self.encoder = nn.ModuleList([
            EncoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout)
            for _ in range(num_encoder_layers)])
        self.decoder = nn.ModuleList([
            DecoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout)
            for _ in range(num_decoder_layers)])
        self.output = nn.Linear(embed_dim, vocab_size)


class Seq2SeqDropoutNotPassed(Seq2SeqTransformer):
    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_encoder_layers, num_decoder_layers,
                 max_len=512, activation=nn.ReLU, dropout=0.0, pad_id=0):
        nn.Module.__init__(self)
        self.pad_id = pad_id
        self.embed_dim = embed_dim
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.positional_encoding = PositionalEncoding(embed_dim, max_len)
        self.encoder = nn.ModuleList([
            EncoderBlock(embed_dim, num_heads, feedforward_dim, activation)  # dropout left at its default 0
            for _ in range(num_encoder_layers)])
        self.decoder = nn.ModuleList([
            DecoderBlock(embed_dim, num_heads, feedforward_dim, activation)
            for _ in range(num_decoder_layers)])
        self.output = nn.Linear(embed_dim, vocab_size)


class Seq2SeqActivationNotPassed(Seq2SeqTransformer):
    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_encoder_layers, num_decoder_layers,
                 max_len=512, activation=nn.ReLU, dropout=0.0, pad_id=0):
        nn.Module.__init__(self)
        self.pad_id = pad_id
        self.embed_dim = embed_dim
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.positional_encoding = PositionalEncoding(embed_dim, max_len)
        self.encoder = nn.ModuleList([
            EncoderBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout)  # always ReLU
            for _ in range(num_encoder_layers)])
        self.decoder = nn.ModuleList([
            DecoderBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout)
            for _ in range(num_decoder_layers)])
        self.output = nn.Linear(embed_dim, vocab_size)


class Seq2SeqAttentionListsSwapped(Seq2SeqTransformer):
    def decode(self, target_input, memory, source, attention=None):
        tgt_mask = causal_mask(target_input.size(1), device=target_input.device)
        mem_mask = padding_mask(source, self.pad_id)
        x = self.embed(target_input)
        for layer in self.decoder:
            x, sw, cw = layer(x, memory, self_mask=tgt_mask, memory_mask=mem_mask, return_attention=True)
            if attention is not None:
                attention["decoder_self"].append(cw)  # cross weights stored as self, and the other way round
                attention["decoder_cross"].append(sw)
        return self.output(x)


class Seq2SeqMemoryMaskFromTarget(Seq2SeqTransformer):
    def decode(self, target_input, memory, source, attention=None):
        tgt_mask = causal_mask(target_input.size(1), device=target_input.device)
        mem_mask = padding_mask(target_input, self.pad_id)  # the target's padding, not the source's
        x = self.embed(target_input)
        for layer in self.decoder:
            x, sw, cw = layer(x, memory, self_mask=tgt_mask, memory_mask=mem_mask, return_attention=True)
            if attention is not None:
                attention["decoder_self"].append(sw)
                attention["decoder_cross"].append(cw)
        return self.output(x)


class Seq2SeqSeparateMethods(nn.Module):
    """Variant: blocks built with keywords, masks combined in one place, scale from embedding_dim, sqrt via **0.5."""

    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_encoder_layers, num_decoder_layers,
                 max_len=512, activation=nn.ReLU, dropout=0.0, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.positional_encoding = PositionalEncoding(embed_dim, max_len)
        block = dict(embed_dim=embed_dim, num_heads=num_heads, feedforward_dim=feedforward_dim,
                     activation=activation, dropout=dropout)
        self.encoder = nn.ModuleList()
        for _ in range(num_encoder_layers):
            self.encoder.append(EncoderBlock(**block))
        self.decoder = nn.ModuleList()
        for _ in range(num_decoder_layers):
            self.decoder.append(DecoderBlock(**block))
        self.output = nn.Linear(embed_dim, vocab_size)

    def _embed(self, tokens):
        scale = self.embedding.embedding_dim ** 0.5
        return self.positional_encoding(scale * self.embedding(tokens))

    def encode(self, source, attention=None):
        x = self._embed(source)
        mask = source.ne(self.pad_id)[:, None, None]
        for block in self.encoder:
            x, weights = block(x, mask, True)
            if attention is not None:
                attention += [weights]
        return x

    def decode(self, target_input, memory, source, attention=None):
        steps = target_input.shape[1]
        self_mask = torch.ones(steps, steps, dtype=torch.bool, device=target_input.device).tril()
        memory_mask = source.ne(self.pad_id)[:, None, None]
        x = self._embed(target_input)
        for block in self.decoder:
            x, self_weights, cross_weights = block(x, memory, self_mask, memory_mask, True)
            if attention is not None:
                attention["decoder_self"] += [self_weights]
                attention["decoder_cross"] += [cross_weights]
        return self.output(x)

    def forward(self, source, target_input):
        return self.decode(target_input, self.encode(source), source)

    def forward_attention(self, source, target_input):
        found = dict(encoder=[], decoder_self=[], decoder_cross=[])
        memory = self.encode(source, found["encoder"])
        self.decode(target_input, memory, source, found)
        return found


# ================================================================================================================
# Task 6: greedy_decode
# ================================================================================================================
def greedy_decode(model, source, max_len, bos_id, eos_id):
    """Generate each target token by token, always taking the most likely next token."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)  # (B, t, V)
            nxt = logits[:, -1, :].argmax(dim=-1)  # (B,)
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_keeps_bos(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)
            nxt = logits[:, -1, :].argmax(dim=-1)
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    model.train(was_training)
    return tokens  # BOS column still in front


def greedy_decode_no_pad_after_eos(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)
            nxt = logits[:, -1, :].argmax(dim=-1)  # finished sequences keep generating
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_stops_at_first_eos(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)
            nxt = logits[:, -1, :].argmax(dim=-1)
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.any()):  # any, not all
                break
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_first_position(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)
            nxt = logits[:, 0, :].argmax(dim=-1)  # the prediction after BOS, every step
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_argmax_over_positions(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)  # (B, t, V)
            nxt = logits.argmax(dim=1)[:, -1]  # argmax over positions, then the last vocabulary entry
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_no_eval(model, source, max_len, bos_id, eos_id):
    with torch.no_grad():  # model.eval() never called: dropout stays on in train mode
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)
            nxt = logits[:, -1, :].argmax(dim=-1)
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    return tokens[:, 1:]


def greedy_decode_leaves_eval(model, source, max_len, bos_id, eos_id):
    model.eval()  # the previous mode is never restored
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)
            nxt = logits[:, -1, :].argmax(dim=-1)
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    return tokens[:, 1:]


def greedy_decode_samples(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)
            nxt = torch.multinomial(logits[:, -1, :].softmax(-1), 1).squeeze(1)  # sampling, not greedy
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_eos_overwritten(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)
            nxt = logits[:, -1, :].argmax(dim=-1)
            done = done | (nxt == eos_id)  # updated before the fill: the EOS itself becomes PAD
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            if bool(done.all()):
                break
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_length_counts_bos(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        while tokens.size(1) < max_len and not bool(done.all()):  # BOS counted: one token short
            logits = model.decode(tokens, memory, source)
            nxt = logits[:, -1, :].argmax(dim=-1)
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_last_token_only(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens[:, -1:], memory, source)  # only the newest token fed back
            nxt = logits[:, -1, :].argmax(dim=-1)
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_starts_with_eos(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), eos_id, dtype=torch.long, device=source.device)  # wrong start token
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)
            nxt = logits[:, -1, :].argmax(dim=-1)
            nxt = torch.where(done, torch.full_like(nxt, model.pad_id), nxt)
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_pad_zero(model, source, max_len, bos_id, eos_id):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        memory = model.encode(source)
        batch = source.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=source.device)
        done = torch.zeros(batch, dtype=torch.bool, device=source.device)
        for _ in range(max_len):
            logits = model.decode(tokens, memory, source)
            nxt = logits[:, -1, :].argmax(dim=-1)
            nxt = nxt.masked_fill(done, 0)  # PAD hard-coded as 0 instead of model.pad_id
            tokens = torch.cat([tokens, nxt.unsqueeze(1)], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    model.train(was_training)
    return tokens[:, 1:]


def greedy_decode_preallocated(model, source, max_len, bos_id, eos_id):
    """Variant: a preallocated PAD buffer trimmed at the end, re-encoding each step, try/finally for the mode."""
    mode = model.training
    model.eval()
    try:
        batch = source.size(0)
        out = torch.full((batch, max_len + 1), model.pad_id, dtype=torch.long, device=source.device)
        out[:, 0] = bos_id
        alive = torch.ones(batch, dtype=torch.bool, device=source.device)
        steps = 0
        with torch.inference_mode():
            for step in range(1, max_len + 1):
                memory = model.encode(source)  # recomputed each step: slower, same result
                best = model.decode(out[:, :step], memory, source)[:, step - 1].argmax(-1)
                out[alive, step] = best[alive]
                alive = alive & (best != eos_id)
                steps = step
                if not alive.any():
                    break
        return out[:, 1:steps + 1].clone()
    finally:
        model.train(mode)


def greedy_decode_per_sequence(model, source, max_len, bos_id, eos_id):
    """Variant: decode each sequence alone in a Python loop, then PAD the rows to one width."""
    was_training = model.training
    model.eval()
    rows = []
    with torch.no_grad():
        for b in range(source.size(0)):
            src = source[b:b + 1]
            memory = model.encode(src)
            prefix = [bos_id]
            for _ in range(max_len):
                inp = torch.tensor([prefix], dtype=torch.long, device=source.device)
                token = int(model.decode(inp, memory, src)[0, -1].argmax())
                prefix.append(token)
                if token == eos_id:
                    break
            rows.append(prefix[1:])
    model.train(was_training)
    width = max(len(row) for row in rows)
    result = torch.full((len(rows), width), model.pad_id, dtype=torch.long, device=source.device)
    for b, row in enumerate(rows):
        result[b, :len(row)] = torch.tensor(row, dtype=torch.long, device=source.device)
    return result


# ================================================================================================================
# The lists
# ================================================================================================================
MISTAKES = [
    # Task 1
    dict(task=1, name="layernorm_unbiased_variance", objects={"LayerNorm": LayerNormUnbiasedVar},
         what="The variance is computed with x.var(), which divides by D - 1; layer norm uses the biased variance "
              "(divide by D, unbiased=False)."),
    dict(task=1, name="layernorm_eps_outside_sqrt", objects={"LayerNorm": LayerNormEpsOutsideSqrt},
         what="eps is added to the standard deviation instead of to the variance inside the square root."),
    dict(task=1, name="layernorm_statistics_over_sequence_axis", objects={"LayerNorm": LayerNormStatsOverSequence},
         what="Mean and variance are taken over axis 1 (the positions) instead of the last axis (each token's "
              "features)."),
    dict(task=1, name="layernorm_forgets_bias", objects={"LayerNorm": LayerNormNoShift},
         what="The learned shift beta (self.bias) is never added after scaling."),
    dict(task=1, name="layernorm_weight_random_init", objects={"LayerNorm": LayerNormRandomGamma},
         what="gamma (self.weight) starts from torch.randn instead of ones, so a fresh layer rescales features "
              "randomly instead of only normalising."),
    dict(task=1, name="layernorm_ignores_eps_argument", objects={"LayerNorm": LayerNormIgnoresEpsArgument},
         what="The eps argument is ignored: self.eps is hard-coded to 1e-5."),
    # Task 2
    dict(task=2, name="causal_mask_upper_triangle", objects={"causal_mask": causal_mask_upper,
                                                             "padding_mask": padding_mask},
         what="The causal mask is the upper triangle (triu), so each query sees the future and not the past."),
    dict(task=2, name="causal_mask_excludes_diagonal", objects={"causal_mask": causal_mask_strict,
                                                                "padding_mask": padding_mask},
         what="tril(diagonal=-1) hides the diagonal too: a position may not attend to itself and row 0 sees no "
              "key at all."),
    dict(task=2, name="causal_mask_additive_float", objects={"causal_mask": causal_mask_additive,
                                                             "padding_mask": padding_mask},
         what="The causal mask is an additive float mask (0 / -inf) instead of a bool mask that is True where a "
              "query may attend."),
    dict(task=2, name="causal_mask_ignores_device", objects={"causal_mask": causal_mask_on_cpu,
                                                             "padding_mask": padding_mask},
         what="The device argument is ignored, so the causal mask is always created on the CPU."),
    dict(task=2, name="padding_mask_flipped", objects={"causal_mask": causal_mask,
                                                       "padding_mask": padding_mask_flipped},
         what="The padding mask is True at the PAD tokens (tokens == pad_id) instead of at the real tokens."),
    dict(task=2, name="padding_mask_masks_queries", objects={"causal_mask": causal_mask,
                                                             "padding_mask": padding_mask_over_queries},
         what="The padding mask has shape (B, 1, L, 1), so it hides padded queries instead of padded keys."),
    dict(task=2, name="padding_mask_hardcodes_pad_zero", objects={"causal_mask": causal_mask,
                                                                  "padding_mask": padding_mask_pad_zero},
         what="The padding mask compares with 0 instead of the pad_id argument."),
    dict(task=2, name="padding_mask_missing_singleton_axis", objects={"causal_mask": causal_mask,
                                                                      "padding_mask": padding_mask_three_dims},
         what="The padding mask has shape (B, 1, L) instead of (B, 1, 1, L), so it does not broadcast over heads "
              "and queries correctly."),
    # Task 3
    dict(task=3, name="mha_values_from_x_not_context", objects={"MultiheadAttention": MHAValueFromX},
         what="The values are projected from x instead of from the context, so cross-attention mixes the target's "
              "own vectors."),
    dict(task=3, name="mha_merge_uses_key_length", objects={"MultiheadAttention": MHAMergeWithKeyLength},
         what="The heads are merged back with the key length L_k instead of the query length L_q, which breaks "
              "cross-attention when the lengths differ."),
    dict(task=3, name="mha_split_heads_without_transpose", objects={"MultiheadAttention": MHASplitWithoutTranspose},
         what="The heads are split with view(B, H, L, head_dim) directly instead of view(B, L, H, head_dim) "
              "followed by transpose(1, 2), which scrambles positions and features."),
    dict(task=3, name="mha_merge_without_transpose", objects={"MultiheadAttention": MHAMergeWithoutTranspose},
         what="The heads are merged by reshaping (B, H, L_q, head_dim) to (B, L_q, D) without first transposing "
              "the head axis back behind the positions."),
    dict(task=3, name="mha_missing_output_projection", objects={"MultiheadAttention": MHANoOutputProjection},
         what="The merged heads are returned without the output projection o_proj."),
    dict(task=3, name="mha_mask_not_passed", objects={"MultiheadAttention": MHAIgnoresMask},
         what="The mask is never passed to scaled_softmax_attention, so masked keys still get weight."),
    dict(task=3, name="mha_returns_head_averaged_weights", objects={"MultiheadAttention": MHAAveragedWeights},
         what="The attention weights are averaged over heads to (B, L_q, L_k) instead of returned per head as "
              "(B, H, L_q, L_k)."),
    dict(task=3, name="mha_scores_scaled_by_embed_dim", objects={"MultiheadAttention": MHAScaleByEmbedDim},
         what="The hand-written attention divides the scores by sqrt(embed_dim) instead of sqrt(head_dim)."),
    dict(task=3, name="mha_mask_unsqueezed_again", objects={"MultiheadAttention": MHAMaskUnsqueezedForHeads},
         what="The mask gets an extra unsqueeze(1) for the heads, although the given masks already broadcast; a "
              "(L_q, L_k) causal mask then lines up with the wrong axes."),
    # Task 4
    dict(task=4, name="decoder_cross_attention_without_residual", objects={"DecoderBlock": DecoderBlockNoCrossResidual},
         what="The cross-attention sub-layer has no residual: norm2 is applied to the attention output alone."),
    dict(task=4, name="decoder_masks_swapped", objects={"DecoderBlock": DecoderBlockMasksSwapped},
         what="self_mask is given to the cross-attention and memory_mask to the self-attention."),
    dict(task=4, name="decoder_one_attention_module_shared", objects={"DecoderBlock": DecoderBlockSharedAttention},
         what="self_attention and cross_attention are the same MultiheadAttention object, so the two sub-layers "
              "share their weights."),
    dict(task=4, name="decoder_pre_norm", objects={"DecoderBlock": DecoderBlockPreNorm},
         what="The block normalises before each sub-layer (pre-norm) instead of after the residual sum "
              "(post-norm)."),
    dict(task=4, name="decoder_cross_attention_queries_from_memory",
         objects={"DecoderBlock": DecoderBlockQueriesFromMemory},
         what="The cross-attention takes its queries from the memory and its keys and values from the target "
              "instead of the other way round."),
    dict(task=4, name="decoder_cross_attention_reads_block_input",
         objects={"DecoderBlock": DecoderBlockCrossOnBlockInput},
         what="The cross-attention queries come from the block's input x instead of the output of the first "
              "sub-layer."),
    dict(task=4, name="decoder_no_dropout_on_feedforward",
         objects={"DecoderBlock": DecoderBlockNoFeedforwardDropout},
         what="Dropout is not applied to the feed-forward output before the residual sum."),
    dict(task=4, name="decoder_attention_weights_swapped", objects={"DecoderBlock": DecoderBlockWeightsSwapped},
         what="With return_attention the block returns the cross-attention weights before the self-attention "
              "weights."),
    dict(task=4, name="decoder_reuses_norm1", objects={"DecoderBlock": DecoderBlockOneNormReused},
         what="norm1 is used after all three sub-layers; norm2 and norm3 are created but never used."),
    # Task 5
    dict(task=5, name="model_embedding_not_scaled", objects={"Seq2SeqTransformer": Seq2SeqNoEmbeddingScale},
         what="The token embeddings are not multiplied by sqrt(embed_dim) before the positions are added."),
    dict(task=5, name="model_scales_after_positions", objects={"Seq2SeqTransformer": Seq2SeqScaleAfterPositions},
         what="The sqrt(embed_dim) scale is applied after adding the positional encoding, so the positions are "
              "scaled too."),
    dict(task=5, name="model_decoder_without_causal_mask", objects={"Seq2SeqTransformer": Seq2SeqNoCausalMask},
         what="decode passes no causal mask to the decoder blocks, so each target position sees the future."),
    dict(task=5, name="model_cross_attention_without_source_mask",
         objects={"Seq2SeqTransformer": Seq2SeqNoMemoryMask},
         what="decode passes no memory_mask, so the cross-attention attends to the source's PAD positions."),
    dict(task=5, name="model_encoder_without_padding_mask",
         objects={"Seq2SeqTransformer": Seq2SeqEncoderNoPaddingMask},
         what="encode runs the encoder blocks without the source's padding mask."),
    dict(task=5, name="model_blocks_repeated_by_list_multiplication",
         objects={"Seq2SeqTransformer": Seq2SeqRepeatedBlocks},
         what="The ModuleLists are built as [Block(...)] * n, which repeats one block n times so all layers share "
              "weights."),
    dict(task=5, name="model_embedding_without_padding_idx", objects={"Seq2SeqTransformer": Seq2SeqNoPaddingIdx},
         what="nn.Embedding is created without padding_idx=pad_id, so the PAD row is random and gets gradients."),
    dict(task=5, name="model_dropout_not_passed_to_blocks",
         objects={"Seq2SeqTransformer": Seq2SeqDropoutNotPassed},
         what="The dropout argument is not passed to the encoder and decoder blocks, so the model never drops "
              "anything."),
    dict(task=5, name="model_activation_not_passed_to_blocks",
         objects={"Seq2SeqTransformer": Seq2SeqActivationNotPassed},
         what="The activation argument is not passed to the blocks, which therefore always use ReLU."),
    dict(task=5, name="model_attention_lists_swapped",
         objects={"Seq2SeqTransformer": Seq2SeqAttentionListsSwapped},
         what="forward_attention stores the cross-attention weights under decoder_self and the self-attention "
              "weights under decoder_cross."),
    dict(task=5, name="model_memory_mask_from_target",
         objects={"Seq2SeqTransformer": Seq2SeqMemoryMaskFromTarget},
         what="decode builds the cross-attention's memory_mask from the target's padding instead of the "
              "source's, so its key axis has the target's length."),
    # Task 6
    dict(task=6, name="greedy_returns_bos", objects={"greedy_decode": greedy_decode_keeps_bos},
         what="The returned tokens still start with the BOS column."),
    dict(task=6, name="greedy_no_pad_after_eos", objects={"greedy_decode": greedy_decode_no_pad_after_eos},
         what="Finished sequences keep getting new tokens after their EOS instead of model.pad_id."),
    dict(task=6, name="greedy_stops_when_any_sequence_ends",
         objects={"greedy_decode": greedy_decode_stops_at_first_eos},
         what="The loop stops as soon as any sequence has produced EOS instead of when all have."),
    dict(task=6, name="greedy_takes_first_position", objects={"greedy_decode": greedy_decode_first_position},
         what="The next token is taken from the logits of position 0 instead of the last position [:, -1]."),
    dict(task=6, name="greedy_argmax_over_positions",
         objects={"greedy_decode": greedy_decode_argmax_over_positions},
         what="The argmax is taken over the positions axis (dim=1) instead of over the vocabulary of the last "
              "position."),
    dict(task=6, name="greedy_without_eval_mode", objects={"greedy_decode": greedy_decode_no_eval},
         what="The model is never put in eval mode, so dropout stays active while decoding a model in train mode."),
    dict(task=6, name="greedy_does_not_restore_mode", objects={"greedy_decode": greedy_decode_leaves_eval},
         what="The model is left in eval mode instead of being put back in the mode it was in."),
    dict(task=6, name="greedy_samples_tokens", objects={"greedy_decode": greedy_decode_samples},
         what="The next token is sampled with torch.multinomial instead of taken by argmax."),
    dict(task=6, name="greedy_eos_replaced_by_pad", objects={"greedy_decode": greedy_decode_eos_overwritten},
         what="finished is updated before the PAD fill, so each sequence's EOS itself is replaced by PAD."),
    dict(task=6, name="greedy_max_len_counts_bos", objects={"greedy_decode": greedy_decode_length_counts_bos},
         what="The length limit counts the BOS token, so at most max_len - 1 tokens are generated."),
    dict(task=6, name="greedy_feeds_only_last_token", objects={"greedy_decode": greedy_decode_last_token_only},
         what="Each step feeds the decoder only the newest token instead of the whole prefix."),
    dict(task=6, name="greedy_starts_with_eos", objects={"greedy_decode": greedy_decode_starts_with_eos},
         what="Decoding starts from a column of eos_id instead of bos_id."),
    dict(task=6, name="greedy_pad_hardcoded_zero", objects={"greedy_decode": greedy_decode_pad_zero},
         what="Finished sequences are filled with 0 instead of model.pad_id."),
]

VARIANTS = [
    dict(task=1, name="layernorm_var_mean_rsqrt", objects={"LayerNorm": LayerNormVarRsqrt},
         what="torch.var_mean(unbiased=False), rsqrt and addcmul, parameters created in another order."),
    dict(task=2, name="causal_mask_arange_comparison", objects={"causal_mask": causal_mask_arange,
                                                                "padding_mask": padding_mask_view},
         what="Causal mask from comparing index grids; padding mask with ne and view."),
    dict(task=2, name="causal_mask_not_strict_upper", objects={"causal_mask": causal_mask_not_triu,
                                                               "padding_mask": padding_mask},
         what="Causal mask as the complement of the strict upper triangle."),
    dict(task=3, name="mha_einsum_finfo_min", objects={"MultiheadAttention": MHAEinsum},
         what="einsum over unflattened heads, own softmax with finfo.min as the fill, o_proj created first."),
    dict(task=3, name="mha_loop_over_heads", objects={"MultiheadAttention": MHAHeadLoop},
         what="A Python loop over the heads slicing the projected features, weights stacked along dim 1."),
    dict(task=4, name="decoder_helper_and_other_creation_order",
         objects={"DecoderBlock": DecoderBlockSublayerHelper},
         what="Layers created in another order and a helper for residual, dropout and norm; positional calls."),
    dict(task=5, name="model_keyword_blocks_and_inline_masks",
         objects={"Seq2SeqTransformer": Seq2SeqSeparateMethods},
         what="Blocks built with keyword dicts and append, masks written inline, scale from embedding_dim ** 0.5, "
              "no embed_dim attribute."),
    dict(task=6, name="greedy_preallocated_buffer_reencoding",
         objects={"greedy_decode": greedy_decode_preallocated},
         what="A preallocated PAD buffer trimmed at the end, re-encoding the source at every step, "
              "inference_mode and try/finally."),
    dict(task=6, name="greedy_one_sequence_at_a_time", objects={"greedy_decode": greedy_decode_per_sequence},
         what="Decodes each sequence alone in a Python loop and pads the rows to one width."),
]
