"""Plausible Tasks 1-4 mistakes that no planted mistake (course/seq2seq/mistakes.py) describes.

Written independently of the reference, the way a student might; the checks must reject each one with the words
listed in UNNAMED (course/seq2seq/tests/test_checks_layers.py), not only "differs".
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .layers_variants import LayerNormVarMean, MultiheadAttentionEinsum, make_decoder_blocks


class LayerNormLastAxisHardCoded(LayerNormVarMean):
    """dim=2: the last axis only for 3-D inputs."""

    def forward(self, x):
        mean = x.mean(dim=2, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=2, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class LayerNormSequenceAxis(LayerNormVarMean):
    """Statistics over the positions (dim=-2) instead of the features."""

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-2, unbiased=False, keepdim=True)
        return self.weight * (x - mean) / (var + self.eps).sqrt() + self.bias


class LayerNormWholeInput(LayerNormVarMean):
    """One mean and variance for the whole input, every axis at once."""

    def forward(self, x):
        return (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + self.eps) * self.weight + self.bias


class LayerNormMeanWithoutGradient(LayerNormVarMean):
    """The mean computed under torch.no_grad(): right values, but no gradient through it."""

    def forward(self, x):
        with torch.no_grad():
            mean = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class LayerNormStdFromData(LayerNormVarMean):
    """The standard deviation taken from x.data: right values, but no gradient through it."""

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        return centred / (x.data.var(-1, unbiased=False, keepdim=True) + self.eps).sqrt() * self.weight + self.bias


class LayerNormOnesWeight(LayerNormVarMean):
    """Starts with a random scale instead of ones."""

    def __init__(self, embed_dim, eps=1e-5):
        super().__init__(embed_dim, eps)
        self.weight = nn.Parameter(torch.rand(embed_dim))


class LayerNormOfTorch(nn.LayerNorm):
    """nn.LayerNorm itself, with the pinned signature: right values, but not by hand."""

    def __init__(self, embed_dim, eps=1e-5):
        super().__init__(embed_dim, eps=eps)


class LayerNormTorchFunction(nn.Module):
    """torch.layer_norm with the module's own parameters."""

    def __init__(self, embed_dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(embed_dim))
        self.bias = nn.Parameter(torch.zeros(embed_dim))

    def forward(self, x):
        return torch.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)


class LayerNormSubmodule(LayerNormTorchFunction):
    """An nn.LayerNorm inside, sharing the module's weight and bias."""

    def __init__(self, embed_dim, eps=1e-5):
        super().__init__(embed_dim, eps)
        self.norm = nn.LayerNorm(embed_dim, eps=eps)
        self.norm.weight, self.norm.bias = self.weight, self.bias

    def forward(self, x):
        return self.norm(x)


class LayerNormRmsOfCentred(LayerNormTorchFunction):
    """The mean subtracted by hand, then F.rms_norm: the same numbers as a layer norm, the division torch's."""

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        return F.rms_norm(centred, x.shape[-1:], self.weight, self.eps) + self.bias


class LayerNormOneGroup(LayerNormTorchFunction):
    """F.group_norm with one group over each token's (1, D) features."""

    def forward(self, x):
        tokens = x.reshape(-1, 1, x.size(-1))  # (N, 1, D): one channel, D positions
        return F.group_norm(tokens, 1, eps=self.eps).reshape(x.shape) * self.weight + self.bias


# Task 1 asks for layer normalisation by hand: each of these calls torch's own (name in the check's message).
TORCH_NORMS = {LayerNormOfTorch: "torch.nn.functional.layer_norm", LayerNormTorchFunction: "torch.layer_norm",
               LayerNormSubmodule: "torch.nn.functional.layer_norm",
               LayerNormRmsOfCentred: "torch.nn.functional.rms_norm",
               LayerNormOneGroup: "torch.nn.functional.group_norm"}


class LayerNormWithoutAffine(nn.Module):
    """Standardises each token but has no weight and bias: a module without tensors whose forward is written."""

    def __init__(self, embed_dim, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps)


