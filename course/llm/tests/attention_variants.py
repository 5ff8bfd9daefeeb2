"""Valid GroupedQueryAttention (Task 5) and tiled_attention (Task 6) answers written another way, from the student
notebook's task text alone: each must pass the check and earn the grader's points."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .checks import reference


def _rotary(head_dim, max_len):
    """The notebook's given RotaryEmbedding (a provided cell, not an answer)."""
    return reference()["RotaryEmbedding"](head_dim, max_len)


class _Projections(nn.Module):
    """The pinned projections and RoPE, shared by the Task 5 variants below."""

    def __init__(self, embed_dim, num_heads, num_kv_heads, max_len):
        super().__init__()
        self.h, self.kv, self.d = num_heads, num_kv_heads, embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, num_kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(embed_dim, num_kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.rotary = _rotary(self.d, max_len)

    def split(self, t, heads):
        """(B, L, heads * d) -> (B, heads, L, d)."""
        return t.unflatten(-1, (heads, self.d)).transpose(1, 2)  # (B, heads, L, d)


class EinsumExpandGQA(_Projections):
    """einsum scores, the key/value heads widened by expand + reshape, the mask by position arithmetic."""

    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].size(-2)
        q = self.rotary(self.split(self.q_proj(x), self.h), offset=past)  # (B, H, L, d)
        k = self.rotary(self.split(self.k_proj(x), self.kv), offset=past)  # (B, H_kv, L, d)
        v = self.split(self.v_proj(x), self.kv)  # (B, H_kv, L, d)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=-2), torch.cat([cache[1], v], dim=-2)  # (B, H_kv, L_all, d)
        widen = lambda t: t[:, :, None].expand(b, self.kv, self.h // self.kv, *t.shape[2:]).reshape(
            b, self.h, *t.shape[2:])  # (B, H_kv, L_all, d) -> (B, H, L_all, d), consecutive heads share
        scores = torch.einsum("bhqd,bhkd->bhqk", q, widen(k)) / math.sqrt(self.d)  # (B, H, L, L_all)
        future = torch.arange(past + n)[None, :] > torch.arange(past, past + n)[:, None]  # (L, L_all)
        weights = scores.masked_fill(future, -math.inf).softmax(-1)  # (B, H, L, L_all)
        out = torch.einsum("bhqk,bhkd->bqhd", weights, widen(v)).reshape(b, n, -1)  # (B, L, D)
        return self.o_proj(out), (k, v)


class GroupedQueriesGQA(_Projections):
    """No repeat: the queries grouped as (B, H_kv, group, L, d) broadcast against the shared keys; RoPE on the
    queries and keys in one call; a hand-written softmax with an additive mask."""

    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        q, k = self.split(self.q_proj(x), self.h), self.split(self.k_proj(x), self.kv)  # (B, H, L, d), (B, H_kv, L, d)
        qk = torch.cat([q, k], dim=1)  # (B, H + H_kv, L, d)
        q, k = self.rotary(qk, offset=past).split([self.h, self.kv], dim=1)  # (B, H, L, d), (B, H_kv, L, d)
        v = self.split(self.v_proj(x), self.kv)  # (B, H_kv, L, d)
        if cache is not None:
            k, v = torch.cat((cache[0], k), 2), torch.cat((cache[1], v), 2)  # (B, H_kv, L_all, d)
        q = q.reshape(b, self.kv, self.h // self.kv, n, self.d)  # (B, H_kv, group, L, d)
        scores = q @ k[:, :, None].transpose(-2, -1) * self.d ** -0.5  # (B, H_kv, group, L, L_all)
        scores = scores + torch.full((n, past + n), -math.inf, dtype=x.dtype).triu(past + 1)  # masked above
        weights = torch.exp(scores - scores.amax(-1, keepdim=True))  # (B, H_kv, group, L, L_all)
        out = (weights / weights.sum(-1, keepdim=True)) @ v[:, :, None]  # (B, H_kv, group, L, d)
        return self.o_proj(out.reshape(b, self.h, n, self.d).transpose(1, 2).flatten(2)), (k, v)  # (B, L, D)


class HeadLoopGQA(_Projections):
    """One query head at a time, reading key/value head h // group; the cache written into a preallocated tensor."""

    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].size(2)
        q = self.rotary(self.split(self.q_proj(x), self.h), offset=past)  # (B, H, L, d)
        k = x.new_empty(b, self.kv, past + n, self.d)  # (B, H_kv, L_all, d)
        v = torch.empty_like(k)  # (B, H_kv, L_all, d)
        k[:, :, past:] = self.rotary(self.split(self.k_proj(x), self.kv), offset=past)
        v[:, :, past:] = self.split(self.v_proj(x), self.kv)
        if cache is not None:
            k[:, :, :past], v[:, :, :past] = cache
        mask = torch.ones(n, past + n, dtype=torch.bool).tril(diagonal=past)  # (L, L_all): True where seen
        heads = []
        for head in range(self.h):
            kv = head // (self.h // self.kv)
            scores = q[:, head] @ k[:, kv].mT / math.sqrt(self.d)  # (B, L, L_all)
            heads.append(torch.where(mask, scores, -math.inf).softmax(-1) @ v[:, kv])  # (B, L, d)
        return self.o_proj(torch.cat(heads, dim=-1)), (k, v)  # (B, L, D)


