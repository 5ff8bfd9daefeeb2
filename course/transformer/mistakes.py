"""Known student mistakes, each written as a few edits of the reference source (the solution notebook).

Two users: `make fixtures` runs each mistake on the fixture inputs and stores its output beside
the correct one, so a checker can name the mistake when a student's output matches it; and the
tests plant every mistake and require its checker to fail. Deriving the mistakes from the one
reference keeps both free of hand-kept copies; an edit whose target text disappears from the
notebook fails loudly, so the list cannot rot. Instructor-side only: never shipped to students.
"""
# Sentences of the checkers' property checks (for mistakes whose output cannot be stored: a crash, NaN,
# randomness, a wrong shape): quoted, not copied, so a mistake's diagnosis is what its checker really says.
from checkers.transformer.attention import BATCHED, MASK_INVERTED, OVERFLOW, RES_FROM_KEY
from checkers.transformer.classifier import CLS_NOT_PREPENDED
from checkers._modules import FIXED_DTYPE
from checkers.transformer.encoder import DROPOUT_IN_EVAL, DROPOUT_ON_RESIDUAL
from checkers.transformer.linformer import NOT_LINFORMER, QUERIES_PROJECTED
from checkers.transformer.multihead import HEAD_AXIS_MISSING
from checkers.transformer.positional import NOT_A_BUFFER
from course.mutant import Mutant

SCALE = "/ math.sqrt(query.size(-1))"
SOFTMAX = "attention = torch.softmax(scores, dim=-1)"
MHA_QUERY = "query = self.q_proj(x).view(heads_shape).transpose(1, 2)"
MHA_CALL = "heads, attention = scaled_softmax_attention(query, key, value, mask)"
ATTENDED = "attended, attention = self.attention(x, mask=mask, return_attention=True)"
NORM1 = "x = self.norm1(x + self.dropout(attended))  # (B, L, D)\n        x = self.norm2"
FFN = "x = self.norm2(x + self.dropout(self.feedforward(x)))"
SIN, COS = "pe[:, 0::2] = torch.sin(angle)", "pe[:, 1::2] = torch.cos(angle[:, : embed_dim // 2])"
EMBED = "return self.positional_encoding(torch.cat([cls, tokens], dim=1))"
BLOCKS = "[EncoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout) for _ in range(num_layers)]"
REGISTER = 'self.register_buffer("pe", pe.unsqueeze(0), persistent=False)'
FLOAT64_TABLE = (("pe = torch.zeros(max_len, embed_dim)", "pe = torch.zeros(max_len, embed_dim, dtype=torch.float64)"),)
LIN_CALL = "heads, attention = scaled_softmax_attention(query, key, value)  # (B, H, L, head_dim), (B, H, L, proj_dim)"

