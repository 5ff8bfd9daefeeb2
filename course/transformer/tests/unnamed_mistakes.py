"""Plausible student mistakes that no planted mistake (course/transformer/mistakes.py) and no stored output describes.

Each is written independently of the reference, the way a student might; the checkers must still say which
property fails (course/transformer/tests/test_checker_properties.py), not only that the values differ.
"""
import math

import torch
import torch.nn as nn


# ----- Task 1: scaled_softmax_attention -----------------------------------------------------------

def _masked(scores, mask):
    return scores if mask is None else scores.masked_fill(mask == 0, float("-inf"))


def attention_softmax_dim_1(query, key, value, mask=None):
    """softmax(dim=1): the last axis only for 2-D inputs."""
    attention = torch.softmax(_masked(query @ key.transpose(-2, -1) / math.sqrt(query.size(-1)), mask), dim=1)
    return attention @ value, attention


def attention_scale_shape_1(query, key, value, mask=None):
    """sqrt(query.shape[1]): the feature size only for 2-D inputs."""
    attention = torch.softmax(_masked(query @ key.transpose(-2, -1) / math.sqrt(query.shape[1]), mask), dim=-1)
    return attention @ value, attention


def attention_dot_T(query, key, value, mask=None):
    """key.T: reverses every axis of a batched key."""
    attention = torch.softmax(_masked(query @ key.T / math.sqrt(query.size(-1)), mask), dim=-1)
    return attention @ value, attention


def attention_scale_by_value_width(query, key, value, mask=None):
    """Scaled by the width of the values instead of the queries' feature size."""
    attention = torch.softmax(_masked(query @ key.transpose(-2, -1) / math.sqrt(value.size(-1)), mask), dim=-1)
    return attention @ value, attention


# ----- Task 2: MultiheadAttention -----------------------------------------------------------------

class MultiheadAttentionBase(nn.Module):
    """Four projections; subclasses write forward through split, scores, softmax and merge."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
        self.q_proj, self.k_proj = nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, embed_dim)
        self.v_proj, self.o_proj = nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, embed_dim)

    def split(self, t):
        """(B, L, D) -> (B, H, L, head_dim)."""
        return t.view(t.size(0), t.size(1), self.num_heads, self.head_dim).transpose(1, 2)

    def merge(self, heads):
        """(B, H, L, head_dim) -> (B, L, D)."""
        return heads.transpose(1, 2).flatten(2)

    def scale(self, x):
        return math.sqrt(self.head_dim)

    def normalise(self, scores):
        return scores.softmax(-1)

    def forward(self, x, mask=None, return_attention=False):
        query, key, value = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        scores = query @ key.transpose(-2, -1) / self.scale(x)
        if mask is not None:
            scores = scores.masked_fill((mask.unsqueeze(1) if mask.dim() == 3 else mask) == 0, float("-inf"))
        attention = self.normalise(scores)
        outputs = self.o_proj(self.merge(attention @ value))
        return (outputs, attention) if return_attention else outputs


class MultiheadAttentionInterleavedHeads(MultiheadAttentionBase):
    """Heads split as (head_dim, H): head h takes features h, h + H, ... instead of a contiguous slice."""

    def split(self, t):
        return t.view(t.size(0), t.size(1), self.head_dim, self.num_heads).permute(0, 3, 1, 2)

    def merge(self, heads):
        return heads.permute(0, 2, 3, 1).flatten(2)


class MultiheadAttentionMergedInterleaved(MultiheadAttentionBase):
    """Right split, but the merge puts head_dim before H, interleaving the heads' features."""

    def merge(self, heads):
        return heads.permute(0, 2, 3, 1).flatten(2)


class MultiheadAttentionScaledBySeqLen(MultiheadAttentionBase):
    """Scores divided by √L (x.size(1)) instead of √head_dim."""

    def scale(self, x):
        return math.sqrt(x.size(1))


