"""Held-out student mistakes and correct variants for the gpt assignment, written without reading the checks.

Base implementations follow the student notebook's skeletons (names, signatures, attributes). Every MISTAKE is one
change from its base; every VARIANT is a correct alternative that must pass. Verified by verify.py next to this file.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ======================================================================================================================
# Correct bases
# ======================================================================================================================

class RotaryEmbedding(nn.Module):
    """RoPE on interleaved pairs (2i, 2i + 1); tables built in float64 and stored in the default dtype."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__()
        self.max_len = max_len
        pair = torch.arange(head_dim // 2, dtype=torch.float64)  # i = 0 .. d/2 - 1
        theta = base ** (-2.0 * pair / head_dim)  # (head_dim // 2,)
        angle = torch.outer(torch.arange(max_len, dtype=torch.float64), theta)  # (max_len, head_dim // 2)
        dtype = torch.get_default_dtype()
        self.register_buffer("cos", torch.cos(angle).to(dtype), persistent=False)
        self.register_buffer("sin", torch.sin(angle).to(dtype), persistent=False)

    def forward(self, x, offset=0):
        length = x.shape[-2]
        if offset < 0 or offset + length > self.max_len:
            raise ValueError(f"positions {offset}..{offset + length - 1} exceed max_len={self.max_len}")
        cos = self.cos[offset:offset + length].to(x.dtype)  # (L, d/2)
        sin = self.sin[offset:offset + length].to(x.dtype)
        pairs = x.unflatten(-1, (-1, 2))  # (B, H, L, d/2, 2)
        x0, x1 = pairs[..., 0], pairs[..., 1]
        y0 = x0 * cos - x1 * sin
        y1 = x0 * sin + x1 * cos
        return torch.stack((y0, y1), dim=-1).flatten(-2)  # (B, H, L, d)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with RoPE and a (keys, values) cache."""

    def __init__(self, embed_dim, num_heads, max_len, rope=True):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.o_proj = nn.Linear(embed_dim, embed_dim)
        self.rotary = RotaryEmbedding(self.head_dim, max_len) if rope else None

    def split(self, t):
        batch, length, _ = t.shape
        return t.reshape(batch, length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)  # (B, H, L, d)

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q = self.rotary(q, offset=past)
            k = self.rotary(k, offset=past)
        if cache is not None:
            k = torch.cat((cache[0], k), dim=-2)
            v = torch.cat((cache[1], v), dim=-2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)  # (B, H, L, past + L)
        query_pos = torch.arange(past, past + length, device=x.device)
        key_pos = torch.arange(past + length, device=x.device)
        future = key_pos[None, :] > query_pos[:, None]  # (L, past + L)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        out = (weights @ v).permute(0, 2, 1, 3).reshape(batch, length, self.embed_dim)
        out = self.o_proj(out)
        if return_attention:
            return out, (k, v), weights
        return out, (k, v)


class GPTBlock(nn.Module):
    """Pre-norm block."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, max_len, activation=nn.GELU, dropout=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(embed_dim)
        self.norm2 = nn.LayerNorm(embed_dim)
        self.attention = CausalSelfAttention(embed_dim, num_heads, max_len)
        self.feedforward = nn.Sequential(nn.Linear(embed_dim, feedforward_dim), activation(),
                                         nn.Linear(feedforward_dim, embed_dim))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, cache=None):
        h, new_cache = self.attention(self.norm1(x), cache=cache)
        x = x + self.dropout(h)
        x = x + self.dropout(self.feedforward(self.norm2(x)))
        return x, new_cache


class GPT(nn.Module):
    """Embedding, pre-norm blocks, final norm, tied head."""

    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_layers, max_len, dropout=0.0):
        super().__init__()
        self.max_len = max_len
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        self.blocks = nn.ModuleList(
            [GPTBlock(embed_dim, num_heads, feedforward_dim, max_len, dropout=dropout) for _ in range(num_layers)])
        self.final_norm = nn.LayerNorm(embed_dim)
        self.lm_head = nn.Linear(embed_dim, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, tokens, cache=None):
        x = self.token_embedding(tokens)
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, block_cache = block(x, cache=cache[i] if cache is not None else None)
            new_cache.append(block_cache)
        logits = self.lm_head(self.final_norm(x))
        return logits, new_cache


def sample_next_token(logits, temperature=1.0, top_k=None, generator=None):
    """(B, V) -> (B, 1)."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        threshold = torch.topk(logits, top_k, dim=-1).values[..., -1:]  # (B, 1): the k-th largest
        logits = torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf")))
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)


@torch.no_grad()
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True, generator=None):
    """(B, P) -> (B, P + max_new_tokens)."""
    if prompt.shape[1] + max_new_tokens > model.max_len:
        raise ValueError("prompt plus new tokens exceed model.max_len")
    was_training = model.training
    model.eval()
    try:
        tokens = prompt
        cache = None
        for _ in range(max_new_tokens):
            if use_cache:
                feed = tokens if cache is None else tokens[:, -1:]
                logits, cache = model(feed, cache=cache)
            else:
                logits, _ = model(tokens)
            next_token = sample_next_token(logits[:, -1, :], temperature, top_k, generator)
            tokens = torch.cat([tokens, next_token], dim=1)
        return tokens
    finally:
        model.train(was_training)


# ======================================================================================================================
# Task 1 mistakes: RotaryEmbedding
# ======================================================================================================================

class RopeRotateHalf(RotaryEmbedding):
    """Pairs feature j with j + d/2 (Hugging Face's rotate_half) instead of the interleaved pairs."""

    def forward(self, x, offset=0):
        length = x.shape[-2]
        if offset < 0 or offset + length > self.max_len:
            raise ValueError("too long")
        cos = self.cos[offset:offset + length].to(x.dtype)
        sin = self.sin[offset:offset + length].to(x.dtype)
        x0, x1 = x.chunk(2, dim=-1)
        return torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)


