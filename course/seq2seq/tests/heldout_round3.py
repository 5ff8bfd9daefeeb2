"""The third held-out list of student mistakes for the seq2seq assignment (Tasks 1-6).

Written from the notebooks (student and solutions) and reference answers only, without reading the checks (not
checkers/seq2seq, the planted mistakes, the fixtures or the other tests; heldout_round2.py and unnamed_mistakes.py
were read for their format and names only, so that no mistake here repeats one there). Each mistake is a list of edits
(old text, new text) of the reference answer source, applied in order as course.mutant.Mutant applies a planted
mistake; each old text occurs exactly once where it is applied, and only answer code is edited (never the given
attention, positional encoding or encoder block). `what` says what is wrong, in the words a check that names the
mistake would need.
"""
from tools.heldout import HeldOut


_MHA_ATTENTION = ("heads, attention = scaled_softmax_attention(query, key, value, mask)  "
                  "# (B, H, L_q, head_dim), (B, H, L_q, L_k)")
_ENCODE_EMBED = "x = self.positional_encoding(self.embedding(source) * math.sqrt(self.embed_dim))  # (B, S, D)"
_DECODE_EMBED = "x = self.positional_encoding(self.embedding(target_input) * math.sqrt(self.embed_dim))  # (B, T, D)"

MISTAKES = [
    # ---- Task 1: LayerNorm ----
    dict(task=1, name="layernorm_shift_before_scale",
         edits=(("return centered / torch.sqrt(var + self.eps) * self.weight + self.bias",
                 "return (centered / torch.sqrt(var + self.eps) + self.bias) * self.weight"),),
         what="The shift is added before the scale, (x_hat + beta) * gamma, instead of gamma * x_hat + beta, so "
              "the bias is multiplied by the weight."),

    # ---- Task 2: causal_mask, padding_mask ----
    dict(task=2, name="padding_mask_square",
         edits=(("return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, L)",
                 "return (tokens != pad_id)[:, None, None, :].expand(-1, 1, tokens.size(1), -1)  # (B, 1, L, L)"),),
         what="padding_mask returns a square (B, 1, L, L) mask (the key mask repeated for L queries) instead of "
              "(B, 1, 1, L): it only broadcasts where the queries are as many as the keys, not in cross-attention."),

    # ---- Task 3: MultiheadAttention ----
    dict(task=3, name="mha_weights_transposed_like_heads",
         edits=((_MHA_ATTENTION,
                 _MHA_ATTENTION + "\n        attention = attention.transpose(1, 2)  # (B, L_q, H, L_k)"),),
         what="The returned weights get the same transpose(1, 2) as the heads, (B, L_q, H, L_k) instead of "
              "(B, H, L_q, L_k)."),
    dict(task=3, name="mha_query_length_from_context",
         edits=(("batch_size, query_len, _ = x.shape", "batch_size, query_len, _ = context.shape"),),
         what="The query length is read from the context instead of x, so cross-attention with a target length "
              "other than the source length fails to view the queries."),

    # ---- Task 4: DecoderBlock ----
    dict(task=4, name="decoder_feedforward_reads_cross_output",
         edits=(("x = self.norm3(x + self.dropout(self.feedforward(x)))",
                 "x = self.norm3(x + self.dropout(self.feedforward(attended)))"),),
         what="The feed-forward network reads the raw cross-attention output instead of the stream after norm2 "
              "(its residual is right)."),
    dict(task=4, name="decoder_cross_residual_from_memory",
         edits=(("x = self.norm2(x + self.dropout(attended))", "x = self.norm2(memory + self.dropout(attended))"),),
         what="The cross-attention residual adds the encoder memory instead of the decoder stream x: a shape error "
              "when the source and target lengths differ, the wrong sum otherwise."),

    # ---- Task 5: Seq2SeqTransformer ----
    dict(task=5, name="model_sqrt_operator_precedence",
         edits=((_ENCODE_EMBED, _ENCODE_EMBED.replace("math.sqrt(self.embed_dim)", "self.embed_dim ** 1 / 2")),
                (_DECODE_EMBED, _DECODE_EMBED.replace("math.sqrt(self.embed_dim)", "self.embed_dim ** 1 / 2"))),
         what="The embeddings are scaled by `self.embed_dim ** 1 / 2`, which is D / 2 (operator precedence), "
              "instead of sqrt(D)."),
    dict(task=5, name="model_returns_probabilities",
         edits=(("return self.output(x)  # (B, T, vocab_size)",
                 "return self.output(x).softmax(dim=-1)  # (B, T, vocab_size)"),),
         what="decode (and so forward) returns softmax probabilities instead of logits."),

    # ---- Task 6: greedy_decode ----
    dict(task=6, name="greedy_restores_train_mode_always",
         edits=(("model.train(mode_before)", "model.train()"),),
         what="greedy_decode ends with model.train() instead of restoring the mode it found, so a model in eval "
              "mode is left in training mode (dropout on)."),
    dict(task=6, name="greedy_length_from_source",
         edits=(("for _ in range(max_len):", "for _ in range(source.size(1)):"),),
         what="The loop runs for the source length instead of max_len: max_len is ignored, so outputs are cut at "
              "S tokens or run past max_len."),
]


LIST = HeldOut("seq2seq")


# What this list found when it was written, still open: mistakes its checks pass, and mistakes the grade pays
# (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