class SdpaGQA(_Projections):
    """F.scaled_dot_product_attention with enable_gqa=True and an explicit boolean mask (Task 5 may call it)."""

    def forward(self, x, cache=None):
        b, n, _ = x.shape
        past = 0 if cache is None else cache[0].shape[2]
        q = self.rotary(self.split(self.q_proj(x), self.h), offset=past)  # (B, H, L, d)
        k = self.rotary(self.split(self.k_proj(x), self.kv), offset=past)  # (B, H_kv, L, d)
        v = self.split(self.v_proj(x), self.kv)  # (B, H_kv, L, d)
        if cache is not None:
            k, v = torch.cat((cache[0], k), 2), torch.cat((cache[1], v), 2)  # (B, H_kv, L_all, d)
        mask = torch.ones(n, past + n, dtype=torch.bool).tril(past)  # (L, L_all)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)  # (B, H, L, d)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1)), (k, v)  # (B, L, D)


GQA_VARIANTS = [SdpaGQA, EinsumExpandGQA, GroupedQueriesGQA, HeadLoopGQA]


def logsumexp_blocks(query, key, value, block_size, causal):
    """A running log-sum-exp instead of max and sum: the accumulator stays normalised after every block.

    Args:
        query, key, value: (B, H, L, d).
        block_size, causal: the keys per block, whether to mask the future.
    Returns:
        (B, H, L, d).
    """
    seq_len = query.size(-2)
    lse = torch.full_like(query[..., :1], -math.inf)  # (B, H, L, 1)
    out = torch.zeros_like(query)  # (B, H, L, d)
    for start in range(0, seq_len, block_size):
        scores = query @ key[..., start:start + block_size, :].mT / math.sqrt(query.size(-1))  # (B, H, L, block)
        if causal:
            keys = torch.arange(start, start + scores.size(-1))  # (block,)
            scores = scores.masked_fill(keys > torch.arange(seq_len)[:, None], -math.inf)
        new_lse = torch.logaddexp(lse, scores.logsumexp(-1, keepdim=True))  # (B, H, L, 1)
        out = out * torch.exp(lse - new_lse) + torch.exp(scores - new_lse) @ value[..., start:start + block_size, :]
        lse = new_lse
    return out