class MultiheadAttentionUnscaled(MultiheadAttentionBase):
    """Own attention code without the 1/√head_dim."""

    def scale(self, x):
        return 1.0


class MultiheadAttentionQueriesUnprojected(MultiheadAttentionBase):
    """The queries are the input itself, split into heads: q_proj is created but never used."""

    def forward(self, x, mask=None, return_attention=False):
        query, key, value = self.split(x), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        attention = (query @ key.transpose(-2, -1) / self.scale(x)).softmax(-1)
        outputs = self.o_proj(self.merge(attention @ value))
        return (outputs, attention) if return_attention else outputs


class MultiheadAttentionSoftmaxOverHeads(MultiheadAttentionBase):
    """Softmax along dim=1, which for (B, H, L, L) scores is the heads axis."""

    def normalise(self, scores):
        return scores.softmax(1)


class MultiheadAttentionBatchMixed(MultiheadAttentionBase):
    """Merged through (L, B, D): the reshape mixes tokens of different batch elements."""

    def merge(self, heads):
        batch_size, _, seq_len, _ = heads.shape
        return heads.transpose(1, 2).reshape(seq_len, batch_size, -1).transpose(0, 1)


# ----- Task 3: EncoderBlock -----------------------------------------------------------------------

class EncoderBlockBase(nn.Module):
    """Subclasses write the feed-forward network or the forward pass their own (wrong) way."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.ReLU, dropout=0.0):
        super().__init__()
        self.attention = MultiheadAttentionBase(embed_dim, num_heads)
        self.feedforward = self.make_feedforward(embed_dim, feedforward_dim, activation)
        self.norm1, self.norm2 = nn.LayerNorm(embed_dim), nn.LayerNorm(embed_dim)
        self.dropout = nn.Dropout(dropout)

    def make_feedforward(self, embed_dim, feedforward_dim, activation):
        return nn.Sequential(nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))

    def sublayers(self, x, attended):
        x = self.norm1(x + self.dropout(attended))
        return self.norm2(x + self.dropout(self.feedforward(x)))

    def forward(self, x, mask=None, return_attention=False):
        attended, attention = self.attention(x, mask=mask, return_attention=True)
        x = self.sublayers(x, attended)
        return (x, attention) if return_attention else x


class EncoderBlockNormsSwapped(EncoderBlockBase):
    """norm2 after attention, norm1 after the feed-forward network."""

    def sublayers(self, x, attended):
        x = self.norm2(x + self.dropout(attended))
        return self.norm1(x + self.dropout(self.feedforward(x)))


class EncoderBlockActivationLast(EncoderBlockBase):
    """The activation after the second Linear layer instead of between the two."""

    def make_feedforward(self, embed_dim, feedforward_dim, activation):
        return nn.Sequential(nn.Linear(embed_dim, feedforward_dim), nn.Linear(feedforward_dim, embed_dim), activation())


class EncoderBlockNoActivation(EncoderBlockBase):
    """Two Linear layers and no activation: the feed-forward network is linear."""

    def make_feedforward(self, embed_dim, feedforward_dim, activation):
        return nn.Sequential(nn.Linear(embed_dim, feedforward_dim), nn.Linear(feedforward_dim, embed_dim))


class EncoderBlockResidualOfAttended(EncoderBlockBase):
    """The first residual adds the attention output to itself instead of to the block's input."""

    def sublayers(self, x, attended):
        x = self.norm1(attended + self.dropout(attended))
        return self.norm2(x + self.dropout(self.feedforward(x)))


class EncoderBlockFeedForwardOnAttended(EncoderBlockBase):
    """The feed-forward network reads the raw attention output, before the residual and norm1."""

    def sublayers(self, x, attended):
        hidden = self.norm1(x + self.dropout(attended))
        return self.norm2(hidden + self.dropout(self.feedforward(attended)))