class RopeThetaNoFactorTwo(RotaryEmbedding):
    """theta_i = base ** (-i / d): the exponent forgot the factor 2, so frequencies decay too slowly."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__(head_dim, max_len, base)
        theta = base ** (-torch.arange(head_dim // 2, dtype=torch.float64) / head_dim)
        angle = torch.outer(torch.arange(max_len, dtype=torch.float64), theta)
        self.cos = torch.cos(angle).to(torch.get_default_dtype())
        self.sin = torch.sin(angle).to(torch.get_default_dtype())


class RopeReversedRotation(RotaryEmbedding):
    """Rotates by -p*theta (the sin terms have the wrong signs): the transpose of the rotation matrix."""

    def forward(self, x, offset=0):
        length = x.shape[-2]
        if offset < 0 or offset + length > self.max_len:
            raise ValueError("too long")
        cos = self.cos[offset:offset + length].to(x.dtype)
        sin = self.sin[offset:offset + length].to(x.dtype)
        pairs = x.unflatten(-1, (-1, 2))
        x0, x1 = pairs[..., 0], pairs[..., 1]
        return torch.stack((x0 * cos + x1 * sin, -x0 * sin + x1 * cos), dim=-1).flatten(-2)


class RopeIgnoresOffset(RotaryEmbedding):
    """Always uses positions 0 .. L-1: the offset argument is checked but not used to slice the tables."""

    def forward(self, x, offset=0):
        length = x.shape[-2]
        if offset < 0 or offset + length > self.max_len:
            raise ValueError("too long")
        cos = self.cos[:length].to(x.dtype)
        sin = self.sin[:length].to(x.dtype)
        pairs = x.unflatten(-1, (-1, 2))
        x0, x1 = pairs[..., 0], pairs[..., 1]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class RopePositionsFromOne(RotaryEmbedding):
    """The tables start at position 1 (torch.arange(1, max_len + 1)), so position 0 is not the identity."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__(head_dim, max_len, base)
        theta = base ** (-2.0 * torch.arange(head_dim // 2, dtype=torch.float64) / head_dim)
        angle = torch.outer(torch.arange(1, max_len + 1, dtype=torch.float64), theta)
        self.cos = torch.cos(angle).to(torch.get_default_dtype())
        self.sin = torch.sin(angle).to(torch.get_default_dtype())


class RopeLectureNotesProduct(RotaryEmbedding):
    """The 004 notes' 'RoPE': multiplies each feature by sin (first half) or cos (second half) of its position."""

    def forward(self, x, offset=0):
        length = x.shape[-2]
        if offset < 0 or offset + length > self.max_len:
            raise ValueError("too long")
        cos = self.cos[offset:offset + length].to(x.dtype)
        sin = self.sin[offset:offset + length].to(x.dtype)
        return x * torch.cat((sin, cos), dim=-1)


class RopeInPlace(RotaryEmbedding):
    """Writes the rotated pairs back into x itself, so the caller's tensor is overwritten."""

    def forward(self, x, offset=0):
        length = x.shape[-2]
        if offset < 0 or offset + length > self.max_len:
            raise ValueError("too long")
        cos = self.cos[offset:offset + length].to(x.dtype)
        sin = self.sin[offset:offset + length].to(x.dtype)
        even, odd = x[..., 0::2].clone(), x[..., 1::2].clone()
        x[..., 0::2] = even * cos - odd * sin
        x[..., 1::2] = even * sin + odd * cos
        return x


class RopePersistentBuffers(RotaryEmbedding):
    """Registers cos and sin as ordinary (persistent) buffers, so they land in every state_dict."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        nn.Module.__init__(self)
        self.max_len = max_len
        theta = base ** (-2.0 * torch.arange(head_dim // 2, dtype=torch.float64) / head_dim)
        angle = torch.outer(torch.arange(max_len, dtype=torch.float64), theta)
        self.register_buffer("cos", torch.cos(angle).to(torch.get_default_dtype()))
        self.register_buffer("sin", torch.sin(angle).to(torch.get_default_dtype()))


class RopeNoLengthCheck(RotaryEmbedding):
    """Never raises ValueError: a call past max_len silently slices a short table (and crashes or returns junk)."""

    def forward(self, x, offset=0):
        length = x.shape[-2]
        cos = self.cos[offset:offset + length].to(x.dtype)
        sin = self.sin[offset:offset + length].to(x.dtype)
        pairs = x.unflatten(-1, (-1, 2))
        x0, x1 = pairs[..., 0], pairs[..., 1]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


# ======================================================================================================================
# Task 2 mistakes: CausalSelfAttention without a cache
# ======================================================================================================================

class AttnMaskSeesNext(CausalSelfAttention):
    """The mask is one diagonal too high (tril(diagonal=1)): each query also sees the next token."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        allowed = torch.ones(length, past + length, dtype=torch.bool, device=x.device).tril(diagonal=past + 1)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnMaskTransposed(CausalSelfAttention):
    """Masks the past instead of the future (triu where tril was meant): each query sees itself and later keys."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        allowed = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnRotatesValues(CausalSelfAttention):
    """Applies RoPE to the values as well as the queries and keys."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q, k, v = self.rotary(q, offset=past), self.rotary(k, offset=past), self.rotary(v, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        future = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnScaleByHeadDim(CausalSelfAttention):
    """Divides the scores by head_dim instead of sqrt(head_dim) (the notes' head_dim**1/2)."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / (self.head_dim ** 1 / 2)
        future = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnSoftmaxOverQueries(CausalSelfAttention):
    """Softmax over dim=-2 (the queries) instead of over the keys."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        future = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-2)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnSplitWithoutTranspose(CausalSelfAttention):
    """Splits heads with view(B, H, L, head_dim) straight from (B, L, D): positions and heads get mixed."""

    def split(self, t):
        batch, length, _ = t.shape
        return t.reshape(batch, self.num_heads, length, self.head_dim)

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        future = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnMergeWithoutTranspose(CausalSelfAttention):
    """Merges heads with reshape(B, L, D) straight from (B, H, L, head_dim), without moving the head axis back."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        future = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnRopeBeforeSplit(CausalSelfAttention):
    """Builds RotaryEmbedding(embed_dim) and rotates the whole projection before splitting into heads."""

    def __init__(self, embed_dim, num_heads, max_len, rope=True):
        super().__init__(embed_dim, num_heads, max_len, rope)
        self.rotary = RotaryEmbedding(embed_dim, max_len) if rope else None

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        past = 0 if cache is None else cache[0].shape[-2]
        q, k = self.q_proj(x), self.k_proj(x)
        if self.rotary is not None:
            q, k = self.rotary(q.unsqueeze(1), offset=past)[:, 0], self.rotary(k.unsqueeze(1), offset=past)[:, 0]
        q, k, v = self.split(q), self.split(k), self.split(self.v_proj(x))
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        future = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnMaskFillZero(CausalSelfAttention):
    """Fills the masked scores with 0 instead of -inf, so future tokens still get weight after the softmax."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        future = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        weights = torch.softmax(scores.masked_fill(future, 0.0), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnMaskAfterSoftmax(CausalSelfAttention):
    """Zeroes the future weights after the softmax, so the rows no longer sum to 1."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        future = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        weights = torch.softmax(scores, dim=-1).masked_fill(future, 0.0)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnDetachedWeights(CausalSelfAttention):
    """Detaches the attention weights (meant for plotting) and then uses them for the output: no gradient reaches
    q_proj and k_proj."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        future = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1).detach()
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class AttnReturnsUnrotatedKeys(CausalSelfAttention):
    """Returns (and caches) the keys from before RoPE instead of the rotated ones."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[-2]
        raw_k = k if cache is None else torch.cat((cache[0], k), dim=-2)
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        future = torch.ones(length, past + length, dtype=torch.bool, device=x.device).triu(diagonal=past + 1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (raw_k, v), weights) if return_attention else (out, (raw_k, v))


# ======================================================================================================================
# Task 3 mistakes: the KV cache
# ======================================================================================================================

class _CacheBase(CausalSelfAttention):
    """The base forward written as a student would, split at the points the cache mistakes change."""

    def past_length(self, cache):
        return 0 if cache is None else cache[0].shape[-2]

    def rotate(self, q, k, past):
        if self.rotary is None:
            return q, k
        return self.rotary(q, offset=past), self.rotary(k, offset=past)

    def extend(self, cache, k, v):
        if cache is None:
            return k, v
        return torch.cat((cache[0], k), dim=-2), torch.cat((cache[1], v), dim=-2)

    def allowed(self, length, past, device):
        return torch.ones(length, past + length, dtype=torch.bool, device=device).tril(diagonal=past)

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = self.past_length(cache)
        q, k = self.rotate(q, k, past)
        k, v = self.extend(cache, k, v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        allowed = self.allowed(length, past, x.device)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class CachePositionsRestart(_CacheBase):
    """Rotates the new queries and keys from position 0 even when a cache holds earlier positions."""

    def rotate(self, q, k, past):
        return super().rotate(q, k, 0)


class CacheMaskTopLeft(_CacheBase):
    """Builds the mask with tril() on an (L, L_past + L) matrix without the diagonal offset: the new queries
    cannot see most of the cached prefix (what is_causal=True would do)."""

    def allowed(self, length, past, device):
        return torch.ones(length, past + length, dtype=torch.bool, device=device).tril()


class CacheNewBeforePast(_CacheBase):
    """Concatenates the new keys and values before the cached ones instead of after them."""

    def extend(self, cache, k, v):
        if cache is None:
            return k, v
        return torch.cat((k, cache[0]), dim=-2), torch.cat((v, cache[1]), dim=-2)


class CacheRotatedTwice(_CacheBase):
    """Rotates the keys after concatenating them with the cache, from position 0: the cached keys, already rotated,
    are rotated again."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = self.past_length(cache)
        k, v = self.extend(cache, k, v)
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        allowed = self.allowed(length, past, x.device)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class CachePastFromHeadAxis(_CacheBase):
    """Reads the cache's length from dim 1 (the heads) instead of dim 2 (the positions): the new tokens are rotated
    at the wrong offset and the mask's diagonal is shifted (its width comes from the real number of keys)."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].size(1)
        q, k = self.rotate(q, k, past)
        k, v = self.extend(cache, k, v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        allowed = torch.ones(length, k.shape[-2], dtype=torch.bool, device=x.device).tril(diagonal=past)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k, v), weights) if return_attention else (out, (k, v))


class CacheReturnsNewOnly(_CacheBase):
    """Attends over the concatenated keys and values but returns only the new positions as the cache."""

    def forward(self, x, cache=None, return_attention=False):
        batch, length, _ = x.shape
        q, k_new, v_new = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = self.past_length(cache)
        q, k_new = self.rotate(q, k_new, past)
        k, v = self.extend(cache, k_new, v_new)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        allowed = self.allowed(length, past, x.device)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        out = self.o_proj((weights @ v).transpose(1, 2).reshape(batch, length, self.embed_dim))
        return (out, (k_new, v_new), weights) if return_attention else (out, (k_new, v_new))


class CacheValuesFromKeys(_CacheBase):
    """Copy-paste slip: the values are concatenated after the cached keys (cache[0]) instead of the cached values."""

    def extend(self, cache, k, v):
        if cache is None:
            return k, v
        return torch.cat((cache[0], k), dim=-2), torch.cat((cache[0], v), dim=-2)


# ======================================================================================================================
# Task 4 mistakes: GPTBlock
# ======================================================================================================================

class BlockPostNorm(GPTBlock):
    """Post-norm: x = norm1(x + attention(x)), x = norm2(x + feedforward(x))."""

    def forward(self, x, cache=None):
        h, new_cache = self.attention(x, cache=cache)
        x = self.norm1(x + self.dropout(h))
        x = self.norm2(x + self.dropout(self.feedforward(x)))
        return x, new_cache


class BlockResidualFromNormed(GPTBlock):
    """Reassigns x = norm1(x) first, so the residual adds the normalised stream instead of the raw one."""

    def forward(self, x, cache=None):
        x = self.norm1(x)
        h, new_cache = self.attention(x, cache=cache)
        x = x + self.dropout(h)
        x = self.norm2(x)
        x = x + self.dropout(self.feedforward(x))
        return x, new_cache


class BlockSharedNorm(GPTBlock):
    """Uses norm1 before both sub-layers; norm2 is created but never used."""

    def forward(self, x, cache=None):
        h, new_cache = self.attention(self.norm1(x), cache=cache)
        x = x + self.dropout(h)
        x = x + self.dropout(self.feedforward(self.norm1(x)))
        return x, new_cache


class BlockParallel(GPTBlock):
    """Feeds the feed-forward network the block's input instead of the stream after the attention (parallel)."""

    def forward(self, x, cache=None):
        h, new_cache = self.attention(self.norm1(x), cache=cache)
        x = x + self.dropout(h) + self.dropout(self.feedforward(self.norm2(x)))
        return x, new_cache


class BlockDropsCache(GPTBlock):
    """Calls the attention without passing the cache on, so a cached step sees only its own tokens."""

    def forward(self, x, cache=None):
        h, new_cache = self.attention(self.norm1(x))
        x = x + self.dropout(h)
        x = x + self.dropout(self.feedforward(self.norm2(x)))
        return x, new_cache


class BlockHardcodedReLU(GPTBlock):
    """Builds the feed-forward network with nn.ReLU() instead of the activation argument (GELU by default)."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, max_len, activation=nn.GELU, dropout=0.0):
        super().__init__(embed_dim, num_heads, feedforward_dim, max_len, activation, dropout)
        self.feedforward[1] = nn.ReLU()


# ======================================================================================================================
# Task 5 mistakes: GPT
# ======================================================================================================================

class GPTUntiedHead(GPT):
    """The head is a separate nn.Linear: its weight is not the embedding's weight."""

    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_layers, max_len, dropout=0.0):
        super().__init__(vocab_size, embed_dim, num_heads, feedforward_dim, num_layers, max_len, dropout)
        self.lm_head = nn.Linear(embed_dim, vocab_size, bias=False)


class GPTNoFinalNorm(GPT):
    """Skips the final LayerNorm before the head."""

    def forward(self, tokens, cache=None):
        x = self.token_embedding(tokens)
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, block_cache = block(x, cache=cache[i] if cache is not None else None)
            new_cache.append(block_cache)
        return self.lm_head(x), new_cache


class GPTScaledEmbedding(GPT):
    """Multiplies the token embeddings by sqrt(embed_dim), as in the first workbook's encoder."""

    def forward(self, tokens, cache=None):
        x = self.token_embedding(tokens) * math.sqrt(self.token_embedding.embedding_dim)
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, block_cache = block(x, cache=cache[i] if cache is not None else None)
            new_cache.append(block_cache)
        return self.lm_head(self.final_norm(x)), new_cache


class GPTPositionTable(GPT):
    """Adds a learned position embedding to the tokens, on top of RoPE (and ignores the cache's offset)."""

    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_layers, max_len, dropout=0.0):
        super().__init__(vocab_size, embed_dim, num_heads, feedforward_dim, num_layers, max_len, dropout)
        self.position_embedding = nn.Embedding(max_len, embed_dim)

    def forward(self, tokens, cache=None):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, block_cache = block(x, cache=cache[i] if cache is not None else None)
            new_cache.append(block_cache)
        return self.lm_head(self.final_norm(x)), new_cache


