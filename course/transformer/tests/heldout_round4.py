"""The fourth held-out list of student mistakes for the transformer assignment (Tasks 1-5 and 7), written without the
checks.

Written from the notebooks (student and solutions) and reference answers only (not from checkers/transformer, the
planted mistakes or the other tests; heldout_round2.py, heldout_round3.py and unnamed_mistakes.py were read for their
names and `what` lines only, so that no mistake here repeats one there). Each mistake is a list of edits (old text, new
text) of the reference answer source, applied in order as course.mutant.Mutant applies a planted mistake; each old
text occurs exactly once where it is applied. `what` says what is wrong, in the words a check that names the mistake
would need.
"""
from tools.heldout import HeldOut


_ENCODER_SUBLAYERS = """\
attended, attention = self.attention(x, mask=mask, return_attention=True)  # (B, L, D), (B, H, L, L)
        x = self.norm1(x + self.dropout(attended))  # (B, L, D)
        x = self.norm2(x + self.dropout(self.feedforward(x)))  # (B, L, D)"""
_LINFORMER_SUBLAYERS = """\
attended, attention = self.attention(x, return_attention=True)  # (B, L, D), (B, H, L, proj_dim)
        x = self.norm1(x + self.dropout(attended))  # (B, L, D)
        x = self.norm2(x + self.dropout(self.feedforward(x)))  # (B, L, D)"""
_OWN_ATTENTION = """\
scores = query @ key.transpose(-2, -1) / math.sqrt(self.embed_dim)  # (B, H, L, L)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attention = torch.softmax(scores, dim=-1)  # (B, H, L, L)
        heads = attention @ value  # (B, H, L, head_dim)"""

MISTAKES = [
    # ---- Task 1: scaled_softmax_attention ----
    dict(task=1, name="attention_softmax_global_max",
         edits=(("attention = torch.softmax(scores, dim=-1)  # (..., L_q, L_k)",
                 "weights = torch.exp(scores - scores.max())  # (..., L_q, L_k)\n"
                 "    attention = weights / weights.sum(dim=-1, keepdim=True)  # (..., L_q, L_k)"),),
         what="A hand-written softmax subtracts the maximum of the whole tensor instead of each row's maximum: a row "
              "whose scores all lie far below the largest score anywhere underflows to 0 / 0 (NaN)."),
    dict(task=1, name="attention_mask_index_assignment",
         edits=(('scores = scores.masked_fill(mask == 0, float("-inf"))', 'scores[mask == 0] = float("-inf")'),),
         what="The mask is applied by boolean indexing, scores[mask == 0] = -inf, which needs a mask of exactly the "
              "scores' shape: a mask that only broadcasts, such as (L_q, L_k) for batched scores, raises an "
              "IndexError."),

    # ---- Task 2: MultiheadAttention ----
    dict(task=2, name="mha_heads_merged_without_transpose",
         edits=(("merged = heads.transpose(1, 2).reshape(batch_size, seq_len, self.embed_dim)",
                 "merged = heads.reshape(batch_size, seq_len, self.embed_dim)"),),
         what="The heads (B, H, L, head_dim) are merged by reshaping straight to (B, L, D) without first moving the "
              "heads axis next to head_dim, so each output token is built from several positions of one head."),
    dict(task=2, name="mha_own_attention_scaled_by_embed_dim",
         edits=(("heads, attention = scaled_softmax_attention(query, key, value, mask)", _OWN_ATTENTION),),
         what="The attention is written out again inside forward and divides the scores by sqrt(embed_dim) instead "
              "of sqrt(head_dim), the width of one head: the weights are too flat whenever there is more than one "
              "head."),

    # ---- Task 3: EncoderBlock ----
    dict(task=3, name="encoder_activation_class_not_instantiated",
         edits=(("nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))",
                 "nn.Linear(embed_dim, feedforward_dim), activation, nn.Linear(feedforward_dim, embed_dim))"),),
         what="The activation class itself (nn.ReLU) is put into nn.Sequential instead of an instance activation(), "
              "so building the block raises a TypeError (a class is not a Module)."),
    dict(task=3, name="encoder_no_feedforward_residual",
         edits=((_ENCODER_SUBLAYERS,
                 _ENCODER_SUBLAYERS.replace("self.norm2(x + self.dropout(", "self.norm2(self.dropout(")),),
         what="The feed-forward sub-layer has no residual connection: norm2 normalises the feed-forward output alone "
              "instead of x + feedforward(x), so the attention sub-layer's result is lost."),

    # ---- Task 4: PositionalEncoding ----
    dict(task=4, name="pe_frequency_from_max_len",
         edits=(("frequency = 10000.0 ** (-torch.arange(0, embed_dim, 2) / embed_dim)",
                 "frequency = 10000.0 ** (-torch.arange(0, embed_dim, 2) / max_len)"),),
         what="The exponent 2i / D is divided by max_len instead of embed_dim, so the frequencies depend on the "
              "table's length and hardly decay across the columns: 10000^(-2i / max_len) instead of 10000^(-2i / D)."),

    # ---- Task 5: TransformerForSequenceClassification ----
    dict(task=5, name="cls_block_arguments_swapped",
         edits=(("EncoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout)",
                 "EncoderBlock(embed_dim, feedforward_dim, num_heads, activation, dropout)"),),
         what="num_heads and feedforward_dim are passed to EncoderBlock in the wrong order, so the blocks get "
              "feedforward_dim heads and a feed-forward layer num_heads wide (or fail embed_dim's divisibility "
              "assert)."),
    dict(task=5, name="cls_token_not_parameter",
         edits=(("self.cls_token = nn.Parameter(torch.randn(embed_dim))", "self.cls_token = torch.randn(embed_dim)"),),
         what="cls_token is a plain tensor, not an nn.Parameter: it is not among the model's parameters, so it is "
              "never trained, not saved in the state_dict and not moved by .to(device)."),

    # ---- Task 7: Linformer ----
    dict(task=7, name="linformer_block_reuses_parent_forward",
         edits=((_LINFORMER_SUBLAYERS, "return super().forward(x, mask=mask, return_attention=return_attention)"),),
         what="LinformerBlock.forward calls EncoderBlock.forward, which passes mask= to its attention: "
              "LinformerAttention.forward takes no mask, so every call raises a TypeError."),
]


LIST = HeldOut("transformer")


# What this list found when it was written, still open: mistakes its checks pass, and mistakes the grade pays
# (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
