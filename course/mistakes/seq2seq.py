"""Known student mistakes of the seq2seq assignment, each a few edits of the reference source (the solutions
notebook). See course/mistakes/transformer.py for how they are used. Instructor-side only: never shipped.
"""
from checkers.seq2seq import attention as _attention, decoder as _decoder, layer_norm as _norm, masks as _masks
from course.mistakes import Mutant

# ---- Tasks 1-4: the reference lines the mistakes edit ----
VARIANCE = "var = (centered * centered).mean(dim=-1, keepdim=True)  # (..., 1), biased: divided by D"
NORMALISE = "return centered / torch.sqrt(var + self.eps) * self.weight + self.bias  # (..., D)"
MEAN = "mean = x.mean(dim=-1, keepdim=True)  # (..., 1)"
CAUSAL = "return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()  # (L, L)"
PADDING = "return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, L)"
KEY = "key = self.k_proj(context).view("
VALUE = "value = self.v_proj(context).view("
QUERY = "query = self.q_proj(x).view("
MHA_CALL = "heads, attention = scaled_softmax_attention(query, key, value, mask)"
MERGE = "reshape(batch_size, query_len, self.embed_dim)"
SELF = "attended, self_weights = self.self_attention(x, mask=self_mask, return_attention=True)  # (B, T, D)"
NORM1 = "x = self.norm1(x + self.dropout(attended))"  # also in the provided EncoderBlock: edit with NORM1_CROSS
NORM1_CROSS = NORM1 + "\n        attended, cross_weights"
CROSS = """        attended, cross_weights = self.cross_attention(
            x, context=memory, mask=memory_mask, return_attention=True)  # (B, T, D), (B, H, T, S)
        x = self.norm2(x + self.dropout(attended))
"""
FFN = "x = self.norm3(x + self.dropout(self.feedforward(x)))"
NORMS = "self.norm1, self.norm2, self.norm3 = LayerNorm(embed_dim), LayerNorm(embed_dim), LayerNorm(embed_dim)"

