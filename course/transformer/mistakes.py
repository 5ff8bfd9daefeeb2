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
from checkers._modules import ADDED_IN_PLACE, FIXED_DTYPE
from checkers.transformer.encoder import DROPOUT_IN_EVAL, DROPOUT_ON_RESIDUAL
from checkers.transformer.linformer import NOT_LINFORMER, QUERIES_PROJECTED
from checkers.transformer.multihead import HEAD_AXIS_MISSING
from checkers.transformer.positional import NOT_A_BUFFER
from checkers.transformer import attention as _attention, classifier as _classifier, encoder as _encoder
from checkers.transformer import linformer as _linformer, multihead as _multihead, positional as _positional
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
CLS_TOKEN = "self.cls_token = nn.Parameter(torch.randn(embed_dim))"
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
    Mutant(5, "[CLS] not learnable", ((CLS_TOKEN, "self.cls_token = nn.Parameter(torch.randn(embed_dim), requires_grad=False)"),)),
    Mutant(5, "[CLS] initialised with zeros", ((CLS_TOKEN, CLS_TOKEN.replace("torch.randn(", "torch.zeros(")),)),
    Mutant(5, "[CLS] initialised small and uniform",
           ((CLS_TOKEN, CLS_TOKEN.replace("torch.randn(embed_dim)", "0.02 * torch.rand(embed_dim)")),)),
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

# What a checker tells the student when the output matches the mistake (one sentence, with the fix): a Diagnosis of
# the checkers, so a failure naming it carries its id.
DIAGNOSES = {
    (1, "no scaling"): _attention.NO_SCALING,
    (1, "scaled by d"): _attention.SCALED_BY_D,
    (1, "scaled by d/2"): _attention.SCALED_BY_HALF_D,
    (1, "scaled by the sequence length"): _attention.SCALED_BY_LENGTH,
    (1, "softmax over the queries"): _attention.SOFTMAX_OVER_QUERIES,
    (1, "mask inverted"): MASK_INVERTED,
    (1, "mask ignored"): _attention.MASK_IGNORED,
    (1, "mask applied after the softmax"): _attention.MASK_AFTER_SOFTMAX,
    (1, "value replaced by key"): RES_FROM_KEY,
    (1, "unstable softmax"): OVERFLOW,
    (1, ".T on batched input"): BATCHED,
    (2, "heads split without the transpose"): _multihead.SPLIT_WITHOUT_TRANSPOSE,
    (2, "heads merged without the transpose"): _multihead.MERGED_WITHOUT_TRANSPOSE,
    (2, "no output projection"): _multihead.NO_OUTPUT_PROJECTION,
    (2, "scaled by the full embedding width"): _multihead.SCALED_BY_EMBED_DIM,
    (2, "queries from k_proj"): _multihead.QUERIES_FROM_K_PROJ,
    (2, "attention averaged over heads"): _multihead.HEADS_AVERAGED,
    (2, "(B, L, L) mask without a head axis"): HEAD_AXIS_MISSING,
    (3, "pre-norm instead of post-norm"): _encoder.PRE_NORM,
    (3, "no residual around attention"): _encoder.NO_ATTENTION_RESIDUAL,
    (3, "no residual around the feed-forward network"): _encoder.NO_FEEDFORWARD_RESIDUAL,
    (3, "one LayerNorm reused"): _encoder.ONE_NORM_REUSED,
    (3, "second LayerNorm missing"): _encoder.SECOND_NORM_MISSING,
    (3, "activation argument ignored"): _encoder.ACTIVATION_IGNORED,
    (3, "dropout active in eval mode"): DROPOUT_IN_EVAL,
    (3, "feed-forward applied to the block input"): _encoder.FEEDFORWARD_ON_INPUT,
    (3, "dropout on the residual sum"): DROPOUT_ON_RESIDUAL,
    (3, "mask not passed to attention"): _encoder.MASK_NOT_PASSED,
    (4, "sin and cos swapped"): _positional.SIN_COS_SWAPPED,
    (4, "halves concatenated instead of interleaved"): _positional.HALVES_CONCATENATED,
    (4, "wrong base"): _positional.WRONG_BASE,
    (4, "exponent i/D instead of 2i/D"): _positional.EXPONENT_OFF,
    (4, "multiplied instead of added"): _positional.MULTIPLIED,
    (4, "positions start at 1"): _positional.FROM_ONE,
    (4, "added in place"): ADDED_IN_PLACE.format(name="x"),
    (4, "trainable pe"): _positional.TRAINABLE_PE,
    (4, "pe a plain attribute"): NOT_A_BUFFER,
    (4, "float64 table"): FIXED_DTYPE,
    (5, "float64 positional table"): FIXED_DTYPE,
    (5, "no positional encoding"): _classifier.NO_POSITIONAL_ENCODING,
    (5, "[CLS] read from the last position"): _classifier.CLS_FROM_LAST,
    (5, "mean pooling instead of [CLS]"): _classifier.MEAN_POOLING,
    (5, "[CLS] summed instead of prepended"): CLS_NOT_PREPENDED,
    (5, "[CLS] not learnable"): _classifier.CLS_NOT_LEARNABLE,
    (5, "[CLS] initialised with zeros"): _classifier.CLS_NOT_STANDARD_NORMAL,
    (5, "[CLS] initialised small and uniform"): _classifier.CLS_NOT_STANDARD_NORMAL,
    (5, "one block reused for every layer"): _classifier.ONE_BLOCK_REUSED,
    (5, "attention maps of the last layer only"): _classifier.MAPS_PER_BLOCK,
    (7, "E reused for the values"): _linformer.E_FOR_VALUES,
    (7, "no scaling"): _linformer.NOT_SCALED,
    (7, "softmax over the queries"): _linformer.SOFTMAX_OVER_QUERIES,
    (7, "queries projected along the sequence too"): QUERIES_PROJECTED,
    (7, "full attention left in place"): NOT_LINFORMER,
    (7, "projection along the feature axis"): _linformer.FEATURE_AXIS,
}
MUTANTS = [Mutant(m.task, m.name, m.edits, DIAGNOSES.get((m.task, m.name), "")) for m in MUTANTS]
