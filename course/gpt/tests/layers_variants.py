"""Correct Tasks 1-3 answers written differently from the reference: the checks must accept every one.

Each is its own formulation (not a copy of the reference answer cells). The attention classes take a RotaryEmbedding
class (a student's own Task 1 answer) through make_attentions.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ----- Task 1: RotaryEmbedding ---------------------------------------------------------------------------------

def _frequencies(head_dim, base, dtype):
    return 1.0 / base ** (torch.arange(head_dim // 2, dtype=dtype) * 2 / head_dim)  # (head_dim // 2,)


class RotaryComplex(nn.Module):
    """Pairs read as complex numbers and multiplied by e^{i p theta} (torch.polar); a complex table kept beside the
    pinned cos and sin."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__()
        self.max_len = max_len
        angles = torch.outer(torch.arange(max_len, dtype=torch.float64), _frequencies(head_dim, base, torch.float64))
        self.register_buffer("cos", torch.cos(angles).to(torch.get_default_dtype()), persistent=False)
        self.register_buffer("sin", torch.sin(angles).to(torch.get_default_dtype()), persistent=False)
        self.register_buffer("phases", torch.polar(torch.ones_like(angles), angles), persistent=False)

    def forward(self, x, offset=0):
        length = x.shape[-2]
        if offset + length > self.max_len:
            raise ValueError(f"offset {offset} + length {length} > max_len {self.max_len}")
        pairs = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2).contiguous())
        turned = pairs * self.phases[offset:offset + length]
        return torch.view_as_real(turned).flatten(-2).to(x.dtype)