MUTANTS = [
    # ---- Tasks 1-4 ----
    # Task 1: LayerNorm
    Mutant(1, "unbiased variance", ((VARIANCE, "var = x.var(dim=-1, keepdim=True)"),), _norm.UNBIASED),
    Mutant(1, "eps outside the square root", ((NORMALISE, NORMALISE.replace(
        "torch.sqrt(var + self.eps)", "(torch.sqrt(var) + self.eps)")),), _norm.EPS_OUTSIDE),
    Mutant(1, "normalised over the wrong axis", ((MEAN, "mean = x.mean(dim=0, keepdim=True)"),
                                                 (VARIANCE, "var = (centered * centered).mean(dim=0, keepdim=True)")),
           _norm.WRONG_AXIS),
    Mutant(1, "weight and bias not applied", ((NORMALISE, "return centered / torch.sqrt(var + self.eps)"),),
           _norm.AFFINE_NOT_APPLIED),
    Mutant(1, "weight and bias plain tensors", (("self.weight = nn.Parameter(torch.ones(embed_dim))",
                                                 "self.weight = torch.ones(embed_dim)"),
                                                ("self.bias = nn.Parameter(torch.zeros(embed_dim))",
                                                 "self.bias = torch.zeros(embed_dim)")), _norm.NOT_PARAMETER),
    Mutant(1, "eps argument ignored", ((NORMALISE, NORMALISE.replace("self.eps", "1e-5")),),
           _norm.EPS_IGNORED),
    # Task 2: masks
    Mutant(2, "causal mask inverted", ((CAUSAL, CAUSAL.replace(".tril()", ".tril().logical_not()")),),
           _masks.CAUSAL_INVERTED),
    Mutant(2, "causal mask transposed", ((CAUSAL, CAUSAL.replace(".tril()", ".triu()")),), _masks.CAUSAL_TRANSPOSED),
    Mutant(2, "causal mask without the diagonal", ((CAUSAL, CAUSAL.replace(".tril()", ".tril(-1)")),),
           _masks.CAUSAL_NO_DIAGONAL),
    Mutant(2, "causal mask sees the next position", ((CAUSAL, CAUSAL.replace(".tril()", ".tril(1)")),),
           _masks.CAUSAL_SEES_NEXT),
    Mutant(2, "padding mask on the queries", ((PADDING, "return (tokens != pad_id)[:, None, :, None]"),),
           _masks.PADDING_ON_QUERIES),
    Mutant(2, "padding mask of shape (B, L)", ((PADDING, "return tokens != pad_id"),), _masks.PADDING_NO_AXES),
    Mutant(2, "padding mask of shape (B, 1, L)", ((PADDING, "return (tokens != pad_id).unsqueeze(1)"),),
           _masks.PADDING_NO_AXES),
    Mutant(2, "padding mask inverted", ((PADDING, "return (tokens == pad_id)[:, None, None, :]"),),
           _masks.PADDING_INVERTED),
    Mutant(2, "padding mask with pad id 0", ((PADDING, "return (tokens != 0)[:, None, None, :]"),),
           _masks.PAD_ID_IGNORED),
    # Task 3: MultiheadAttention
    Mutant(3, "keys and values from x", ((KEY, "key = self.k_proj(x).view("), (VALUE, "value = self.v_proj(x).view(")),
           _attention.KV_FROM_X),
    Mutant(3, "queries from the context", ((QUERY, "query = self.q_proj(context).view("),), _attention.Q_FROM_CONTEXT),
    Mutant(3, "heads merged with the key length", ((MERGE, "reshape(batch_size, key_len, self.embed_dim)"),),
           _attention.MERGE_KEY_LEN),
    Mutant(3, "mask not broadcast over the heads", ((MHA_CALL, MHA_CALL.replace(
        "value, mask)", "value, mask if mask is None or mask.dim() < 4 else mask[:, 0])")),), _attention.MASK_HEADS),
    Mutant(3, "no output projection", (("outputs = self.o_proj(heads.transpose(1, 2)",
                                         "outputs = (heads.transpose(1, 2)"),)),
    Mutant(3, "context ignored", (("context = x if context is None else context", "context = x"),),
           _attention.KV_FROM_X),
    # Task 4: DecoderBlock
    Mutant(4, "pre-norm", ((SELF, SELF.replace("self.self_attention(x,", "self.self_attention(self.norm1(x),")),
                           (NORM1_CROSS, NORM1_CROSS.replace(NORM1, "x = x + self.dropout(attended)")),
                           (CROSS, CROSS.replace("self.cross_attention(\n            x,",
                                                 "self.cross_attention(\n            self.norm2(x),")
                            .replace("x = self.norm2(x + self.dropout(attended))", "x = x + self.dropout(attended)")),
                           (FFN, "x = x + self.dropout(self.feedforward(self.norm3(x)))")), _decoder.PRE_NORM),
    Mutant(4, "cross-attention before self-attention",
           ((SELF + "\n        " + NORM1 + "\n" + CROSS,
             CROSS.replace("x = self.norm2", "x = self.norm1").lstrip() + "        " + SELF
             + "\n        " + NORM1.replace("norm1", "norm2") + "\n"),), _decoder.CROSS_FIRST),
    Mutant(4, "memory_mask not passed", (("context=memory, mask=memory_mask,", "context=memory,"),),
           _decoder.MEMORY_MASK_IGNORED),
    Mutant(4, "self_mask not passed", ((SELF, SELF.replace("mask=self_mask, ", "")),), _decoder.SELF_MASK_IGNORED),
    Mutant(4, "one LayerNorm reused", (("x = self.norm2(x + self.dropout(attended))",
                                        "x = self.norm1(x + self.dropout(attended))"),
                                       (FFN, FFN.replace("norm3", "norm1"))), _decoder.ONE_NORM),
    Mutant(4, "one LayerNorm module for all three", ((NORMS, "self.norm1 = self.norm2 = self.norm3 = "
                                                      "LayerNorm(embed_dim)"),), _decoder.SHARED),
    Mutant(4, "one attention for self and cross", (("self.cross_attention = MultiheadAttention(embed_dim, num_heads)",
                                                    "self.cross_attention = self.self_attention"),), _decoder.SHARED),
    Mutant(4, "dropout active in eval mode", ((NORM1_CROSS, NORM1_CROSS.replace(
        NORM1, "x = self.norm1(x + F.dropout(attended, self.dropout.p, training=True))")),), _decoder.DROPOUT_IN_EVAL),
    Mutant(4, "dropout on the residual sum", ((NORM1_CROSS, NORM1_CROSS.replace(
        NORM1, "x = self.norm1(self.dropout(x + attended))")),
                                              (FFN, "x = self.norm3(self.dropout(x + self.feedforward(x)))")),
           _decoder.DROPOUT_ON_RESIDUAL),
    Mutant(4, "no residual around cross-attention", (("x = self.norm2(x + self.dropout(attended))",
                                                      "x = self.norm2(self.dropout(attended))"),),
           _decoder.RESIDUAL_MISSING.format(name="cross_attention")),

    # ---- Tasks 5-7 ----
]