class GPTFirstCacheEverywhere(GPT):
    """Hands cache[0] to every block instead of cache[l] to block l."""

    def forward(self, tokens, cache=None):
        x = self.token_embedding(tokens)
        new_cache = []
        for block in self.blocks:
            x, block_cache = block(x, cache=cache[0] if cache is not None else None)
            new_cache.append(block_cache)
        return self.lm_head(self.final_norm(x)), new_cache


class GPTHeadWithBias(GPT):
    """Ties the weight but keeps the head's default bias=True, adding a bias the task does not ask for."""

    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_layers, max_len, dropout=0.0):
        super().__init__(vocab_size, embed_dim, num_heads, feedforward_dim, num_layers, max_len, dropout)
        self.lm_head = nn.Linear(embed_dim, vocab_size)
        self.lm_head.weight = self.token_embedding.weight


# ======================================================================================================================
# Task 6 mistakes: sample_next_token
# ======================================================================================================================

def sample_temperature_after_softmax(logits, temperature=1.0, top_k=None, generator=None):
    """Divides the probabilities by the temperature: multinomial renormalises, so temperature has no effect."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    if top_k is not None and top_k < logits.shape[-1]:
        threshold = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf")))
    probs = torch.softmax(logits, dim=-1) / temperature
    return torch.multinomial(probs, 1, generator=generator)


def sample_multiplies_temperature(logits, temperature=1.0, top_k=None, generator=None):
    """Multiplies the logits by the temperature instead of dividing."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    logits = logits * temperature
    if top_k is not None and top_k < logits.shape[-1]:
        threshold = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf")))
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)


