"""The third held-out list of student mistakes for the transformer assignment (Tasks 1-5 and 7).

Written from the notebooks (student and solutions) and reference answers only, without reading the checks (not
checkers/transformer, the planted mistakes, the fixtures or the other tests; heldout_round2.py and unnamed_mistakes.py
were read for their format and names only, so that no mistake here repeats one there). Each mistake is a list of edits
(old text, new text) of the reference answer source, applied in order as course.mutant.Mutant applies a planted
mistake; each old text occurs exactly once where it is applied. `what` says what is wrong, in the words a check that
names the mistake would need.
"""
from tools.heldout import HeldOut


_SCORES = "scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))"
_MHA_SHAPES = """\
        batch_size, seq_len, _ = x.shape
        heads_shape = (batch_size, seq_len, self.num_heads, self.head_dim)
        query = self.q_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, L, head_dim)
        key = self.k_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, L, head_dim)
"""
_MHA_ATTENTION = ("heads, attention = scaled_softmax_attention(query, key, value, mask)  "
                  "# (B, H, L, head_dim), (B, H, L, L)")
_ENCODER_FORWARD = """\
        attended, attention = self.attention(x, mask=mask, return_attention=True)  # (B, L, D), (B, H, L, L)
        x = self.norm1(x + self.dropout(attended))  # (B, L, D)
        x = self.norm2(x + self.dropout(self.feedforward(x)))  # (B, L, D)
"""

MISTAKES = [
    # ---- Task 1: scaled_softmax_attention ----
    dict(task=1, name="attention_scaled_by_number_of_keys",
         edits=((_SCORES, "scores = query @ key.transpose(-2, -1) / math.sqrt(key.size(-2))"),),
         what="The scores are divided by sqrt(L_k), the square root of the number of keys, instead of sqrt(D), "
              "the feature size (the same only when L_k == D)."),
    dict(task=1, name="attention_mask_truth_tested",
         edits=(("    if mask is not None:\n        scores = scores.masked_fill(mask == 0,",
                 "    if mask:\n        scores = scores.masked_fill(mask == 0,"),),
         what="The mask is tested with `if mask:` instead of `if mask is not None:`, so any mask tensor of more than "
              "one element raises 'Boolean value of Tensor with more than one value is ambiguous'."),

    # ---- Task 2: MultiheadAttention ----
    dict(task=2, name="mha_batch_and_length_read_swapped",
         edits=((_MHA_SHAPES, _MHA_SHAPES.replace("batch_size, seq_len, _ = x.shape",
                                                  "seq_len, batch_size, _ = x.shape")),),
         what="x's shape is read as (L, B, D) (nn.MultiheadAttention's sequence-first layout), so B and L are swapped: "
              "the views mix tokens of different batch elements and the output is (L, B, D) unless B == L."),
    dict(task=2, name="mha_weights_averaged_over_heads",
         edits=((_MHA_ATTENTION, _MHA_ATTENTION + "\n        attention = attention.mean(dim=1)  # (B, L, L)"),),
         what="The returned attention is averaged over the heads, (B, L, L) as torch's nn.MultiheadAttention does by "
              "default, instead of one map per head, (B, H, L, L)."),

    # ---- Task 3: EncoderBlock ----
    dict(task=3, name="encoder_feedforward_width_ignored",
         edits=(("nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))",
                 "nn.Linear(embed_dim, embed_dim), activation(), nn.Linear(embed_dim, embed_dim))"),),
         what="The feed-forward network's hidden layer is embed_dim wide instead of feedforward_dim: the "
              "feedforward_dim argument is ignored."),
    dict(task=3, name="encoder_norm_on_input_not_sum",
         edits=((_ENCODER_FORWARD,
                 _ENCODER_FORWARD.replace("x = self.norm1(x + self.dropout(attended))",
                                          "x = self.norm1(x) + self.dropout(attended)")
                 .replace("x = self.norm2(x + self.dropout(self.feedforward(x)))",
                          "x = self.norm2(x) + self.dropout(self.feedforward(x))")),),
         what="A misplaced parenthesis: each LayerNorm normalises only the sub-layer's input x and the sub-layer "
              "output is added after it, norm(x) + sublayer(x), instead of norm(x + sublayer(x))."),

    # ---- Task 4: PositionalEncoding ----
    dict(task=4, name="pe_log10_in_exponential_form",
         edits=(("frequency = 10000.0 ** (-torch.arange(0, embed_dim, 2) / embed_dim)",
                 "frequency = torch.exp(-torch.arange(0, embed_dim, 2) * math.log10(10000.0) / embed_dim)"),),
         what="The frequencies are written as exp(-2i log(10000) / D) but with log10 instead of the natural log, so "
              "they are exp(-8i / D) instead of 10000^(-2i/D): every pair but the first gets the wrong frequency."),
    dict(task=4, name="pe_table_sliced_on_first_axis",
         edits=(("return x + self.pe[:, : x.size(1)]", "return x + self.pe[: x.size(1)]"),),
         what="forward slices the buffer's first (size 1) axis instead of its positions axis, so the whole "
              "(1, max_len, D) table is added: a shape error unless L == max_len."),

    # ---- Task 5: TransformerForSequenceClassification ----
    dict(task=5, name="cls_reads_first_batch_element",
         edits=(("return self.classifier(hidden[:, 0])", "return self.classifier(hidden[0])"),),
         what="The classifier reads hidden[0], the first sequence of the batch at every position, (L + 1, C), "
              "instead of hidden[:, 0], the [CLS] position of every sequence, (B, C)."),

    # ---- Task 7: Linformer ----
    dict(task=7, name="linformer_block_lengths_swapped",
         edits=(("self.attention = LinformerAttention(embed_dim, num_heads, sequence_length, proj_dim)",
                 "self.attention = LinformerAttention(embed_dim, num_heads, proj_dim, sequence_length)"),),
         what="LinformerBlock passes proj_dim and sequence_length to LinformerAttention in the wrong order, so E and F "
              "map proj_dim positions to sequence_length: a shape error unless the two are equal."),
]


LIST = HeldOut("transformer")


# What this list found when it was written, still open: mistakes its checks pass, and mistakes the grade pays
# (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
