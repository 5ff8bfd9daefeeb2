"""The second held-out list of student mistakes for the transformer assignment (Tasks 1-5 and 7).

Written from the solutions notebook's task text and reference answers only, without reading the checks (not
checkers/transformer, the planted mistakes in course/transformer/mistakes.py, the fixtures or the other tests), so
that it measures whether the checks name mistakes nobody planted. Each mistake is a list of edits (old text, new
text) of the reference answer source, applied in order as course.mutant.Mutant applies a planted mistake; each old
text occurs exactly once where it is applied. `what` says what is wrong, in the words a check that names the
mistake would need. None repeats a mistake of course/transformer/tests/unnamed_mistakes.py.
"""
from tools.heldout import HeldOut


# ---- pieces of the reference quoted whole where a line alone is not unique ----
_MASK_AND_SOFTMAX = """\
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    attention = torch.softmax(scores, dim=-1)  # (..., L_q, L_k)
"""
_MHA_SPLIT = """\
        heads_shape = (batch_size, seq_len, self.num_heads, self.head_dim)
        query = self.q_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, L, head_dim)
        key = self.k_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, L, head_dim)
        value = self.v_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, L, head_dim)
"""
_MHA_SPLIT_STRAIGHT = """\
        heads_shape = (batch_size, self.num_heads, seq_len, self.head_dim)
        query = self.q_proj(x).view(heads_shape)  # (B, H, L, head_dim)
        key = self.k_proj(x).view(heads_shape)  # (B, H, L, head_dim)
        value = self.v_proj(x).view(heads_shape)  # (B, H, L, head_dim)
"""
_MHA_QUERY_KEY = """\
        query = self.q_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, L, head_dim)
        key = self.k_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, L, head_dim)
"""
_MHA_INIT = """\
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.o_proj = nn.Linear(embed_dim, embed_dim)
        ### END SOLUTION

    def forward(self, x, mask=None, return_attention=False):
"""
_MHA_INIT_NO_BIAS = """\
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.o_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        ### END SOLUTION

    def forward(self, x, mask=None, return_attention=False):
"""
_ENCODER_FORWARD = """\
        attended, attention = self.attention(x, mask=mask, return_attention=True)  # (B, L, D), (B, H, L, L)
        x = self.norm1(x + self.dropout(attended))  # (B, L, D)
        x = self.norm2(x + self.dropout(self.feedforward(x)))  # (B, L, D)
"""
_LINFORMER_FIRST_SUBLAYER = """\
        attended, attention = self.attention(x, return_attention=True)  # (B, L, D), (B, H, L, proj_dim)
        x = self.norm1(x + self.dropout(attended))  # (B, L, D)
"""
_PE_TABLE = """\
        pe = torch.zeros(max_len, embed_dim)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle[:, : embed_dim // 2])
"""
_LINFORMER_ENCODER = """\
        self.encoder = nn.ModuleList(
            [LinformerBlock(embed_dim, num_heads, feedforward_dim, sequence_length, proj_dim, activation, dropout)
             for _ in range(num_layers)])
"""


def _encoder_forward(first, second, attention_input="x"):
    return (f"        attended, attention = self.attention({attention_input}, mask=mask, return_attention=True)\n"
            f"        {first}\n        {second}\n")