MUTANTS = [
    # Task 1: scaled_softmax_attention
    Mutant(1, "no scaling", ((SCALE, ""),)),
    Mutant(1, "scaled by d", ((SCALE, "/ query.size(-1)"),)),
    Mutant(1, "scaled by d/2", ((SCALE, "/ (query.size(-1) / 2)"),)),
    Mutant(1, "scaled by the sequence length", ((SCALE, "/ math.sqrt(key.size(-2))"),)),
    Mutant(1, "softmax over the queries", ((SOFTMAX, "attention = torch.softmax(scores, dim=-2)"),)),
    Mutant(1, "mask inverted", (("masked_fill(mask == 0,", "masked_fill(mask != 0,"),)),
    Mutant(1, "mask ignored", (("if mask is not None:\n        scores", "if False:\n        scores"),)),
    Mutant(1, "mask applied after the softmax",
           (("if mask is not None:\n        scores = scores.masked_fill(mask == 0, float(\"-inf\"))\n    ", ""),
            (SOFTMAX, SOFTMAX + "\n    attention = attention if mask is None else attention * (mask != 0)"))),
    Mutant(1, "value replaced by key", (("res = attention @ value", "res = attention @ key"),)),
    Mutant(1, "unstable softmax", ((SOFTMAX, "attention = scores.exp() / scores.exp().sum(-1, keepdim=True)"),)),
    Mutant(1, ".T on batched input", (("key.transpose(-2, -1)", "key.T"),)),
    # Task 2: MultiheadAttention
    Mutant(2, "heads split without the transpose",
           ((MHA_QUERY, "query = self.q_proj(x).view(batch_size, self.num_heads, seq_len, self.head_dim)"),)),
    Mutant(2, "heads merged without the transpose", (("merged = heads.transpose(1, 2).reshape(", "merged = heads.reshape("),)),
    Mutant(2, "no output projection", (("outputs = self.o_proj(merged)", "outputs = merged"),)),
    Mutant(2, "scaled by the full embedding width",
           ((MHA_CALL, "heads, attention = scaled_softmax_attention(query * math.sqrt(self.head_dim / self.embed_dim), key, value, mask)"),)),
    Mutant(2, "queries from k_proj", ((MHA_QUERY, MHA_QUERY.replace("q_proj", "k_proj")),)),
    Mutant(2, "attention averaged over heads", ((MHA_CALL, MHA_CALL + "\n        attention = attention.mean(1, keepdim=True).expand_as(attention)"),)),
    Mutant(2, "(B, L, L) mask without a head axis", (("mask = mask.unsqueeze(1)", "mask = mask"),)),
    # Task 3: EncoderBlock
    Mutant(3, "pre-norm instead of post-norm",
           ((ATTENDED, "attended, attention = self.attention(self.norm1(x), mask=mask, return_attention=True)"),
            ("x = self.norm1(x + self.dropout(attended))  # (B, L, D)\n        x = self.norm2(x + self.dropout(self.feedforward(x)))",
             "x = x + self.dropout(attended)\n        x = x + self.dropout(self.feedforward(self.norm2(x)))"))),
    Mutant(3, "no residual around attention", ((NORM1, "x = self.norm1(self.dropout(attended))  # (B, L, D)\n        x = self.norm2"),)),
    Mutant(3, "no residual around the feed-forward network", ((FFN, "x = self.norm2(self.dropout(self.feedforward(x)))"),)),
    Mutant(3, "one LayerNorm reused", ((FFN, "x = self.norm1(x + self.dropout(self.feedforward(x)))"),)),
    Mutant(3, "second LayerNorm missing", ((FFN, "x = x + self.dropout(self.feedforward(x))"),)),
    Mutant(3, "activation argument ignored", (("nn.Linear(embed_dim, feedforward_dim), activation(),", "nn.Linear(embed_dim, feedforward_dim), nn.ReLU(),"),)),
    Mutant(3, "dropout active in eval mode", (("x = self.norm1(x + self.dropout(attended))",
                                              "x = self.norm1(x + F.dropout(attended, self.dropout.p, training=True))"),)),
    Mutant(3, "feed-forward applied to the block input",
           ((NORM1, "hidden = self.norm1(x + self.dropout(attended))  # (B, L, D)\n        x = self.norm2"),
            (FFN, "x = self.norm2(hidden + self.dropout(self.feedforward(x)))"))),
    Mutant(3, "dropout on the residual sum", ((NORM1, NORM1.replace("x + self.dropout(attended)", "self.dropout(x + attended)")),
                                              (FFN, "x = self.norm2(self.dropout(x + self.feedforward(x)))"))),
    Mutant(3, "mask not passed to attention", ((ATTENDED, "attended, attention = self.attention(x, return_attention=True)"),)),
    # Task 4: PositionalEncoding
    Mutant(4, "sin and cos swapped", ((SIN, "pe[:, 0::2] = torch.cos(angle)"), (COS, "pe[:, 1::2] = torch.sin(angle[:, : embed_dim // 2])"))),
    Mutant(4, "halves concatenated instead of interleaved",
           ((SIN, "pe[:, : (embed_dim + 1) // 2] = torch.sin(angle)"), (COS, "pe[:, (embed_dim + 1) // 2 :] = torch.cos(angle[:, : embed_dim // 2])"))),
    Mutant(4, "wrong base", (("10000.0 **", "1000.0 **"),)),
    Mutant(4, "exponent i/D instead of 2i/D", (("(-torch.arange(0, embed_dim, 2) / embed_dim)", "(-torch.arange(0, embed_dim, 2) / embed_dim / 2)"),)),
    Mutant(4, "multiplied instead of added", (("return x + self.pe[:, : x.size(1)]", "return x * self.pe[:, : x.size(1)]"),)),
    Mutant(4, "added in place", (("return x + self.pe[:, : x.size(1)]", "x += self.pe[:, : x.size(1)]\n        return x"),)),
    Mutant(4, "positions start at 1", (("position = torch.arange(max_len)", "position = torch.arange(1, max_len + 1)"),)),
    Mutant(4, "trainable pe", ((REGISTER, "self.pe = nn.Parameter(pe.unsqueeze(0))"),)),
    Mutant(4, "pe a plain attribute", ((REGISTER, "self.pe = pe.unsqueeze(0)"),)),
    Mutant(4, "float64 table", FLOAT64_TABLE),
    # Task 5: TransformerForSequenceClassification
    Mutant(5, "no positional encoding", ((EMBED, "return torch.cat([cls, tokens], dim=1)"),)),
    Mutant(5, "[CLS] summed instead of prepended", ((EMBED, "return self.positional_encoding(tokens + cls)"),)),
    Mutant(5, "[CLS] read from the last position", (("self.classifier(hidden[:, 0])", "self.classifier(hidden[:, -1])"),)),
    Mutant(5, "mean pooling instead of [CLS]", (("self.classifier(hidden[:, 0])", "self.classifier(hidden.mean(1))"),)),
    Mutant(5, "[CLS] not learnable", (("self.cls_token = nn.Parameter(torch.randn(embed_dim))",
                                       "self.cls_token = nn.Parameter(torch.randn(embed_dim), requires_grad=False)"),)),
    Mutant(5, "one block reused for every layer", ((BLOCKS, BLOCKS.replace(" for _ in range(num_layers)]", "] * num_layers")),)),
    Mutant(5, "float64 positional table", FLOAT64_TABLE),
    Mutant(5, "attention maps of the last layer only", (("maps.append(attention)", "maps = [attention]"),)),
    # Task 7: Linformer
    Mutant(7, "E reused for the values", (("value = self.f_proj(value)", "value = self.e_proj(value)"),)),
    Mutant(7, "no scaling", ((LIN_CALL, "heads, attention = scaled_softmax_attention(query * math.sqrt(self.head_dim), key, value)"),)),
    Mutant(7, "softmax over the queries",
           ((LIN_CALL, "attention = (query @ key.transpose(-2, -1) / math.sqrt(self.head_dim)).softmax(dim=-2)\n        heads = attention @ value"),)),
    Mutant(7, "queries projected along the sequence too",
           (("query = self.q_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, L, head_dim)\n        key = self.k_proj(x).view(heads_shape).permute",
             "query = self.e_proj(self.q_proj(x).view(heads_shape).permute(0, 2, 3, 1)).transpose(-2, -1)\n        key = self.k_proj(x).view(heads_shape).permute"),)),
    Mutant(7, "full attention left in place",
           (("self.attention = LinformerAttention(embed_dim, num_heads, sequence_length, proj_dim)", "pass"),)),
    Mutant(7, "projection along the feature axis",
           (("key = self.e_proj(key).transpose(-2, -1)", "key = self.e_proj(key.transpose(-2, -1).reshape(batch_size, -1, seq_len)).reshape(key.shape[0], key.shape[1], -1, key.shape[2])"),)),
]