def causal_mask_float(seq_len, device=None):
    """0/1 floats instead of booleans."""
    return torch.tril(torch.ones(seq_len, seq_len, device=device))


def causal_mask_on_cpu(seq_len, device=None):
    """Always on the CPU: the device argument is never used."""
    return torch.arange(seq_len)[None, :] <= torch.arange(seq_len)[:, None]


def causal_mask_batched(seq_len, device=None):
    """An extra (1, 1) in front: (1, 1, L, L)."""
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()[None, None]


def padding_mask_pad_is_zero_int(tokens, pad_id):
    """0/1 integers instead of booleans."""
    return (tokens != pad_id).long()[:, None, None, :]


class MultiheadAttentionUnscaled(MultiheadAttentionEinsum):
    """Scores not divided by sqrt(head_dim)."""

    def forward(self, x, context=None, mask=None, return_attention=False):
        source = x if context is None else context
        query = self._heads(self.q_proj(x))
        key, value = self._heads(self.k_proj(source)), self._heads(self.v_proj(source))
        scores = torch.einsum("bqhd,bkhd->bhqk", query, key)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        attention = scores.softmax(dim=-1)
        outputs = self.o_proj(torch.einsum("bhqk,bkhd->bqhd", attention, value).flatten(2))
        return (outputs, attention) if return_attention else outputs


class MultiheadAttentionDroppedContext(MultiheadAttentionEinsum):
    """Takes the context but returns the attention of x over x when the lengths differ -- a crash instead."""

    def forward(self, x, context=None, mask=None, return_attention=False):
        context = x if context is None else context
        batch_size, query_len, embed_dim = x.shape
        query = self._heads(self.q_proj(x))
        key = self._heads(self.k_proj(context)).reshape(batch_size, query_len, self.num_heads, -1)
        value = self._heads(self.v_proj(context))
        scores = torch.einsum("bqhd,bkhd->bhqk", query, key) / math.sqrt(query.size(-1))
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        attention = scores.softmax(dim=-1)
        outputs = self.o_proj(torch.einsum("bhqk,bkhd->bqhd", attention, value).flatten(2))
        return (outputs, attention) if return_attention else outputs


def make_unnamed_decoder_blocks(MultiheadAttention, LayerNorm):
    """Decoder blocks with one change each from a correct base (layers_variants.make_decoder_blocks)."""
    base = make_decoder_blocks(MultiheadAttention, LayerNorm)[0]

    class DecoderBlockNoCrossResidual(base):
        def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
            attended = self.self_attention(x, mask=self_mask)
            x = self.norm1(x + self.dropout(attended))
            x = self.norm2(self.dropout(self.cross_attention(x, context=memory, mask=memory_mask)))
            return self.norm3(x + self.dropout(self.feedforward(x)))

    class DecoderBlockActivationIgnored(base):
        def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.ReLU, dropout=0.0):
            super().__init__(embed_dim, num_heads, feedforward_dim, nn.ReLU, dropout)

    class DecoderBlockMaskedMemoryQueries(base):
        """Cross-attention from the memory to x: the roles of queries and context swapped."""

        def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
            x = self.norm1(x + self.dropout(self.self_attention(x, mask=self_mask)))
            x = self.norm2(x + self.dropout(self.cross_attention(memory, context=x)[:, : x.size(1)]))
            return self.norm3(x + self.dropout(self.feedforward(x)))

    class DecoderBlockWithoutCrossAttention(base):
        def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
            x = self.norm1(x + self.dropout(self.self_attention(x, mask=self_mask)))
            return self.norm3(x + self.dropout(self.feedforward(x)))

    return {"no cross-attention": (DecoderBlockWithoutCrossAttention, "the output does not depend on the memory"),
            "no residual around cross-attention": (DecoderBlockNoCrossResidual,
                                                   "residual connection around cross_attention is missing"),
            "activation ignored": (DecoderBlockActivationIgnored, "the `activation` argument is never called"),
            "memory as the queries": (DecoderBlockMaskedMemoryQueries, "cross-attention takes its queries from x")}
