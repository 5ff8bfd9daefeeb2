"""Plausible Tasks 1-3 mistakes that no planted mistake (course/gpt/mistakes.py) describes.

Written independently of the reference, the way a student might; the checks must reject each one with the words
listed in UNNAMED (course/gpt/tests/test_checks_layers.py), not only "differs".
"""
import torch
import torch.nn.functional as F

from .layers_variants import RotaryFloat32Angles, make_attentions


class RotarySquaredPositions(RotaryFloat32Angles):
    """Angles p² theta: still a rotation of each pair and the identity at 0, but no longer relative."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__(head_dim, max_len, base)
        squared = torch.arange(max_len, dtype=torch.float64)[:, None] ** 2
        theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        self.cos, self.sin = (squared * theta).cos().to(self.cos.dtype), (squared * theta).sin().to(self.sin.dtype)


class RotaryFullWidthTables(RotaryFloat32Angles):
    """The pinned names hold the tables repeated to full width, (max_len, head_dim)."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__(head_dim, max_len, base)
        self.cos, self.sin = self.cos.repeat_interleave(2, -1), self.sin.repeat_interleave(2, -1)

    def forward(self, x, offset=0):
        cos, sin = self.cos[offset:offset + x.size(-2)], self.sin[offset:offset + x.size(-2)]
        partner = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
        return x * cos + partner * sin


class RotaryOneAngle(RotaryFloat32Angles):
    """Every pair turned by the first pair's angle (theta_0 = 1): the tables' values are wrong."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__(head_dim, max_len, base)
        self.cos, self.sin = self.cos[:, :1].expand_as(self.cos).clone(), self.sin[:, :1].expand_as(self.sin).clone()


class RotaryTablesSwapped(RotaryFloat32Angles):
    """The table of sines stored as `cos` and the cosines as `sin`, used the other way round: right outputs, wrong
    pinned tables."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__(head_dim, max_len, base)
        self.cos, self.sin = self.sin.clone(), self.cos.clone()

    def forward(self, x, offset=0):
        self.cos, self.sin = self.sin, self.cos
        try:
            return super().forward(x, offset)
        finally:
            self.cos, self.sin = self.sin, self.cos


class RotaryTablesInForward(torch.nn.Module):
    """Right values, the tables computed in every forward call instead of once as buffers."""

    def __init__(self, head_dim, max_len=2048, base=10000.0):
        super().__init__()
        self.head_dim, self.max_len, self.base = head_dim, max_len, base

    def forward(self, x, offset=0):
        if offset + x.size(-2) > self.max_len:
            raise ValueError("past max_len")
        return RotaryFloat32Angles(self.head_dim, self.max_len, self.base)(x, offset)


def make_unnamed_attentions(RotaryEmbedding):
    """CausalSelfAttention mistakes built on the given (correct) RotaryEmbedding class: name -> class."""
    AttentionSDPA, AttentionEinsum = make_attentions(RotaryEmbedding)[:2]

    class AttentionSDPAUnmasked(AttentionSDPA):
        """SDPA without is_causal: the weights it reports are causal, its outputs are not."""

        def forward(self, x, cache=None, return_attention=False):
            q, k, v = self.project(x, 0)
            out = self.merge(F.scaled_dot_product_attention(q, k, v))
            full = super().forward(x, return_attention=return_attention)
            return (out,) + tuple(full[1:])

    class AttentionSDPACausalWithCache(AttentionSDPA):
        """SDPA's is_causal=True with the cache too (top-left mask), the reported weights right."""

        def forward(self, x, cache=None, return_attention=False):
            past = 0 if cache is None else cache[0].shape[-2]
            q, k, v = self.project(x, past)
            if cache is not None:
                k, v = torch.cat([cache[0], k], -2), torch.cat([cache[1], v], -2)
            out = self.merge(F.scaled_dot_product_attention(q, k, v, is_causal=True))
            if not return_attention:
                return out, (k, v)
            allowed = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(diagonal=past)
            scores = (q @ k.transpose(-1, -2)) * self.size ** -0.5
            return out, (k, v), scores.masked_fill(~allowed, float("-inf")).softmax(-1)

    class AttentionCacheIgnored(AttentionEinsum):
        """The cache argument accepted and ignored: x is taken as positions 0 .. L - 1."""

        def forward(self, x, cache=None, return_attention=False):
            return super().forward(x, return_attention=return_attention)

    class AttentionRotatedBeforeTranspose(AttentionEinsum):
        """RoPE applied to (B, L, H, head_dim), before the heads are moved in front: positions read off the head
        axis."""

        def project(self, x, past):
            q, k, v = (proj(x).unflatten(-1, (self.heads, self.size)) for proj in (self.q_proj, self.k_proj,
                                                                                self.v_proj))  # (B, L, H, head_dim)
            q, k = self.rotary(q, offset=past), self.rotary(k, offset=past)
            return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, H, L, head_dim)

    return dict(sdpa_unmasked=AttentionSDPAUnmasked, sdpa_causal_with_cache=AttentionSDPACausalWithCache,
                cache_ignored=AttentionCacheIgnored, rotated_before_transpose=AttentionRotatedBeforeTranspose)