# What a checker tells the student when the output matches the mistake (one sentence, with the fix).
DIAGNOSES = {
    (1, "no scaling"): "your weights equal softmax(QKᵀ): divide the scores by √D, with D = query.size(-1).",
    (1, "scaled by d"): "your weights equal softmax(QKᵀ/D): divide by √D, not by D.",
    (1, "scaled by d/2"): "your weights equal softmax(QKᵀ/(D/2)): in Python `D**1/2` is D/2; write `D ** 0.5` or math.sqrt(D).",
    (1, "scaled by the sequence length"): "your scores are divided by √L_k, the number of keys; divide by √D, the feature size query.size(-1).",
    (1, "softmax over the queries"): "your softmax runs over the queries (dim=-2); it must run over the keys, the last axis.",
    (1, "mask inverted"): MASK_INVERTED,
    (1, "mask ignored"): "the mask has no effect: set the scores to -inf where mask is 0 / False, before the softmax.",
    (1, "mask applied after the softmax"): "the mask is applied after the softmax, so rows no longer sum to 1: fill the masked scores with -inf before it.",
    (1, "value replaced by key"): RES_FROM_KEY,
    (1, "unstable softmax"): OVERFLOW,
    (1, ".T on batched input"): BATCHED,
    (2, "heads split without the transpose"): "the heads are split with a view straight to (B, H, L, head_dim): view as (B, L, H, head_dim), then transpose(1, 2).",
    (2, "heads merged without the transpose"): "the heads are merged without transposing back: transpose (B, H, L, head_dim) to (B, L, H, head_dim) before reshaping to (B, L, D).",
    (2, "no output projection"): "the output projection is missing: apply o_proj to the merged heads.",
    (2, "scaled by the full embedding width"): "the scores are scaled by √embed_dim; each head must scale by √head_dim (call your attention on the per-head tensors).",
    (2, "queries from k_proj"): "a projection feeds the wrong role: queries come from q_proj, keys from k_proj, values from v_proj.",
    (2, "attention averaged over heads"): "the returned attention is averaged over the heads: return each head's weights, shape (B, H, L, L).",
    (2, "(B, L, L) mask without a head axis"): HEAD_AXIS_MISSING,
    (3, "pre-norm instead of post-norm"): "this is the pre-norm layout (LayerNorm before each sub-layer); the task asks for post-norm: x = norm1(x + dropout(attention(x))).",
    (3, "no residual around attention"): "the residual connection around attention is missing: norm1(x + dropout(attention(x))).",
    (3, "no residual around the feed-forward network"): "the residual connection around the feed-forward network is missing: norm2(x + dropout(feedforward(x))).",
    (3, "one LayerNorm reused"): "norm1 is used for both sub-layers; the feed-forward sub-layer needs its own norm2.",
    (3, "second LayerNorm missing"): "the LayerNorm after the feed-forward sub-layer (norm2) is missing.",
    (3, "activation argument ignored"): "the feed-forward network ignores the `activation` argument: build it with activation(), not a fixed nn.ReLU().",
    (3, "dropout active in eval mode"): DROPOUT_IN_EVAL,
    (3, "feed-forward applied to the block input"): "the feed-forward network reads the block's input; it must read the output of the attention sub-layer.",
    (3, "dropout on the residual sum"): DROPOUT_ON_RESIDUAL,
    (3, "mask not passed to attention"): "the mask is not passed on to the attention.",
    (4, "sin and cos swapped"): "sin and cos are swapped: even columns (2i) hold sin, odd columns (2i+1) hold cos.",
    (4, "halves concatenated instead of interleaved"): "sines and cosines are concatenated in two halves; interleave them: pe[:, 0::2] = sin, pe[:, 1::2] = cos.",
    (4, "wrong base"): "the frequencies use the wrong base: the angle is pos / 10000^(2i/D).",
    (4, "exponent i/D instead of 2i/D"): "the exponent is off: the angle is pos / 10000^(2i/D), where 2i is the even column index.",
    (4, "multiplied instead of added"): "pe is multiplied with x; add it: x + pe[:, :L].",
    (4, "positions start at 1"): "the positions start at 1; the first position is 0.",
    (4, "added in place"): "forward modified its input `x` in place (e.g. `x += ...`); build a new tensor instead.",
    (4, "trainable pe"): "`pe` is trainable; the sinusoidal table is fixed: register it as a buffer, not an nn.Parameter.",
    (4, "pe a plain attribute"): NOT_A_BUFFER,
    (4, "float64 table"): FIXED_DTYPE,
    (5, "float64 positional table"): FIXED_DTYPE,
    (5, "no positional encoding"): "no positional encoding is added to the embedded sequence, so the model cannot tell positions apart.",
    (5, "[CLS] read from the last position"): "the logits are read from the last position; read position 0, where [CLS] was prepended.",
    (5, "mean pooling instead of [CLS]"): "the logits come from the mean over all positions; classify the [CLS] output hidden[:, 0] only.",
    (5, "[CLS] summed instead of prepended"): CLS_NOT_PREPENDED,
    (5, "[CLS] not learnable"): "cls_token has requires_grad=False: the [CLS] embedding must be learnable.",
    (5, "one block reused for every layer"): "encoder repeats the same block object: create a new block for every layer (a list comprehension), or the layers share their weights.",
    (5, "attention maps of the last layer only"): "forward_attention should return a list with one attention tensor per encoder block",
    (7, "E reused for the values"): "the values are compressed with e_proj; use f_proj (F) for the values, e_proj (E) for the keys.",
    (7, "no scaling"): "the scores are not divided by √head_dim.",
    (7, "softmax over the queries"): "the softmax runs over the queries (dim=-2); it must run over the proj_dim compressed keys, the last axis.",
    (7, "queries projected along the sequence too"): QUERIES_PROJECTED,
    (7, "full attention left in place"): NOT_LINFORMER,
    (7, "projection along the feature axis"): "E and F must mix the L positions of each feature: lay the keys and values out as (B, H, head_dim, L) with permute or transpose (a reshape scrambles them), apply e_proj / f_proj, then transpose back to (B, H, proj_dim, head_dim).",
}
MUTANTS = [Mutant(m.task, m.name, m.edits, DIAGNOSES.get((m.task, m.name), "")) for m in MUTANTS]