def merged_block_states(query, key, value, block_size, causal):
    """Each block's own softmax state (max, sum, output) first, then merged into the running one at the block's end;
    a while loop; the mask an additive triangle shifted by the block's start.

    Args:
        query, key, value: (B, H, L, d).
        block_size, causal: the keys per block, whether to mask the future.
    Returns:
        (B, H, L, d).
    """
    seq_len, scale = query.size(-2), query.size(-1) ** -0.5
    m, total, acc = None, None, None
    start = 0
    while start < seq_len:
        k, v = key[..., start:start + block_size, :], value[..., start:start + block_size, :]  # (B, H, block, d)
        scores = (query * scale) @ k.transpose(-1, -2)  # (B, H, L, block)
        if causal:  # key start + c is after query i where c - i >= 1 - start
            scores = scores + torch.full(scores.shape[-2:], -math.inf, dtype=scores.dtype).triu(1 - start)
        block_max = scores.amax(-1, keepdim=True)  # (B, H, L, 1); -inf for a row that sees no key here
        p = torch.exp(scores - block_max.nan_to_num(neginf=0.0))  # (B, H, L, block); all 0 for such a row
        state = (block_max, p.sum(-1, keepdim=True), p @ v)  # (B, H, L, 1), (B, H, L, 1), (B, H, L, d)
        if m is None:
            m, total, acc = state
        else:
            new = torch.maximum(m, block_max)  # (B, H, L, 1)
            old_c, block_c = torch.exp(m - new), torch.exp(block_max - new)
            m, total, acc = new, total * old_c + state[1] * block_c, acc * old_c + state[2] * block_c
        start += block_size
    return acc / total


def float64_blocks(query, key, value, block_size, causal):
    """The max-and-sum updates accumulated in float64, cast back to the inputs' dtype at the end; scores in base 2
    (exp2 of log2(e)-scaled scores, as FlashAttention's kernels compute them).

    Args:
        query, key, value: (B, H, L, d).
        block_size, causal: the keys per block, whether to mask the future.
    Returns:
        (B, H, L, d), in query's dtype.
    """
    q, k, v = (t.double() for t in (query, key, value))
    q = q * (math.log2(math.e) / math.sqrt(q.size(-1)))  # scores come out in base 2
    rows = torch.arange(q.size(-2)).unsqueeze(-1)  # (L, 1)
    m = q.new_full((*q.shape[:-1], 1), -math.inf)  # (B, H, L, 1)
    total, acc = torch.zeros_like(m), torch.zeros_like(q)  # (B, H, L, 1), (B, H, L, d)
    for start in range(0, q.size(-2), block_size):
        s = q @ k[..., start:start + block_size, :].mT  # (B, H, L, block)
        if causal:
            s = torch.where(torch.arange(start, start + s.size(-1)) <= rows, s, -math.inf)
        new = torch.maximum(m, s.amax(-1, keepdim=True))  # (B, H, L, 1)
        p = torch.exp2(s - new)  # (B, H, L, block)
        c = torch.exp2(m - new)  # (B, H, L, 1)
        total = c * total + p.sum(-1, keepdim=True)
        acc = c * acc + p @ v[..., start:start + block_size, :]
        m = new
    return (acc / total).to(query.dtype)


def query_blocks(query, key, value, block_size, causal):
    """FlashAttention's loop nest: query blocks outside, key blocks inside, skipping key blocks after the queries."""
    seq_len, head_dim = query.shape[-2:]
    out = torch.empty_like(query)
    for q_start in range(0, seq_len, block_size):
        q = query[..., q_start:q_start + block_size, :]
        rows = torch.arange(q_start, q_start + q.size(-2))
        m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
        total, acc = torch.zeros_like(m), torch.zeros_like(q)
        for k_start in range(0, (q_start + q.size(-2)) if causal else seq_len, block_size):
            k_end = min(k_start + block_size, seq_len)
            scores = q @ key[..., k_start:k_end, :].transpose(-2, -1) * head_dim ** -0.5
            if causal:
                scores = scores.masked_fill(torch.arange(k_start, k_end)[None, :] > rows[:, None], -math.inf)
            new = torch.maximum(m, scores.amax(-1, keepdim=True))
            p, c = torch.exp(scores - new), torch.exp(m - new)
            total, acc, m = total * c + p.sum(-1, keepdim=True), acc * c + p @ value[..., k_start:k_end, :], new
        out[..., q_start:q_start + block_size, :] = acc / total
    return out


TILED_VARIANTS = [query_blocks, logsumexp_blocks, merged_block_states, float64_blocks]