class RotaryFloat32Angles(nn.Module):
    """Angles computed in float32 whatever the default dtype (off by ~1e-4 rad near position 2048), written into
    the two halves of each pair by index assignment."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__()
        self.limit = max_len
        angles = torch.arange(max_len, dtype=torch.float32)[:, None] * _frequencies(head_dim, base, torch.float32)
        self.register_buffer("cos", angles.cos().to(torch.get_default_dtype()), persistent=False)
        self.register_buffer("sin", angles.sin().to(torch.get_default_dtype()), persistent=False)

    def forward(self, x, offset=0):
        if offset + x.size(-2) > self.limit:
            raise ValueError("RoPE: sequence past max_len")
        cos, sin = self.cos[offset:offset + x.size(-2)], self.sin[offset:offset + x.size(-2)]
        out = torch.empty_like(x)
        out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
        out[..., 1::2] = x[..., 1::2] * cos + x[..., 0::2] * sin
        return out


class RotaryFullWidth(nn.Module):
    """Other names (dim, max_seq_len, theta); the tables repeated to full width in extra buffers, and each pair's
    partner (-x[2i+1], x[2i]) made by a view."""

    def __init__(self, dim, max_seq_len=2048, theta=10000.0):
        super().__init__()
        self.max_seq_len = max_seq_len
        positions = torch.arange(max_seq_len, dtype=torch.get_default_dtype())
        angles = positions[:, None] * _frequencies(dim, theta, torch.get_default_dtype())
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        self.register_buffer("cos_full", angles.cos().repeat_interleave(2, dim=-1), persistent=False)
        self.register_buffer("sin_full", angles.sin().repeat_interleave(2, dim=-1), persistent=False)

    def forward(self, x, offset=0):
        end = offset + x.shape[2]
        if end > self.max_seq_len:
            raise ValueError(f"positions up to {end - 1} but max_seq_len is {self.max_seq_len}")
        pairs = x.unflatten(-1, (-1, 2))
        partner = torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)
        return x * self.cos_full[offset:end].to(x.dtype) + partner * self.sin_full[offset:end].to(x.dtype)


ROTARIES = [RotaryComplex, RotaryFloat32Angles, RotaryFullWidth]


# ----- Tasks 2-3: CausalSelfAttention ---------------------------------------------------------------------------

def make_attentions(RotaryEmbedding):
    """Correct CausalSelfAttention classes built on the given RotaryEmbedding class."""

    class AttentionBase(nn.Module):
        def __init__(self, embed_dim, num_heads, max_len, rope=True):
            super().__init__()
            self.heads, self.size = num_heads, embed_dim // num_heads
            self.q_proj, self.k_proj = nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, embed_dim)
            self.v_proj, self.o_proj = nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, embed_dim)
            self.rotary = RotaryEmbedding(self.size, max_len) if rope else None

        def project(self, x, past):
            """Fused: one matrix product for q, k and v, from the four pinned Linear layers' parameters."""
            weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
            bias = torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
            qkv = F.linear(x, weight, bias).unflatten(-1, (3, self.heads, self.size))  # (B, L, 3, H, head_dim)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)  # (B, H, L, head_dim) each
            if self.rotary is not None:
                q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
            return q, k, v

        def merge(self, heads):
            return self.o_proj(heads.transpose(1, 2).flatten(2))  # (B, L, D)

    class AttentionSDPA(AttentionBase):
        """F.scaled_dot_product_attention: is_causal=True without a cache, a bool mask with one; the weights
        computed apart only when asked for."""

        def forward(self, x, cache=None, return_attention=False):
            past = 0 if cache is None else cache[0].shape[-2]
            q, k, v = self.project(x, past)
            if cache is not None:
                k, v = torch.cat([cache[0], k], -2), torch.cat([cache[1], v], -2)
            mask = None if cache is None else \
                torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(diagonal=past)
            out = self.merge(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=cache is None))
            if not return_attention:
                return out, (k, v)
            allowed = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(diagonal=past)
            scores = (q @ k.transpose(-1, -2)) * self.size ** -0.5
            return out, (k, v), scores.masked_fill(~allowed, -math.inf).softmax(-1)

    class AttentionEinsum(AttentionBase):
        """einsum for the scores and the weighted sum, an additive float mask of -inf above the shifted diagonal."""

        def forward(self, x, cache=None, return_attention=False):
            past = 0 if cache is None else cache[0].size(2)
            q, k, v = self.project(x, past)
            if cache:
                k, v = torch.cat((cache[0], k), dim=2), torch.cat((cache[1], v), dim=2)
            mask = torch.full((q.size(2), k.size(2)), float("-inf")).triu(past + 1)  # (L, L_past + L)
            scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.size) + mask
            weights = torch.softmax(scores, dim=-1)
            out = self.merge(torch.einsum("bhqk,bhkd->bhqd", weights, v))
            return (out, (k, v), weights) if return_attention else (out, (k, v))

    class AttentionLargeNegative(AttentionBase):
        """A float mask of -1e9 instead of -inf, from position indices."""

        def forward(self, x, cache=None, return_attention=False):
            past = cache[0].size(2) if cache is not None else 0
            q, k, v = self.project(x, past)
            if cache is not None:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            query_positions = torch.arange(past, past + q.size(2))[:, None]
            key_positions = torch.arange(k.size(2))[None, :]
            penalty = (key_positions > query_positions).to(q.dtype) * -1e9
            weights = (q @ k.transpose(2, 3) / math.sqrt(self.size) + penalty).softmax(-1)
            out = self.merge(weights @ v)
            return (out, (k, v), weights) if return_attention else (out, (k, v))

    class AttentionMaskBuffer(AttentionBase):
        """The causal mask precomputed once as a non-persistent buffer (max_len, max_len) and sliced per call."""

        def __init__(self, embed_dim, num_heads, max_len, rope=True):
            super().__init__(embed_dim, num_heads, max_len, rope)
            self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len)).bool(), persistent=False)

        def forward(self, x, cache=None, return_attention=False):
            past = 0 if cache is None else len(cache[0][0, 0])
            q, k, v = self.project(x, past)
            if cache is not None:
                k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
            allowed = self.causal[past:past + x.size(1), :past + x.size(1)]  # (L, L_past + L)
            weights = torch.where(allowed, q @ k.mT / math.sqrt(self.size), float("-inf")).softmax(dim=-1)
            out = self.merge(weights @ v)
            return (out, (k, v), weights) if return_attention else (out, (k, v))

    return [AttentionSDPA, AttentionEinsum, AttentionLargeNegative, AttentionMaskBuffer]


def make_attention_without_cache(CausalSelfAttention):
    """A Task 2 answer whose cache branch is not written yet: it raises NotImplementedError when given a cache."""

    class AttentionNoCacheYet(CausalSelfAttention):
        def forward(self, x, cache=None, return_attention=False):
            if cache is not None:
                raise NotImplementedError("the cache is Task 3")
            return super().forward(x, return_attention=return_attention)

    return AttentionNoCacheYet