def sample_topk_keeps_one_more(logits, temperature=1.0, top_k=None, generator=None):
    """Takes the threshold at sorted index top_k (the (k+1)-th largest), so k + 1 tokens stay."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        threshold = torch.sort(logits, dim=-1, descending=True).values[:, top_k:top_k + 1]
        logits = logits.masked_fill(logits < threshold, float("-inf"))
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)


def sample_topk_drops_ties(logits, temperature=1.0, top_k=None, generator=None):
    """Keeps exactly the indices topk returns, so tokens tied with the k-th largest are dropped."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        indices = torch.topk(logits, top_k, dim=-1).indices
        kept = torch.full_like(logits, float("-inf")).scatter(-1, indices, logits.gather(-1, indices))
        logits = kept
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)


def sample_topk_fills_zero(logits, temperature=1.0, top_k=None, generator=None):
    """Sets the logits outside the top k to 0 instead of -inf, so those tokens can still be drawn."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        threshold = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < threshold, 0.0)
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)


def sample_ignores_generator(logits, temperature=1.0, top_k=None, generator=None):
    """Draws from the global random state: the generator argument is not passed to torch.multinomial."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        threshold = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf")))
    return torch.multinomial(torch.softmax(logits, dim=-1), 1)


def sample_greedy_flat(logits, temperature=1.0, top_k=None, generator=None):
    """Greedy returns argmax without keepdim: shape (B,) instead of (B, 1)."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        threshold = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf")))
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)


def sample_no_greedy_case(logits, temperature=1.0, top_k=None, generator=None):
    """No special case for temperature 0: the logits are divided by zero and the draw fails or is random."""
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        threshold = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf")))
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)


def sample_divides_in_place(logits, temperature=1.0, top_k=None, generator=None):
    """logits /= temperature changes the caller's tensor."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    logits /= temperature
    if top_k is not None and top_k < logits.shape[-1]:
        threshold = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf")))
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)