# ----- Task 4: PositionalEncoding -----------------------------------------------------------------

class PositionalEncodingBase(nn.Module):
    """The table of the paper (written independently); subclasses get the table or forward wrong."""

    def __init__(self, embed_dim, max_len=5000):
        super().__init__()
        self.embed_dim = embed_dim
        self.register_buffer("pe", self.table(embed_dim, max_len).unsqueeze(0), persistent=False)

    def table(self, embed_dim, max_len):
        angle = torch.arange(max_len)[:, None] * torch.exp(torch.arange(0, embed_dim, 2) * -math.log(1e4) / embed_dim)
        return torch.stack([angle.sin(), angle.cos()], -1).flatten(1)[:, :embed_dim]

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class PositionalEncodingScaledInput(PositionalEncodingBase):
    """x scaled by √D before the table is added, as the paper does with embeddings (not this task)."""

    def forward(self, x):
        return x * math.sqrt(self.embed_dim) + self.pe[:, : x.size(1)]


class PositionalEncodingAddedTwice(PositionalEncodingBase):
    """The table added in two places."""

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)]
        return x + self.pe[:, : x.size(1)]


class PositionalEncodingFrequencyPerColumn(PositionalEncodingBase):
    """Column j uses frequency 10000^(-j/D), so each cos column gets its own frequency, not its sin's."""

    def table(self, embed_dim, max_len):
        angle = torch.arange(max_len)[:, None] * 10000.0 ** (-torch.arange(embed_dim) / embed_dim)
        return torch.where(torch.arange(embed_dim) % 2 == 0, angle.sin(), angle.cos())