MISTAKES = [
    # ---- Task 1: scaled_softmax_attention ----
    dict(task=1, name="attention_masked_scores_zero",
         edits=(('scores.masked_fill(mask == 0, float("-inf"))', "scores.masked_fill(mask == 0, 0.0)"),),
         what="Masked scores are set to 0 instead of -inf, so forbidden keys still get a positive weight."),
    dict(task=1, name="attention_mask_true_means_hidden",
         edits=(("scores.masked_fill(mask == 0,", "scores.masked_fill(mask.bool(),"),),
         what="The mask polarity is inverted (torch's nn.MultiheadAttention convention): True / nonzero positions "
              "are hidden and the zero ones attended."),
    dict(task=1, name="attention_mask_bitwise_not",
         edits=(("scores.masked_fill(mask == 0,", "scores.masked_fill(~mask,"),),
         what="The mask is inverted with ~mask, which is right for a bool mask but fails on an integer (0 / 1) "
              "or float mask, which the task allows."),
    dict(task=1, name="attention_scaled_by_d_not_sqrt",
         edits=(("scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))",
                 "scores = query @ key.transpose(-2, -1) / query.size(-1)"),),
         what="The scores are divided by D instead of sqrt(D)."),
    dict(task=1, name="attention_weights_scaled_not_scores",
         edits=(("scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))",
                 "scores = query @ key.transpose(-2, -1)"),
                ("attention = torch.softmax(scores, dim=-1)",
                 "attention = torch.softmax(scores, dim=-1) / math.sqrt(query.size(-1))")),
         what="The 1/sqrt(D) is applied to the softmax weights instead of the scores, so rows sum to 1/sqrt(D)."),
    dict(task=1, name="attention_softmax_over_queries",
         edits=(("attention = torch.softmax(scores, dim=-1)", "attention = torch.softmax(scores, dim=-2)"),),
         what="The softmax runs over the queries (dim=-2) instead of the keys, so columns sum to 1, not rows."),
    dict(task=1, name="attention_mask_added_to_scores",
         edits=(('scores = scores.masked_fill(mask == 0, float("-inf"))', "scores = scores + mask"),),
         what="The mask is added to the scores as if it were an additive mask, so a 0 / False entry is not "
              "hidden (allowed keys only get +1)."),
    dict(task=1, name="attention_mask_after_softmax",
         edits=((_MASK_AND_SOFTMAX,
                 "    attention = torch.softmax(scores, dim=-1)  # (..., L_q, L_k)\n"
                 "    if mask is not None:\n        attention = attention * mask\n"),),
         what="The mask zeroes the weights after the softmax without renormalising, so masked rows no longer "
              "sum to 1."),
    dict(task=1, name="attention_returns_raw_scores",
         edits=(("attention = torch.softmax(scores, dim=-1)", "attention = scores"),
                ("res = attention @ value", "res = torch.softmax(attention, dim=-1) @ value")),
         what="The result is right but the returned attention is the scaled, masked scores before the softmax, "
              "not the weights."),
    dict(task=1, name="attention_query_scaled_in_place",
         edits=(("scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))",
                 "query /= math.sqrt(query.size(-1))\n    scores = query @ key.transpose(-2, -1)"),),
         what="query is divided by sqrt(D) in place, so the caller's query tensor is modified (and a query that "
              "requires grad raises)."),
    dict(task=1, name="attention_unstable_softmax",
         edits=(("attention = torch.softmax(scores, dim=-1)",
                 "attention = scores.exp() / scores.exp().sum(dim=-1, keepdim=True)"),),
         what="A hand-written softmax exp(s) / sum exp(s) without subtracting the maximum overflows to NaN on "
              "large scores."),
    dict(task=1, name="attention_key_transpose_1_2",
         edits=(("key.transpose(-2, -1)", "key.transpose(1, 2)"),),
         what="The key is transposed on axes 1 and 2, which are the last two only for 3-D inputs: a 4-D "
              "(B, H, L, D) key swaps heads and positions, a 2-D key raises."),

    # ---- Task 2: MultiheadAttention ----
    dict(task=2, name="mha_values_from_k_proj",
         edits=(("value = self.v_proj(x).view(heads_shape).transpose(1, 2)",
                 "value = self.k_proj(x).view(heads_shape).transpose(1, 2)"),),
         what="The values are projected with k_proj (values equal keys); v_proj is created but never used."),
    dict(task=2, name="mha_keys_from_q_proj",
         edits=(("key = self.k_proj(x).view(heads_shape).transpose(1, 2)",
                 "key = self.q_proj(x).view(heads_shape).transpose(1, 2)"),),
         what="The keys are projected with q_proj, so every score matrix is symmetric; k_proj is never used."),
    dict(task=2, name="mha_no_output_projection",
         edits=(("outputs = self.o_proj(merged)  # (B, L, D)", "outputs = merged  # (B, L, D)"),),
         what="The merged heads are returned without the output projection o_proj."),
    dict(task=2, name="mha_mask_head_axis_first",
         edits=(("mask = mask.unsqueeze(1)  # (B, 1, L, L)", "mask = mask.unsqueeze(0)  # (B, 1, L, L)"),),
         what="A (B, L, L) mask gets its new axis in front (1, B, L, L), so batch element b's mask is applied to "
              "head b (wrong when B == H, a shape error otherwise)."),
    dict(task=2, name="mha_every_mask_unsqueezed",
         edits=(("if mask is not None and mask.dim() == 3:", "if mask is not None:"),),
         what="Every mask gets a head axis at position 1, not only a (B, L, L) one, so (L, L) and 4-D masks no "
              "longer broadcast to (B, H, L, L)."),
    dict(task=2, name="mha_merge_with_view",
         edits=(("merged = heads.transpose(1, 2).reshape(", "merged = heads.transpose(1, 2).view("),),
         what="The heads are merged with view after the transpose, which raises on the non-contiguous tensor "
              "(reshape is needed)."),
    dict(task=2, name="mha_split_view_straight_to_heads",
         edits=((_MHA_SPLIT, _MHA_SPLIT_STRAIGHT),),
         what="The projections are viewed straight to (B, H, L, head_dim) without the transpose, which mixes "
              "positions and features across heads."),
    dict(task=2, name="mha_queries_scaled_twice",
         edits=((_MHA_QUERY_KEY,
                 _MHA_QUERY_KEY.replace(".transpose(1, 2)  # (B, H, L, head_dim)\n        key",
                                        ".transpose(1, 2) / math.sqrt(self.head_dim)\n        key")),),
         what="The queries are divided by sqrt(head_dim) before scaled_softmax_attention, which scales again: "
              "the scores are divided by head_dim."),
    dict(task=2, name="mha_projections_without_bias",
         edits=((_MHA_INIT, _MHA_INIT_NO_BIAS),),
         what="q_proj, k_proj, v_proj and o_proj are created with bias=False, but the task asks for biases "
              "(b_Q, b_K, b_V, b_O)."),

    # ---- Task 3: EncoderBlock ----
    dict(task=3, name="encoder_pre_norm",
         edits=((_ENCODER_FORWARD,
                 _encoder_forward("x = x + self.dropout(attended)",
                                  "x = x + self.dropout(self.feedforward(self.norm2(x)))",
                                  attention_input="self.norm1(x)")),),
         what="The block is pre-norm (LayerNorm before each sub-layer, none after the residual sum) instead of "
              "the post-norm layout the task asks for."),
    dict(task=3, name="encoder_no_attention_residual",
         edits=((_ENCODER_FORWARD, _ENCODER_FORWARD.replace("self.norm1(x + self.dropout(attended))",
                                                            "self.norm1(self.dropout(attended))")),),
         what="No residual around the attention sub-layer: norm1 is applied to the attention output alone."),
    dict(task=3, name="encoder_mask_not_passed",
         edits=(("self.attention(x, mask=mask, return_attention=True)", "self.attention(x, return_attention=True)"),),
         what="The block never passes mask to its attention, so masked keys are attended."),
    dict(task=3, name="encoder_dropout_after_norm",
         edits=((_ENCODER_FORWARD,
                 _encoder_forward("x = self.dropout(self.norm1(x + attended))",
                                  "x = self.dropout(self.norm2(x + self.feedforward(x)))")),),
         what="Dropout is applied after each LayerNorm, to the whole residual stream, instead of to the "
              "sub-layer output before the residual sum (differs in training mode)."),
    dict(task=3, name="encoder_norm2_is_norm1",
         edits=(("self.norm2 = nn.LayerNorm(embed_dim)", "self.norm2 = self.norm1"),),
         what="norm2 is the same LayerNorm object as norm1, so both sub-layers share one scale and shift."),
    dict(task=3, name="encoder_activation_ignored",
         edits=(("nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))",
                 "nn.Linear(embed_dim, feedforward_dim), nn.ReLU(), nn.Linear(feedforward_dim, embed_dim))"),),
         what="The feed-forward network always uses nn.ReLU(), ignoring the activation argument (wrong for "
              "activation=nn.GELU)."),
    dict(task=3, name="encoder_feedforward_reads_block_input",
         edits=((_ENCODER_FORWARD,
                 _encoder_forward("attended = self.norm1(x + self.dropout(attended))",
                                  "x = self.norm2(attended + self.dropout(self.feedforward(x)))")),),
         what="The feed-forward network reads the block's input x instead of the output of the first sub-layer "
              "(its residual is right)."),
    dict(task=3, name="encoder_second_norm_missing",
         edits=((_ENCODER_FORWARD, _ENCODER_FORWARD.replace("x = self.norm2(x + self.dropout(self.feedforward(x)))",
                                                            "x = x + self.dropout(self.feedforward(x))")),),
         what="The feed-forward sub-layer has no LayerNorm after its residual sum; norm2 is created but unused."),

    # ---- Task 4: PositionalEncoding ----
    dict(task=4, name="pe_sin_cos_swapped",
         edits=((_PE_TABLE,
                 "        pe = torch.zeros(max_len, embed_dim)\n        pe[:, 0::2] = torch.cos(angle)\n"
                 "        pe[:, 1::2] = torch.sin(angle[:, : embed_dim // 2])\n"),),
         what="Cosines in the even columns and sines in the odd ones instead of sin at 2i and cos at 2i + 1."),
    dict(task=4, name="pe_sines_then_cosines",
         edits=((_PE_TABLE, "        pe = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)[:, :embed_dim]\n"),),
         what="All sines in the first half of the columns and all cosines in the second, not interleaved."),
    dict(task=4, name="pe_positions_from_one",
         edits=(("position = torch.arange(max_len).unsqueeze(1)",
                 "position = torch.arange(1, max_len + 1).unsqueeze(1)"),),
         what="Positions start at 1 instead of 0 (off by one): the first row is the table's row for p = 1."),
    dict(task=4, name="pe_exponent_i_over_d",
         edits=(("frequency = 10000.0 ** (-torch.arange(0, embed_dim, 2) / embed_dim)",
                 "frequency = 10000.0 ** (-torch.arange((embed_dim + 1) // 2) / embed_dim)"),),
         what="The exponent is i / D instead of 2i / D, so the frequencies decay only half as fast."),
    dict(task=4, name="pe_exponent_sign",
         edits=(("frequency = 10000.0 ** (-torch.arange(0, embed_dim, 2) / embed_dim)",
                 "frequency = 10000.0 ** (torch.arange(0, embed_dim, 2) / embed_dim)"),),
         what="The exponent's minus sign is missing: p is multiplied by 10000^(2i/D) instead of divided by it."),
    dict(task=4, name="pe_adds_in_place",
         edits=(("return x + self.pe[:, : x.size(1)]", "x += self.pe[:, : x.size(1)]\n        return x"),),
         what="forward adds the table to x in place, so the caller's tensor is changed (the task asks for a new "
              "tensor)."),
    dict(task=4, name="pe_sliced_by_batch_size",
         edits=(("return x + self.pe[:, : x.size(1)]", "return x + self.pe[:, : x.size(0)]"),),
         what="The table is cut to x.size(0), the batch size, instead of x.size(1), the length: a batch of one "
              "gets row 0 at every position, other batches fail to broadcast."),
    # pe_odd_width_fails (the cosine columns take all ceil(D/2) angles, which raises for an odd embed_dim) was taken
    # out: the text now asks for an even embed_dim, as four of the five valid variants of Task 4 assume.
    dict(task=4, name="pe_integer_division_exponent",
         edits=(("(-torch.arange(0, embed_dim, 2) / embed_dim)", "(-torch.arange(0, embed_dim, 2) // embed_dim)"),),
         what="The exponent 2i / D is an integer floor division, so every pair but the first gets frequency "
              "10000^-1."),

    # ---- Task 5: TransformerForSequenceClassification ----
    dict(task=5, name="cls_token_zero_init",
         edits=(("self.cls_token = nn.Parameter(torch.randn(embed_dim))",
                 "self.cls_token = nn.Parameter(torch.zeros(embed_dim))"),),
         what="cls_token starts at zeros instead of being drawn from N(0, 1)."),
    dict(task=5, name="cls_no_positional_encoding",
         edits=(("return self.positional_encoding(torch.cat([cls, tokens], dim=1))",
                 "return torch.cat([cls, tokens], dim=1)"),),
         what="embed never adds the positional encoding (created but unused), so the model is blind to order."),
    dict(task=5, name="cls_expanded_along_length",
         edits=(("cls = self.cls_token.expand(x.size(0), 1, -1)", "cls = self.cls_token.expand(1, x.size(0), -1)"),),
         what="[CLS] is expanded to (1, B, D) instead of (B, 1, D): right for a batch of one, a shape error "
              "otherwise."),
    dict(task=5, name="cls_blocks_list_multiplied",
         edits=(("[EncoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout) "
                 "for _ in range(num_layers)]",
                 "[EncoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout)] * num_layers"),),
         what="The encoder is [EncoderBlock(...)] * num_layers: one block repeated, so all layers share weights."),
    dict(task=5, name="cls_reads_last_position",
         edits=(("return self.classifier(hidden[:, 0])", "return self.classifier(hidden[:, -1])"),),
         what="The classifier reads the last position instead of [CLS] at position 0."),
    dict(task=5, name="cls_max_len_not_passed",
         edits=(("self.positional_encoding = PositionalEncoding(embed_dim, max_len)",
                 "self.positional_encoding = PositionalEncoding(embed_dim)"),),
         what="max_len is not passed on to PositionalEncoding, so its table always has 5000 rows and longer "
              "sequences fail even when max_len allows them."),
    dict(task=5, name="cls_attention_maps_without_embed",
         edits=(("hidden, maps = self.embed(x), []", "hidden, maps = self.input_embedding(x), []"),),
         what="forward_attention runs the blocks on input_embedding(x) without [CLS] and positions, so its maps "
              "are (B, H, L, L) and differ from forward's."),
    dict(task=5, name="cls_token_added_not_prepended",
         edits=(("torch.cat([cls, tokens], dim=1)", "cls + tokens"),),
         what="[CLS] is added to every token instead of prepended, so the sequence keeps L positions and the "
              "classifier reads the first token."),
    dict(task=5, name="cls_attention_list_last_only",
         edits=(("maps.append(attention)", "maps = [attention]"),),
         what="forward_attention returns only the last block's attention, not one map per block."),

    # ---- Task 7: LinformerAttention, LinformerBlock, LinformerForSequenceClassification ----
    dict(task=7, name="linformer_e_proj_for_values",
         edits=(("value = self.f_proj(value).transpose(-2, -1)", "value = self.e_proj(value).transpose(-2, -1)"),),
         what="The values are compressed with e_proj like the keys; f_proj is created but never used."),
    dict(task=7, name="linformer_values_not_moved_back",
         edits=(("value = self.f_proj(value).transpose(-2, -1)", "value = self.f_proj(value)"),),
         what="The compressed values are left as (B, H, head_dim, proj_dim) without moving the sequence axis "
              "back: a shape error, or wrong values when head_dim == proj_dim."),
    dict(task=7, name="linformer_keys_permuted_wrong",
         edits=(("key = self.k_proj(x).view(heads_shape).permute(0, 2, 3, 1)",
                 "key = self.k_proj(x).view(heads_shape).permute(0, 3, 2, 1)"),),
         what="The keys are permuted to (B, head_dim, H, L) instead of (B, H, head_dim, L), swapping heads and "
              "features (a shape error unless H == head_dim)."),
    dict(task=7, name="linformer_no_o_proj",
         edits=(("outputs = self.o_proj(heads.transpose(1, 2).reshape(batch_size, seq_len, self.embed_dim))",
                 "outputs = heads.transpose(1, 2).reshape(batch_size, seq_len, self.embed_dim)"),),
         what="LinformerAttention returns the merged heads without the output projection o_proj."),
    dict(task=7, name="linformer_projections_without_bias",
         edits=(("self.e_proj = nn.Linear(sequence_length, proj_dim)\n"
                 "        self.f_proj = nn.Linear(sequence_length, proj_dim)",
                 "self.e_proj = nn.Linear(sequence_length, proj_dim, bias=False)\n"
                 "        self.f_proj = nn.Linear(sequence_length, proj_dim, bias=False)"),),
         what="e_proj and f_proj are created without bias (as in the paper), but the task asks for nn.Linear's "
              "default bias."),
    dict(task=7, name="linformer_block_no_attention_residual",
         edits=((_LINFORMER_FIRST_SUBLAYER,
                 _LINFORMER_FIRST_SUBLAYER.replace("self.norm1(x + self.dropout(attended))",
                                                   "self.norm1(self.dropout(attended))")),),
         what="LinformerBlock has no residual around attention: norm1 is applied to the attention output alone."),
    dict(task=7, name="linformer_block_attention_dropout_missing",
         edits=((_LINFORMER_FIRST_SUBLAYER,
                 _LINFORMER_FIRST_SUBLAYER.replace("self.norm1(x + self.dropout(attended))",
                                                   "self.norm1(x + attended)")),),
         what="LinformerBlock applies no dropout to the attention output (differs in training mode)."),
    dict(task=7, name="linformer_block_keeps_full_attention",
         edits=(("        self.attention = LinformerAttention(embed_dim, num_heads, sequence_length, proj_dim)\n",
                 ""),),
         what="LinformerBlock keeps EncoderBlock's full MultiheadAttention: its attention is (B, H, L, L), "
              "sequence_length and proj_dim are unused."),
    dict(task=7, name="linformer_classifier_length_plus_one",
         edits=(("LinformerBlock(embed_dim, num_heads, feedforward_dim, sequence_length, proj_dim, activation, "
                 "dropout)",
                 "LinformerBlock(embed_dim, num_heads, feedforward_dim, sequence_length + 1, proj_dim, activation, "
                 "dropout)"),),
         what="The classifier adds 1 for [CLS] to sequence_length, which already counts it, so E and F expect one "
              "position too many and the forward pass fails."),
    dict(task=7, name="linformer_classifier_keeps_full_blocks",
         edits=((_LINFORMER_ENCODER, ""),),
         what="LinformerForSequenceClassification keeps the parent's EncoderBlocks instead of LinformerBlocks "
              "(full attention; sequence_length and proj_dim unused)."),
]


LIST = HeldOut("transformer")


# What this list found when it was written (issue 43), still open: mistakes its checks pass, and mistakes the
# grade pays (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