def sample_topk_unguarded(logits, temperature=1.0, top_k=None, generator=None):
    """Calls topk(top_k) even when top_k exceeds the vocabulary, which raises instead of keeping every token."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None:
        threshold = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = torch.where(logits >= threshold, logits, torch.full_like(logits, float("-inf")))
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)


# ======================================================================================================================
# Task 8 mistakes: generate
# ======================================================================================================================

@torch.no_grad()
def generate_feeds_all_with_cache(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                                  generator=None):
    """With use_cache, feeds the whole sequence every step together with the cache (positions counted twice)."""
    if prompt.shape[1] + max_new_tokens > model.max_len:
        raise ValueError("too long")
    was_training = model.training
    model.eval()
    try:
        tokens, cache = prompt, None
        for _ in range(max_new_tokens):
            if use_cache:
                logits, cache = model(tokens, cache=cache)
            else:
                logits, _ = model(tokens)
            tokens = torch.cat([tokens, sample_next_token(logits[:, -1, :], temperature, top_k, generator)], dim=1)
        return tokens
    finally:
        model.train(was_training)


@torch.no_grad()
def generate_cache_not_kept(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                            generator=None):
    """Feeds only the newest token but never keeps the cache the model returns, so later steps lose the context."""
    if prompt.shape[1] + max_new_tokens > model.max_len:
        raise ValueError("too long")
    was_training = model.training
    model.eval()
    try:
        tokens, cache = prompt, None
        for step in range(max_new_tokens):
            if use_cache:
                feed = tokens if step == 0 else tokens[:, -1:]
                logits, _ = model(feed, cache=cache)
            else:
                logits, _ = model(tokens)
            tokens = torch.cat([tokens, sample_next_token(logits[:, -1, :], temperature, top_k, generator)], dim=1)
        return tokens
    finally:
        model.train(was_training)


@torch.no_grad()
def generate_no_length_check(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                             generator=None):
    """Never raises ValueError for P + max_new_tokens > model.max_len (it fails later, inside RoPE, or not at all)."""
    was_training = model.training
    model.eval()
    try:
        tokens, cache = prompt, None
        for _ in range(max_new_tokens):
            if use_cache:
                logits, cache = model(tokens if cache is None else tokens[:, -1:], cache=cache)
            else:
                logits, _ = model(tokens)
            tokens = torch.cat([tokens, sample_next_token(logits[:, -1, :], temperature, top_k, generator)], dim=1)
        return tokens
    finally:
        model.train(was_training)


@torch.no_grad()
def generate_length_check_off_by_one(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                                     generator=None):
    """Raises when P + max_new_tokens equals max_len (>= instead of >), refusing a length that fits."""
    if prompt.shape[1] + max_new_tokens >= model.max_len:
        raise ValueError("too long")
    was_training = model.training
    model.eval()
    try:
        tokens, cache = prompt, None
        for _ in range(max_new_tokens):
            if use_cache:
                logits, cache = model(tokens if cache is None else tokens[:, -1:], cache=cache)
            else:
                logits, _ = model(tokens)
            tokens = torch.cat([tokens, sample_next_token(logits[:, -1, :], temperature, top_k, generator)], dim=1)
        return tokens
    finally:
        model.train(was_training)


@torch.no_grad()
def generate_always_train_after(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                                generator=None):
    """Calls model.train() at the end instead of restoring the mode the model was in."""
    if prompt.shape[1] + max_new_tokens > model.max_len:
        raise ValueError("too long")
    model.eval()
    try:
        tokens, cache = prompt, None
        for _ in range(max_new_tokens):
            if use_cache:
                logits, cache = model(tokens if cache is None else tokens[:, -1:], cache=cache)
            else:
                logits, _ = model(tokens)
            tokens = torch.cat([tokens, sample_next_token(logits[:, -1, :], temperature, top_k, generator)], dim=1)
        return tokens
    finally:
        model.train()


@torch.no_grad()
def generate_no_finally(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                        generator=None):
    """Restores the mode only on success: without try/finally an error leaves the model in eval mode."""
    if prompt.shape[1] + max_new_tokens > model.max_len:
        raise ValueError("too long")
    was_training = model.training
    model.eval()
    tokens, cache = prompt, None
    for _ in range(max_new_tokens):
        if use_cache:
            logits, cache = model(tokens if cache is None else tokens[:, -1:], cache=cache)
        else:
            logits, _ = model(tokens)
        tokens = torch.cat([tokens, sample_next_token(logits[:, -1, :], temperature, top_k, generator)], dim=1)
    model.train(was_training)
    return tokens


@torch.no_grad()
def generate_first_position_logits(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                                   generator=None):
    """Samples from logits[:, 0] (the first position) instead of logits[:, -1]."""
    if prompt.shape[1] + max_new_tokens > model.max_len:
        raise ValueError("too long")
    was_training = model.training
    model.eval()
    try:
        tokens, cache = prompt, None
        for _ in range(max_new_tokens):
            if use_cache:
                logits, cache = model(tokens if cache is None else tokens[:, -1:], cache=cache)
            else:
                logits, _ = model(tokens)
            tokens = torch.cat([tokens, sample_next_token(logits[:, 0, :], temperature, top_k, generator)], dim=1)
        return tokens
    finally:
        model.train(was_training)


@torch.no_grad()
def generate_drops_sampling_args(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                                 generator=None):
    """Calls sample_next_token(logits, generator=generator): temperature and top_k are never passed on."""
    if prompt.shape[1] + max_new_tokens > model.max_len:
        raise ValueError("too long")
    was_training = model.training
    model.eval()
    try:
        tokens, cache = prompt, None
        for _ in range(max_new_tokens):
            if use_cache:
                logits, cache = model(tokens if cache is None else tokens[:, -1:], cache=cache)
            else:
                logits, _ = model(tokens)
            tokens = torch.cat([tokens, sample_next_token(logits[:, -1, :], generator=generator)], dim=1)
        return tokens
    finally:
        model.train(was_training)


@torch.no_grad()
def generate_stops_on_total_length(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                                   generator=None):
    """Loops while the whole sequence is shorter than max_new_tokens, so it adds max_new_tokens - P tokens."""
    if prompt.shape[1] + max_new_tokens > model.max_len:
        raise ValueError("too long")
    was_training = model.training
    model.eval()
    try:
        tokens, cache = prompt, None
        while tokens.shape[1] < max_new_tokens:
            if use_cache:
                logits, cache = model(tokens if cache is None else tokens[:, -1:], cache=cache)
            else:
                logits, _ = model(tokens)
            tokens = torch.cat([tokens, sample_next_token(logits[:, -1, :], temperature, top_k, generator)], dim=1)
        return tokens
    finally:
        model.train(was_training)


# ======================================================================================================================
# Variants (correct, must be accepted)
# ======================================================================================================================

class RopeComplex(nn.Module):
    """RoPE as complex multiplication: pairs viewed as complex numbers times a table of unit phasors."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__()
        self.max_len = max_len
        freqs = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.arange(max_len, dtype=torch.float64).unsqueeze(1) * freqs.unsqueeze(0)
        self.register_buffer("cos", angles.cos().to(torch.get_default_dtype()), persistent=False)
        self.register_buffer("sin", angles.sin().to(torch.get_default_dtype()), persistent=False)

    def forward(self, x, offset=0):
        seq_len = x.size(-2)
        if offset + seq_len > self.max_len:
            raise ValueError(f"offset {offset} + length {seq_len} > max_len {self.max_len}")
        work = torch.float64 if x.dtype == torch.float64 else torch.float32
        z = torch.view_as_complex(x.to(work).reshape(*x.shape[:-1], -1, 2).contiguous())
        phasor = torch.complex(self.cos[offset:offset + seq_len].to(work), self.sin[offset:offset + seq_len].to(work))
        return torch.view_as_real(z * phasor).flatten(-2).to(x.dtype)


class RopeRotateEveryTwo(nn.Module):
    """GPT-J style: x * cos_full + rotate_every_two(x) * sin_full, with each angle repeated for its pair."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__()
        self.max_len = max_len
        inv_freq = base ** (-torch.arange(0, head_dim, 2).double() / head_dim)
        angle = torch.einsum("p,f->pf", torch.arange(max_len).double(), inv_freq)
        self.register_buffer("cos", angle.cos().to(torch.get_default_dtype()), persistent=False)
        self.register_buffer("sin", angle.sin().to(torch.get_default_dtype()), persistent=False)

    def forward(self, x, offset=0):
        n = x.shape[2]
        if offset + n > self.max_len:
            raise ValueError("RoPE positions beyond max_len")
        cos = self.cos[offset:offset + n].repeat_interleave(2, dim=-1).to(x.dtype)  # (L, d)
        sin = self.sin[offset:offset + n].repeat_interleave(2, dim=-1).to(x.dtype)
        rotated = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)  # (-x1, x0, -x3, x2, ...)
        return x * cos + rotated * sin


class AttnSDPAExplicitMask(CausalSelfAttention):
    """Uses F.scaled_dot_product_attention with an explicit boolean mask (offset diagonal) when no attention map
    is asked for; the explicit computation otherwise."""

    def forward(self, x, cache=None, return_attention=False):
        if return_attention:
            return super().forward(x, cache=cache, return_attention=True)
        batch, length, _ = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        past = 0 if cache is None else cache[0].shape[2]
        if self.rotary is not None:
            q, k = self.rotary(q, past), self.rotary(k, past)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        mask = torch.ones(length, past + length, dtype=torch.bool, device=x.device).tril(past)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o_proj(out.transpose(1, 2).flatten(2)), (k, v)


class AttnEinsum(CausalSelfAttention):
    """Everything in einsum, heads split with view/transpose, the mask built from a cached tril buffer."""

    def __init__(self, embed_dim, num_heads, max_len, rope=True):
        super().__init__(embed_dim, num_heads, max_len, rope)
        self.register_buffer("tril", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)), persistent=False)

    def forward(self, x, cache=None, return_attention=False):
        B, L, D = x.shape
        H, d = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, L, H, d).transpose(1, 2)
        k = self.k_proj(x).view(B, L, H, d).transpose(1, 2)
        v = self.v_proj(x).view(B, L, H, d).transpose(1, 2)
        past = cache[0].shape[2] if cache is not None else 0
        if self.rotary is not None:
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=2), torch.cat((cache[1], v), dim=2)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * d ** -0.5
        mask = self.tril[past:past + L, :past + L]  # rows = absolute query positions
        attn = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        out = torch.einsum("bhqk,bhkd->bqhd", attn, v).reshape(B, L, D)
        out = self.o_proj(out)
        return (out, (k, v), attn) if return_attention else (out, (k, v))


class BlockOtherCreationOrder(GPTBlock):
    """Creates attention and the feed-forward network before the norms (other init draws, same layout) and
    writes forward with intermediate names."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, max_len, activation=nn.GELU, dropout=0.0):
        nn.Module.__init__(self)
        self.attention = CausalSelfAttention(embed_dim, num_heads, max_len)
        self.feedforward = nn.Sequential(nn.Linear(embed_dim, feedforward_dim), activation(),
                                         nn.Linear(feedforward_dim, embed_dim))
        self.dropout = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(embed_dim)
        self.norm1 = nn.LayerNorm(embed_dim)

    def forward(self, x, cache=None):
        attn_out, cache = self.attention(self.norm1(x), cache)
        residual = x + self.dropout(attn_out)
        ff_out = self.feedforward(self.norm2(residual))
        return residual + self.dropout(ff_out), cache