class PositionalEncodingNumPy(PositionalEncodingBase):
    """The table built with NumPy (float64), as in many tutorials: float32 inputs then come out float64."""

    def table(self, embed_dim, max_len):
        import numpy as np

        angle = np.arange(max_len)[:, None] / 10000 ** (np.arange(0, embed_dim, 2) / embed_dim)
        table = np.zeros((max_len, embed_dim))
        table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle[:, : embed_dim // 2])
        return torch.from_numpy(table)


# ----- Task 5: TransformerForSequenceClassification -----------------------------------------------

class ClassifierBase(nn.Module):
    """A [CLS] classifier written independently; subclasses get one step wrong."""

    def __init__(self, input_dim, embed_dim, num_classes, num_heads, feedforward_dim, num_layers,
                 activation=nn.GELU, max_len=5000, dropout=0.0):
        super().__init__()
        self.cls_token = nn.Parameter(torch.randn(embed_dim))
        self.input_embedding = nn.Linear(input_dim, embed_dim)
        self.positional_encoding = PositionalEncodingBase(embed_dim, max_len)
        self.encoder = nn.ModuleList(self.block(embed_dim, num_heads, feedforward_dim, activation, dropout)
                                     for _ in range(num_layers))
        self.classifier = nn.Linear(embed_dim, num_classes)

    def block(self, embed_dim, num_heads, feedforward_dim, activation, dropout):
        return EncoderBlockBase(embed_dim, num_heads, feedforward_dim, activation, dropout)

    def embed(self, x):
        cls = self.cls_token.expand(len(x), 1, -1)
        return self.positional_encoding(torch.cat([cls, self.input_embedding(x)], dim=1))

    def encode(self, hidden):
        for block in self.encoder:
            hidden = block(hidden)
        return hidden

    def forward_attention(self, x):
        hidden, maps = self.embed(x), []
        for block in self.encoder:
            hidden, attention = block(hidden, return_attention=True)
            maps.append(attention)
        return maps

    def forward(self, x):
        return self.classifier(self.encode(self.embed(x))[:, 0])


class ClassifierNumPyPositions(ClassifierBase):
    """The NumPy-built (float64) table inside the classifier: a float32 model then fails in its first Linear."""

    def __init__(self, input_dim, embed_dim, *args, max_len=5000, **kwargs):
        super().__init__(input_dim, embed_dim, *args, max_len=max_len, **kwargs)
        self.positional_encoding = PositionalEncodingNumPy(embed_dim, max_len)


class ClassifierActivationNotPassedOn(ClassifierBase):
    """The blocks are built without `activation`, so they use EncoderBlock's default ReLU."""

    def block(self, embed_dim, num_heads, feedforward_dim, activation, dropout):
        return EncoderBlockBase(embed_dim, num_heads, feedforward_dim, dropout=dropout)


class ClassifierDropoutNotPassedOn(ClassifierBase):
    """The blocks are built without `dropout`: right in eval mode, never regularised in training."""

    def block(self, embed_dim, num_heads, feedforward_dim, activation, dropout):
        return EncoderBlockBase(embed_dim, num_heads, feedforward_dim, activation)


class ClassifierClsAppended(ClassifierBase):
    """[CLS] appended after the tokens (and read at the end), as some pooling code does."""

    def embed(self, x):
        cls = self.cls_token.expand(len(x), 1, -1)
        return self.positional_encoding(torch.cat([self.input_embedding(x), cls], dim=1))

    def forward(self, x):
        return self.classifier(self.encode(self.embed(x))[:, -1])


class ClassifierPositionsBeforeCls(ClassifierBase):
    """Positions added to the tokens, then [CLS] prepended without a position."""

    def embed(self, x):
        cls = self.cls_token.expand(len(x), 1, -1)
        return torch.cat([cls, self.positional_encoding(self.input_embedding(x))], dim=1)


class ClassifierReadsFirstToken(ClassifierBase):
    """The classifier reads position 1, the first real token, instead of [CLS]."""

    def forward(self, x):
        return self.classifier(self.encode(self.embed(x))[:, 1])


class ClassifierFirstBlockRepeated(ClassifierBase):
    """The first block applied num_layers times; the others never run."""

    def encode(self, hidden):
        for _ in self.encoder:
            hidden = self.encoder[0](hidden)
        return hidden


# ----- Task 7: Linformer --------------------------------------------------------------------------

class LinformerAttentionBase(MultiheadAttentionBase):
    """Keys and values compressed along the sequence by E and F; subclasses change one step."""

    def __init__(self, embed_dim, num_heads, sequence_length, proj_dim):
        super().__init__(embed_dim, num_heads)
        self.e_proj, self.f_proj = nn.Linear(sequence_length, proj_dim), nn.Linear(sequence_length, proj_dim)

    def compress(self, projection, heads):
        """(B, H, L, head_dim) -> (B, H, proj_dim, head_dim): the projection acts along the sequence."""
        return projection(heads.transpose(-2, -1)).transpose(-2, -1)

    def forward(self, x, return_attention=False):
        query, key, value = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        key, value = self.compress(self.e_proj, key), self.compress(self.f_proj, value)  # (B, H, proj_dim, head_dim)
        attention = (query @ key.transpose(-2, -1) / self.scale(key)).softmax(-1)  # (B, H, L, proj_dim)
        outputs = self.o_proj(self.merge(attention @ value))
        return (outputs, attention) if return_attention else outputs


class LinformerAttentionScaledByProjDim(LinformerAttentionBase):
    """Scores divided by √proj_dim, the number of compressed keys, instead of √head_dim."""

    def scale(self, key):
        return math.sqrt(key.size(-2))


class LinformerAttentionInterleavedHeads(LinformerAttentionBase):
    """Heads split as (head_dim, H), as in MultiheadAttentionInterleavedHeads."""

    split, merge = MultiheadAttentionInterleavedHeads.split, MultiheadAttentionInterleavedHeads.merge


class LinformerBlockBase(EncoderBlockBase):
    """EncoderBlockBase with LinformerAttentionBase and no mask."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, sequence_length, proj_dim, activation=nn.ReLU,
                 dropout=0.0):
        super().__init__(embed_dim, num_heads, feedforward_dim, activation, dropout)
        self.attention = LinformerAttentionBase(embed_dim, num_heads, sequence_length, proj_dim)

    def forward(self, x, mask=None, return_attention=False):
        attended, attention = self.attention(x, return_attention=True)
        x = self.sublayers(x, attended)
        return (x, attention) if return_attention else x


class LinformerBlockNoFeedForwardResidual(LinformerBlockBase):
    """No residual around the feed-forward network."""

    def sublayers(self, x, attended):
        x = self.norm1(x + self.dropout(attended))
        return self.norm2(self.dropout(self.feedforward(x)))


class LinformerClassifierBase(ClassifierBase):
    """ClassifierBase with LinformerBlockBase layers."""

    def __init__(self, input_dim, embed_dim, num_classes, num_heads, feedforward_dim, num_layers, sequence_length,
                 proj_dim, activation=nn.GELU, max_len=5000, dropout=0.0):
        self.sizes = sequence_length, proj_dim
        super().__init__(input_dim, embed_dim, num_classes, num_heads, feedforward_dim, num_layers, activation,
                         max_len, dropout)

    def block(self, embed_dim, num_heads, feedforward_dim, activation, dropout):
        return LinformerBlockBase(embed_dim, num_heads, feedforward_dim, *self.sizes, activation, dropout)


LINFORMER = (LinformerAttentionBase, LinformerBlockBase, LinformerClassifierBase)


def attention_torch_mm(query, key, value, mask=None):
    """torch.mm and .t(): matrices only."""
    attention = torch.softmax(_masked(torch.mm(query, key.t()) / math.sqrt(query.size(-1)), mask), dim=-1)
    return torch.mm(attention, value), attention


class ClassifierMeanOfTokens(ClassifierBase):
    """The classifier reads the mean of the token outputs, leaving [CLS] out."""

    def forward(self, x):
        return self.classifier(self.encode(self.embed(x))[:, 1:].mean(1))


class ClassifierOnePositionRow(ClassifierBase):
    """pe[:, 0] (one row, broadcast to every position) instead of pe[:, :L + 1]: no position information."""

    def embed(self, x):
        hidden = torch.cat([self.cls_token.expand(len(x), 1, -1), self.input_embedding(x)], dim=1)
        return hidden + self.positional_encoding.pe[:, 0]


# ----- Mistakes of an earlier task inside a later task's module -----------------------------------

scaled_softmax_attention = attention_softmax_dim_1  # the notebook's (wrong) Task 1 answer, called by name below


class MultiheadAttentionCallingTask1(MultiheadAttentionBase):
    """A right MultiheadAttention that calls the notebook's scaled_softmax_attention, which is wrong."""

    def forward(self, x, mask=None, return_attention=False):
        query, key, value = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        heads, attention = scaled_softmax_attention(query, key, value, mask)
        outputs = self.o_proj(self.merge(heads))
        return (outputs, attention) if return_attention else outputs


class EncoderBlockWithInterleavedHeads(EncoderBlockBase):
    """A right block around a wrong MultiheadAttention."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.ReLU, dropout=0.0):
        super().__init__(embed_dim, num_heads, feedforward_dim, activation, dropout)
        self.attention = MultiheadAttentionInterleavedHeads(embed_dim, num_heads)


class ClassifierWithPositionsAddedTwice(ClassifierBase):
    """A right classifier around a wrong PositionalEncoding."""

    def __init__(self, input_dim, embed_dim, *args, max_len=5000, **kwargs):
        super().__init__(input_dim, embed_dim, *args, max_len=max_len, **kwargs)
        self.positional_encoding = PositionalEncodingAddedTwice(embed_dim, max_len)


def attention_result_scaled_again(query, key, value, mask=None):
    """Right weights, but res divided by √D once more."""
    attention = torch.softmax(_masked(query @ key.transpose(-2, -1) / math.sqrt(query.size(-1)), mask), dim=-1)
    return attention @ value / math.sqrt(query.size(-1)), attention


def attention_mask_transposed(query, key, value, mask=None):
    """The mask read as (..., L_k, L_q): transposed before use."""
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask.transpose(-2, -1) == 0, float("-inf"))
    attention = torch.softmax(scores, dim=-1)
    return attention @ value, attention


class MultiheadAttentionMaskTransposed(MultiheadAttentionBase):
    """The mask transposed before use, as if it were (..., L_k, L_q)."""

    def forward(self, x, mask=None, return_attention=False):
        return super().forward(x, None if mask is None else mask.transpose(-2, -1), return_attention)


# ----- Found by a held-out student run (issue 9): each got only "differs", a misleading hint, or passed ---------

def attention_log_softmax(query, key, value, mask=None):
    """log_softmax where softmax is meant: the 'weights' are negative."""
    scores = _masked(query @ key.transpose(-2, -1) / math.sqrt(query.size(-1)), mask)
    attention = torch.log_softmax(scores, dim=-1)
    return attention @ value, attention


def attention_scores_multiplied(query, key, value, mask=None):
    """Scores multiplied by √D instead of divided by it."""
    attention = torch.softmax(_masked(query @ key.transpose(-2, -1) * math.sqrt(query.size(-1)), mask), dim=-1)
    return attention @ value, attention


def attention_pair_swapped(query, key, value, mask=None):
    """Right values, returned as (attention, res)."""
    attention = torch.softmax(_masked(query @ key.transpose(-2, -1) / math.sqrt(query.size(-1)), mask), dim=-1)
    return attention, attention @ value


def attention_query_key_swapped(query, key, value, mask=None):
    """K Qᵀ instead of Q Kᵀ: fails on shapes when L_q ≠ L_k, and torch's message alone names no input."""
    attention = torch.softmax(_masked(key @ query.transpose(-2, -1) / math.sqrt(query.size(-1)), mask), dim=-1)
    return attention @ value, attention


class MultiheadAttentionHeadsReversed(MultiheadAttentionBase):
    """Heads concatenated in reverse order (last head first)."""

    def merge(self, heads):
        return super().merge(heads.flip(1))


class EncoderBlockNormOverSequence(EncoderBlockBase):
    """A hand-written LayerNorm that normalises over the sequence axis (dim=1) instead of the features."""

    @staticmethod
    def layer_norm(x, norm):
        mean, variance = x.mean(1, keepdim=True), x.var(1, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(variance + norm.eps) * norm.weight + norm.bias

    def sublayers(self, x, attended):
        x = self.layer_norm(x + self.dropout(attended), self.norm1)
        return self.layer_norm(x + self.dropout(self.feedforward(x)), self.norm2)


class EncoderBlockFeedForwardResidualFromInput(EncoderBlockBase):
    """The feed-forward network reads norm1's output, but its residual adds the block's input."""

    def sublayers(self, x, attended):
        hidden = self.norm1(x + self.dropout(attended))
        return self.norm2(x + self.dropout(self.feedforward(hidden)))


class EncoderBlockFixedDropout(EncoderBlockBase):
    """nn.Dropout(0.1) whatever the `dropout` argument says."""

    def __init__(self, embed_dim, num_heads, feedforward_dim, activation=nn.ReLU, dropout=0.0):
        super().__init__(embed_dim, num_heads, feedforward_dim, activation, dropout)
        self.dropout = nn.Dropout(0.1)


class ClassifierAttentionMapsNotChained(ClassifierBase):
    """forward_attention runs every block on the embedded input instead of on the previous block's output."""

    def forward_attention(self, x):
        hidden = self.embed(x)
        return [block(hidden, return_attention=True)[1] for block in self.encoder]


class ClassifierSigmoidLogits(ClassifierBase):
    """A sigmoid after the classifier: forward returns probabilities, not logits."""

    def forward(self, x):
        return torch.sigmoid(super().forward(x))


class LinformerAttentionReshapedBack(LinformerAttentionBase):
    """E applied along the sequence, then reshape (not transpose) back to (B, H, proj_dim, head_dim)."""

    def compress(self, projection, heads):
        return projection(heads.transpose(-2, -1)).reshape(*heads.shape[:2], -1, heads.size(-1))


class LinformerAttentionProjectionsSwapped(LinformerAttentionBase):
    """Keys compressed with f_proj and values with e_proj."""

    def compress(self, projection, heads):
        swapped = self.f_proj if projection is self.e_proj else self.e_proj
        return super().compress(swapped, heads)


class MultiheadAttentionThreeAxisMaskDropped(MultiheadAttentionBase):
    """Only (L, L) and 4-D masks are used; a (B, L, L) mask is silently dropped."""

    def forward(self, x, mask=None, return_attention=False):
        return super().forward(x, None if mask is not None and mask.dim() == 3 else mask, return_attention)


class MultiheadAttentionQueryKeySwapped(MultiheadAttentionBase):
    """The queries from k_proj and the keys from q_proj: every score matrix is transposed before the softmax."""

    def forward(self, x, mask=None, return_attention=False):
        self.q_proj, self.k_proj = self.k_proj, self.q_proj
        try:
            return super().forward(x, mask, return_attention)
        finally:
            self.q_proj, self.k_proj = self.k_proj, self.q_proj


class LinformerAttentionFeaturesCompressed(LinformerAttentionBase):
    """E and F applied to (B, H, L, head_dim) as it is: along the features of a head instead of the sequence."""

    def compress(self, projection, heads):
        return projection(heads)


class LinformerAttentionFeaturesBeforeSplit(LinformerAttentionBase):
    """E and F applied to the projected (B, L, D) keys and values before the heads are split."""

    def forward(self, x, return_attention=False):
        # The mistake: e_proj gets (B, L, D) where it takes L, so it raises unless embed_dim == sequence_length
        self.e_proj(self.k_proj(x)), self.f_proj(self.v_proj(x))
        return super().forward(x, return_attention)


# ----- Each mistake as (task, the objects a checker takes, words its message must hold) -----------------------

UNNAMED = [
    (1, (attention_mask_transposed,), "the result is right only when the mask is given transposed"),
    (1, (attention_result_scaled_again,), "the attention weights are right but res is not"),
    (1, (attention_scale_by_value_width,), "divided by √6 instead of √query.size(-1) = √4"),
    (2, (MultiheadAttentionInterleavedHeads,), "changed the attention of other heads"),
    (2, (MultiheadAttentionMergedInterleaved,), "changed output features 1, 3, 5 and 7 instead of only its own"),
    (2, (MultiheadAttentionScaledBySeqLen,), "divided by √5 = √seq_len instead of by √head_dim = √4"),
    (2, (MultiheadAttentionSoftmaxOverHeads,), "sum to 1 along axis 1 (size 2), not along the last axis"),
    (2, (MultiheadAttentionBatchMixed,), "changes with the other elements of the batch"),
    (2, (MultiheadAttentionMaskTransposed,), "the result is right only when the mask is given transposed"),
    (2, (MultiheadAttentionUnscaled,), "the scores are not scaled: divide them by √head_dim = √4."),
    (2, (MultiheadAttentionQueriesUnprojected,), "changing the weights of q_proj changes no attention weight"),
    (3, (EncoderBlockNormsSwapped,), "the block must end with norm2"),
    (3, (EncoderBlockActivationLast,), "`activation` is applied once per forward, to width 8"),
    (3, (EncoderBlockNoActivation,), "the `activation` argument is never called"),
    (3, (EncoderBlockResidualOfAttended,), "the residual connection around attention is missing"),
    (3, (EncoderBlockFeedForwardOnAttended,), "feed it norm1's output"),
    (4, (PositionalEncodingScaledInput,), "x is multiplied by 2.449 = √embed_dim before pe is added"),
    (4, (PositionalEncodingAddedTwice,), "PositionalEncoding(zeros) is 2 · pe[:, :L]"),
    (4, (PositionalEncodingFrequencyPerColumn,), "only odd (cos) columns are wrong"),
    (5, (ClassifierActivationNotPassedOn,), "the `activation` argument runs 0 times"),
    (5, (ClassifierDropoutNotPassedOn,), "pass `dropout` on to every EncoderBlock"),
    (5, (ClassifierClsAppended,), "[CLS] sits at position 6 of the encoder's input"),
    (5, (ClassifierPositionsBeforeCls,), "the positions are added to the L tokens before [CLS] is prepended"),
    (5, (ClassifierReadsFirstToken,), "the classifier reads position 1 of the last block's output"),
    (5, (ClassifierFirstBlockRepeated,), "encoder block 0 runs 2 times in one forward pass"),
    (5, (ClassifierMeanOfTokens,), "the classifier's input is none of the rows of the last block's output"),
    (5, (ClassifierOnePositionRow,), "no position information reaches the encoder"),
    (7, (LinformerAttentionScaledByProjDim,) + LINFORMER[1:], "divided by √3 = √(number of keys)"),
    (7, (LinformerAttentionInterleavedHeads,) + LINFORMER[1:], "changed the attention of other heads"),
    (7, (LINFORMER[0], LinformerBlockNoFeedForwardResidual, LINFORMER[2]),
     "the residual connection around the feed-forward network is missing (x + sub-layer output)"),
    (1, (attention_log_softmax,), "some attention weights are negative"),
    (1, (attention_scores_multiplied,), "multiplied by √4 = √query.size(-1) instead of divided by"),
    (1, (attention_pair_swapped,), "return the pair in the order (res, attention)"),
    (1, (attention_query_key_swapped,), "query of shape (3, 4), key of shape (5, 4), value of shape (5, 6)"),
    (2, (MultiheadAttentionHeadsReversed,), "changed output features 0 to 3 instead of only its own, 4 to 7"),
    (3, (EncoderBlockNormOverSequence,), "the output is standardised along axis 1 (size 5), not along the last"),
    (3, (EncoderBlockFeedForwardResidualFromInput,), "the block's output no longer depends on the attention"),
    (3, (EncoderBlockFixedDropout,), "EncoderBlock(dropout=0.0) in train mode gave two different outputs"),
    (5, (ClassifierAttentionMapsNotChained,),
     "forward_attention: encoder block 1 does not read the output of block 0"),
    (5, (ClassifierSigmoidLogits,), "return the classifier's output as the logits"),
    (2, (MultiheadAttentionThreeAxisMaskDropped,), "a (B, L, L) mask is ignored (the result equals the unmasked"),
    (7, (LinformerAttentionReshapedBack,) + LINFORMER[1:], "so the compression mixes features"),
    (7, (LinformerAttentionProjectionsSwapped,) + LINFORMER[1:],
     "changing f_proj changes the attention weights"),
    (2, (MultiheadAttentionQueryKeySwapped,), "q_proj and k_proj are used the other way round"),
    (7, (LinformerAttentionFeaturesCompressed,) + LINFORMER[1:],
     "e_proj was given a tensor of shape (2, 2, 6, 4) whose last axis holds the 4 features of a head (head_dim), "
     "not the sequence_length = 6 positions: e_proj and f_proj compress the sequence axis"),
    (7, (LinformerAttentionFeaturesBeforeSplit,) + LINFORMER[1:],
     "e_proj was given a tensor of shape (2, 6, 8) whose last axis holds the 8 features (embed_dim), not the "
     "sequence_length = 6 positions"),
]