class GPTTiedOtherWay(GPT):
    """Ties by giving the embedding the head's parameter (token_embedding.weight = lm_head.weight): one tensor."""

    def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_layers, max_len, dropout=0.0):
        nn.Module.__init__(self)
        self.max_len = max_len
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        self.blocks = nn.ModuleList(
            [GPTBlock(embed_dim, num_heads, feedforward_dim, max_len, dropout=dropout) for _ in range(num_layers)])
        self.final_norm = nn.LayerNorm(embed_dim)
        self.lm_head = nn.Linear(embed_dim, vocab_size, bias=False)
        self.token_embedding.weight = self.lm_head.weight


class GPTFunctionalHead(GPT):
    """Keeps the tied lm_head but computes the logits with F.linear on the embedding matrix, and threads the
    cache with zip."""

    def forward(self, tokens, cache=None):
        x = self.token_embedding(tokens)
        caches = cache if cache is not None else [None] * len(self.blocks)
        new_cache = []
        for block, layer_cache in zip(self.blocks, caches):
            x, layer_cache = block(x, layer_cache)
            new_cache.append(layer_cache)
        return F.linear(self.final_norm(x), self.token_embedding.weight), new_cache


def sample_sort_threshold(logits, temperature=1.0, top_k=None, generator=None):
    """Top-k by sorting: the k-th largest is sorted[:, k - 1]; clamps k to V instead of skipping."""
    if temperature == 0:
        return logits.max(dim=-1, keepdim=True).indices
    scaled = logits / temperature
    if top_k is not None:
        k = min(top_k, scaled.size(-1))
        kth = scaled.sort(dim=-1, descending=True).values[:, k - 1].unsqueeze(-1)
        scaled = scaled.masked_fill(scaled < kth, -math.inf)
    return torch.multinomial(F.softmax(scaled, dim=-1), num_samples=1, generator=generator)


def sample_topk_before_temperature(logits, temperature=1.0, top_k=None, generator=None):
    """Filters the raw logits first, then divides by the temperature (the same set for any positive temperature)."""
    if temperature == 0:
        return torch.argmax(logits, dim=-1).unsqueeze(-1)
    keep = torch.ones_like(logits, dtype=torch.bool)
    if top_k is not None and top_k < logits.size(-1):
        keep = logits >= torch.topk(logits, top_k, dim=-1).values[:, [-1]]
    probs = torch.softmax(logits.masked_fill(~keep, float("-inf")) / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=generator)


def sample_zero_probabilities(logits, temperature=1.0, top_k=None, generator=None):
    """Top-k applied to the probabilities: those outside the top k are zeroed and multinomial renormalises."""
    if temperature == 0:
        return logits.argmax(-1, keepdim=True)
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_k is not None and top_k < probs.shape[-1]:
        kth = probs.topk(top_k, dim=-1).values[:, -1:]
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
    return torch.multinomial(probs, 1, generator=generator)


@torch.no_grad()
def generate_with_slices(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                         generator=None):
    """Preallocates the output and writes one column per step; with the cache feeds the last written column."""
    batch, prompt_len = prompt.shape
    total = prompt_len + max_new_tokens
    if total > model.max_len:
        raise ValueError(f"{total} tokens exceed max_len {model.max_len}")
    out = torch.empty(batch, total, dtype=prompt.dtype, device=prompt.device)
    out[:, :prompt_len] = prompt
    training = model.training
    model.eval()
    try:
        cache = None
        for position in range(prompt_len, total):
            if not use_cache:
                logits, _ = model(out[:, :position])
            elif cache is None:
                logits, cache = model(out[:, :position])
            else:
                logits, cache = model(out[:, position - 1:position], cache)
            out[:, position:position + 1] = sample_next_token(logits[:, -1], temperature, top_k, generator)
        return out
    finally:
        model.train(training)


@torch.no_grad()
def generate_with_while(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True,
                        generator=None):
    """A while loop on the number of new tokens, the mode saved with a context manager style flag."""
    if prompt.size(1) + max_new_tokens > model.max_len:
        raise ValueError("sequence would exceed model.max_len")
    previous_mode = model.training
    try:
        model.train(False)
        sequence, cache, new = prompt.clone(), None, 0
        step_input = sequence
        while new < max_new_tokens:
            logits, next_cache = model(step_input, cache=cache if use_cache else None)
            token = sample_next_token(logits[:, -1, :], temperature=temperature, top_k=top_k, generator=generator)
            sequence = torch.cat((sequence, token), dim=-1)
            cache, step_input = (next_cache, token) if use_cache else (None, sequence)
            new += 1
        return sequence
    finally:
        model.train(previous_mode)


# ======================================================================================================================
# The lists
# ======================================================================================================================

MISTAKES = [
    # Task 1: RotaryEmbedding
    dict(task=1, name="rope_rotate_half", objects={"RotaryEmbedding": RopeRotateHalf},
         what="RoPE pairs feature j with feature j + d/2 (rotate-half) instead of the interleaved pairs 2i, 2i+1."),
    dict(task=1, name="rope_theta_missing_factor_two", objects={"RotaryEmbedding": RopeThetaNoFactorTwo},
         what="The frequencies are base ** (-i / d) instead of base ** (-2i / d): the exponent lacks the factor 2."),
    dict(task=1, name="rope_reversed_rotation", objects={"RotaryEmbedding": RopeReversedRotation},
         what="The sin terms have the wrong signs, so each pair turns by -p*theta instead of +p*theta."),
    dict(task=1, name="rope_ignores_offset", objects={"RotaryEmbedding": RopeIgnoresOffset},
         what="forward always uses the tables' first L rows, so a nonzero offset does not shift the positions."),
    dict(task=1, name="rope_positions_from_one", objects={"RotaryEmbedding": RopePositionsFromOne},
         what="The tables are built for positions 1..max_len instead of 0..max_len-1, so position 0 is rotated."),
    dict(task=1, name="rope_lecture_notes_product", objects={"RotaryEmbedding": RopeLectureNotesProduct},
         what="Multiplies each feature by sin/cos of its position (the notes' version) instead of rotating pairs."),
    dict(task=1, name="rope_modifies_input", objects={"RotaryEmbedding": RopeInPlace},
         what="The rotated pairs are written back into x in place, so the caller's tensor is changed."),
    dict(task=1, name="rope_persistent_buffers", objects={"RotaryEmbedding": RopePersistentBuffers},
         what="cos and sin are registered as persistent buffers, so they appear in the state_dict."),
    dict(task=1, name="rope_no_length_check", objects={"RotaryEmbedding": RopeNoLengthCheck},
         what="No ValueError when offset + L exceeds max_len: the table slice is simply too short."),
    # Task 2: CausalSelfAttention
    dict(task=2, name="attn_mask_sees_next_token", objects={"CausalSelfAttention": AttnMaskSeesNext},
         what="The causal mask is one diagonal too high, so each query also attends to the next token."),
    dict(task=2, name="attn_mask_transposed", objects={"CausalSelfAttention": AttnMaskTransposed},
         what="The mask hides the past instead of the future (triu instead of tril)."),
    dict(task=2, name="attn_rotates_values", objects={"CausalSelfAttention": AttnRotatesValues},
         what="RoPE is applied to the values too; only queries and keys should be rotated."),
    dict(task=2, name="attn_scale_half_head_dim", objects={"CausalSelfAttention": AttnScaleByHeadDim},
         what="The scores are divided by head_dim ** 1 / 2 (= head_dim / 2) instead of sqrt(head_dim)."),
    dict(task=2, name="attn_softmax_over_queries", objects={"CausalSelfAttention": AttnSoftmaxOverQueries},
         what="The softmax runs over dim=-2 (the queries) instead of over the keys (dim=-1)."),
    dict(task=2, name="attn_split_heads_without_transpose", objects={"CausalSelfAttention": AttnSplitWithoutTranspose},
         what="Heads are split by reshaping (B, L, D) straight to (B, H, L, head_dim), mixing positions and heads."),
    dict(task=2, name="attn_merge_heads_without_transpose", objects={"CausalSelfAttention": AttnMergeWithoutTranspose},
         what="Heads are merged by reshaping (B, H, L, head_dim) straight to (B, L, D), without moving H back."),
    dict(task=2, name="attn_rope_before_head_split", objects={"CausalSelfAttention": AttnRopeBeforeSplit},
         what="RoPE is built for embed_dim and applied before splitting heads instead of per head on head_dim."),
    dict(task=2, name="attn_mask_fill_zero", objects={"CausalSelfAttention": AttnMaskFillZero},
         what="Masked scores are set to 0 instead of -inf, so future tokens still get attention weight."),
    dict(task=2, name="attn_mask_after_softmax", objects={"CausalSelfAttention": AttnMaskAfterSoftmax},
         what="The future is zeroed after the softmax, so the attention rows no longer sum to 1."),
    dict(task=2, name="attn_detached_weights", objects={"CausalSelfAttention": AttnDetachedWeights},
         what="The attention weights are detached before use, so no gradient reaches q_proj and k_proj."),
    dict(task=2, name="attn_returns_unrotated_keys", objects={"CausalSelfAttention": AttnReturnsUnrotatedKeys},
         what="The returned keys are those from before RoPE; the cache must hold the rotated keys."),
    # Task 3: the KV cache
    dict(task=3, name="cache_positions_restart_at_zero", objects={"CausalSelfAttention": CachePositionsRestart},
         what="With a cache the new queries and keys are rotated from position 0 instead of offset=L_past."),
    dict(task=3, name="cache_mask_top_left", objects={"CausalSelfAttention": CacheMaskTopLeft},
         what="The (L, L_past + L) mask uses tril() without diagonal=L_past, so new queries miss the cached prefix."),
    dict(task=3, name="cache_new_before_past", objects={"CausalSelfAttention": CacheNewBeforePast},
         what="The new keys and values are concatenated before the cached ones instead of after them."),
    dict(task=3, name="cache_keys_rotated_twice", objects={"CausalSelfAttention": CacheRotatedTwice},
         what="RoPE is applied to the keys after concatenation from position 0, so cached keys are rotated again."),
    dict(task=3, name="cache_length_from_head_axis", objects={"CausalSelfAttention": CachePastFromHeadAxis},
         what="L_past is read from dim 1 (the heads) of the cached keys instead of dim 2 (the positions)."),
    dict(task=3, name="cache_returns_new_positions_only", objects={"CausalSelfAttention": CacheReturnsNewOnly},
         what="The returned cache holds only the new positions instead of the concatenated keys and values."),
    dict(task=3, name="cache_values_from_cached_keys", objects={"CausalSelfAttention": CacheValuesFromKeys},
         what="The new values are concatenated after the cached keys (cache[0]) instead of the cached values."),
    # Task 4: GPTBlock
    dict(task=4, name="block_post_norm", objects={"GPTBlock": BlockPostNorm},
         what="The block is post-norm (LayerNorm after each residual sum) instead of pre-norm."),
    dict(task=4, name="block_residual_from_normed", objects={"GPTBlock": BlockResidualFromNormed},
         what="x is overwritten with norm1(x), so the residual adds the normalised stream, not the raw one."),
    dict(task=4, name="block_norm1_used_twice", objects={"GPTBlock": BlockSharedNorm},
         what="norm1 is used before the feed-forward network too; norm2 is never used."),
    dict(task=4, name="block_parallel_sublayers", objects={"GPTBlock": BlockParallel},
         what="The feed-forward network reads the block's input instead of the stream after the attention."),
    dict(task=4, name="block_cache_not_passed", objects={"GPTBlock": BlockDropsCache},
         what="The cache is not passed to the attention, so a cached step attends only to its own tokens."),
    dict(task=4, name="block_relu_hardcoded", objects={"GPTBlock": BlockHardcodedReLU},
         what="The feed-forward network uses nn.ReLU() instead of the activation argument (GELU by default)."),
    # Task 5: GPT
    dict(task=5, name="gpt_head_not_tied", objects={"GPT": GPTUntiedHead},
         what="lm_head has its own weight; it must be the embedding's weight (one tensor, one gradient)."),
    dict(task=5, name="gpt_no_final_norm", objects={"GPT": GPTNoFinalNorm},
         what="The final LayerNorm is skipped before the head."),
    dict(task=5, name="gpt_embedding_scaled", objects={"GPT": GPTScaledEmbedding},
         what="The token embeddings are multiplied by sqrt(embed_dim); GPT here uses them unscaled."),
    dict(task=5, name="gpt_extra_position_table", objects={"GPT": GPTPositionTable},
         what="A learned position embedding is added to the tokens; RoPE alone should carry positions."),
    dict(task=5, name="gpt_first_cache_for_every_block", objects={"GPT": GPTFirstCacheEverywhere},
         what="Every block receives cache[0] instead of block l receiving cache[l]."),
    dict(task=5, name="gpt_head_bias", objects={"GPT": GPTHeadWithBias},
         what="lm_head is created with a bias (bias=False was asked), adding V parameters and shifting the logits."),
    # Task 6: sample_next_token
    dict(task=6, name="sample_temperature_after_softmax",
         objects={"sample_next_token": sample_temperature_after_softmax},
         what="The probabilities are divided by the temperature after the softmax, so temperature has no effect."),
    dict(task=6, name="sample_multiplies_temperature", objects={"sample_next_token": sample_multiplies_temperature},
         what="The logits are multiplied by the temperature instead of divided by it."),
    dict(task=6, name="sample_topk_keeps_one_more", objects={"sample_next_token": sample_topk_keeps_one_more},
         what="The top-k threshold is taken at sorted index k, so k + 1 tokens are kept."),
    dict(task=6, name="sample_topk_drops_ties", objects={"sample_next_token": sample_topk_drops_ties},
         what="Exactly k indices are kept with scatter, so tokens tied with the k-th largest logit are dropped."),
    dict(task=6, name="sample_topk_fills_zero", objects={"sample_next_token": sample_topk_fills_zero},
         what="Logits outside the top k are set to 0 instead of -inf, so they can still be drawn."),
    dict(task=6, name="sample_ignores_generator", objects={"sample_next_token": sample_ignores_generator},
         what="The generator is not passed to torch.multinomial, so the draws use the global random state."),
    dict(task=6, name="sample_greedy_flat_shape", objects={"sample_next_token": sample_greedy_flat},
         what="Greedy decoding returns argmax without keepdim, shape (B,) instead of (B, 1)."),
    dict(task=6, name="sample_no_greedy_case", objects={"sample_next_token": sample_no_greedy_case},
         what="temperature == 0 is not special-cased, so the logits are divided by zero instead of taking argmax."),
    dict(task=6, name="sample_divides_logits_in_place", objects={"sample_next_token": sample_divides_in_place},
         what="logits /= temperature modifies the caller's logits in place."),
    dict(task=6, name="sample_topk_larger_than_vocab", objects={"sample_next_token": sample_topk_unguarded},
         what="topk is called even when top_k exceeds V, which raises instead of keeping every token."),
    # Task 8: generate
    dict(task=8, name="generate_feeds_whole_sequence_with_cache", objects={"generate": generate_feeds_all_with_cache},
         what="With use_cache the whole sequence is fed every step along with the cache, instead of the newest token."),
    dict(task=8, name="generate_cache_not_kept", objects={"generate": generate_cache_not_kept},
         what="Only the newest token is fed, but the cache the model returns is never kept, so context is lost."),
    dict(task=8, name="generate_no_length_check", objects={"generate": generate_no_length_check},
         what="No ValueError when P + max_new_tokens exceeds model.max_len."),
    dict(task=8, name="generate_length_check_off_by_one", objects={"generate": generate_length_check_off_by_one},
         what="The length check uses >= instead of >, so P + max_new_tokens == max_len is wrongly refused."),
    dict(task=8, name="generate_always_train_after", objects={"generate": generate_always_train_after},
         what="model.train() is called at the end instead of restoring the mode the model was in."),
    dict(task=8, name="generate_mode_not_restored_on_error", objects={"generate": generate_no_finally},
         what="The mode is restored without try/finally, so an error leaves the model in eval mode."),
    dict(task=8, name="generate_first_position_logits", objects={"generate": generate_first_position_logits},
         what="Tokens are drawn from logits[:, 0] (the first position) instead of logits[:, -1]."),
    dict(task=8, name="generate_drops_temperature_top_k", objects={"generate": generate_drops_sampling_args},
         what="temperature and top_k are not passed to sample_next_token, so it always samples at 1 with no top-k."),
    dict(task=8, name="generate_stops_on_total_length", objects={"generate": generate_stops_on_total_length},
         what="The loop stops when the whole sequence reaches max_new_tokens, not after max_new_tokens new tokens."),
]

VARIANTS = [
    dict(task=1, name="rope_complex_numbers", objects={"RotaryEmbedding": RopeComplex},
         what="RoPE as complex multiplication with view_as_complex and a phasor table."),
    dict(task=1, name="rope_rotate_every_two", objects={"RotaryEmbedding": RopeRotateEveryTwo},
         what="GPT-J style x * cos + rotate_every_two(x) * sin with each angle repeated for its pair."),
    dict(task=2, name="attn_sdpa_explicit_mask", objects={"CausalSelfAttention": AttnSDPAExplicitMask},
         what="F.scaled_dot_product_attention with an explicit offset boolean mask (explicit path for the map)."),
    dict(task=3, name="attn_sdpa_explicit_mask_cache", objects={"CausalSelfAttention": AttnSDPAExplicitMask},
         what="The same SDPA layer, checked with the cache: its mask is tril(L_past), not is_causal."),
    dict(task=2, name="attn_einsum_tril_buffer", objects={"CausalSelfAttention": AttnEinsum},
         what="einsum everywhere, the mask sliced from a non-persistent (max_len, max_len) tril buffer."),
    dict(task=3, name="attn_einsum_tril_buffer_cache", objects={"CausalSelfAttention": AttnEinsum},
         what="The einsum layer with the cache: the mask rows are sliced at the absolute query positions."),
    dict(task=4, name="block_other_creation_order", objects={"GPTBlock": BlockOtherCreationOrder},
         what="Creates attention and feed-forward before the norms (other init draws) with the same layout."),
    dict(task=5, name="gpt_tied_other_way", objects={"GPT": GPTTiedOtherWay},
         what="Ties by giving the embedding the head's parameter: one tensor (Linear init, not N(0, 1))."),
    dict(task=5, name="gpt_functional_head", objects={"GPT": GPTFunctionalHead},
         what="Logits via F.linear on the embedding matrix (lm_head still tied), cache threaded with zip."),
    dict(task=6, name="sample_sort_threshold", objects={"sample_next_token": sample_sort_threshold},
         what="Top-k threshold from a descending sort at index k - 1, k clamped to V; greedy via max().indices."),
    dict(task=6, name="sample_topk_before_temperature", objects={"sample_next_token": sample_topk_before_temperature},
         what="Top-k filtering before dividing by the temperature (the same set for any positive temperature)."),
    dict(task=6, name="sample_zero_probabilities", objects={"sample_next_token": sample_zero_probabilities},
         what="Top-k on the probabilities after the softmax, zeroing the rest; multinomial renormalises."),
    dict(task=8, name="generate_preallocated", objects={"generate": generate_with_slices},
         what="Preallocates (B, P + N) and writes one column per step, feeding the last column with the cache."),
    dict(task=8, name="generate_while_loop", objects={"generate": generate_with_while},
         what="A while loop counting new tokens, mode saved and restored in try/finally."),
]
