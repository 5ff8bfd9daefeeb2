"""The second held-out list of student mistakes for the seq2seq assignment (Tasks 1-6).

Written from the solutions notebook's task text and reference answers only, without reading the checks (not
checkers/seq2seq, the planted mistakes in course/seq2seq/mistakes.py, the fixtures or the other tests), so that it
measures whether the checks name mistakes nobody planted. Each mistake is a list of edits (old text, new text) of
the reference answer source, applied in order as course.mutant.Mutant applies a planted mistake; each old text
occurs exactly once where it is applied, and only answer code is edited (never the given attention, positional
encoding or encoder block). `what` says what is wrong, in the words a check that names the mistake would need.
None repeats a mistake of course/seq2seq/tests/unnamed_mistakes.py.
"""
from tools.heldout import HeldOut


# ---- pieces of the reference quoted whole where a line alone is not unique ----
_NORMALISE = "return centered / torch.sqrt(var + self.eps) * self.weight + self.bias"
_SPLIT_QUERY = "query = self.q_proj(x).view(batch_size, query_len, self.num_heads, self.head_dim).transpose(1, 2)"
_SPLIT_KEY = "key = self.k_proj(context).view(batch_size, key_len, self.num_heads, self.head_dim).transpose(1, 2)"
_SPLIT_VALUE = "value = self.v_proj(context).view(batch_size, key_len, self.num_heads, self.head_dim).transpose(1, 2)"
_DECODER_SUBLAYERS = """\
        x = self.norm1(x + self.dropout(attended))
        attended, cross_weights = self.cross_attention(
            x, context=memory, mask=memory_mask, return_attention=True)  # (B, T, D), (B, H, T, S)
        x = self.norm2(x + self.dropout(attended))
        x = self.norm3(x + self.dropout(self.feedforward(x)))
"""
_DECODER_FEEDFORWARD = """\
        self.cross_attention = MultiheadAttention(embed_dim, num_heads)
        self.feedforward = nn.Sequential(
            nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))
"""
_ENCODE_MASK = """\
        mask = padding_mask(source, self.pad_id)  # (B, 1, 1, S)
        x = self.positional_encoding(self.embedding(source) * math.sqrt(self.embed_dim))  # (B, S, D)
"""


def _interleaved(split):
    """A head split that views the features as (head_dim, H): head h takes features h, h + H, ..."""
    return split.replace("self.num_heads, self.head_dim).transpose(1, 2)",
                         "self.head_dim, self.num_heads).permute(0, 3, 1, 2)")


MISTAKES = [
    # ---- Task 1: LayerNorm ----
    dict(task=1, name="layernorm_divides_by_variance",
         edits=((_NORMALISE, "return centered / (var + self.eps) * self.weight + self.bias"),),
         what="The centred input is divided by the variance sigma^2 + eps instead of its square root."),
    dict(task=1, name="layernorm_output_not_centred",
         edits=((_NORMALISE, "return x / torch.sqrt(var + self.eps) * self.weight + self.bias"),),
         what="The output divides x itself, not x - mean, by the standard deviation: the mean is never "
              "subtracted."),
    dict(task=1, name="layernorm_affine_before_normalising",
         edits=((_NORMALISE, "return (centered * self.weight + self.bias) / torch.sqrt(var + self.eps)"),),
         what="gamma and beta are applied before the division by sqrt(var + eps), so the shift beta is scaled "
              "too."),
    dict(task=1, name="layernorm_mean_over_all_elements",
         edits=(("mean = x.mean(dim=-1, keepdim=True)", "mean = x.mean()"),),
         what="The mean is taken over the whole tensor instead of each token's D features."),
    dict(task=1, name="layernorm_mean_without_keepdim",
         edits=(("mean = x.mean(dim=-1, keepdim=True)", "mean = x.mean(dim=-1)"),),
         what="The mean is taken without keepdim=True, so x - mean broadcasts along the wrong axis (a shape "
              "error, or a silently wrong result when the last two axes have the same size)."),
    dict(task=1, name="layernorm_second_moment_as_variance",
         edits=(("var = (centered * centered).mean(dim=-1, keepdim=True)",
                 "var = (x * x).mean(dim=-1, keepdim=True)"),),
         what="The 'variance' is the mean of x^2 instead of the mean of (x - mean)^2."),
    dict(task=1, name="layernorm_init_swapped",
         edits=(("self.weight = nn.Parameter(torch.ones(embed_dim))  # (D,)\n"
                 "        self.bias = nn.Parameter(torch.zeros(embed_dim))",
                 "self.weight = nn.Parameter(torch.zeros(embed_dim))  # (D,)\n"
                 "        self.bias = nn.Parameter(torch.ones(embed_dim))"),),
         what="gamma (weight) starts at zeros and beta (bias) at ones, so a fresh layer outputs all ones."),
    dict(task=1, name="layernorm_weight_not_parameter",
         edits=(("self.weight = nn.Parameter(torch.ones(embed_dim))", "self.weight = torch.ones(embed_dim)"),),
         what="gamma is a plain tensor, not an nn.Parameter: it is not trained, not in the state_dict (loaded "
              "weights are ignored) and does not move with .to()."),
    dict(task=1, name="layernorm_centres_input_in_place",
         edits=(("centered = x - mean  # (..., D)", "centered = x.sub_(mean)  # (..., D)"),),
         what="The input is centred in place with x.sub_(mean), which changes the caller's tensor (and raises "
              "on a leaf that requires grad)."),

    # ---- Task 2: causal_mask and padding_mask ----
    dict(task=2, name="causal_mask_float_dtype",
         edits=(("torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()",
                 "torch.ones(seq_len, seq_len, device=device).tril()"),),
         what="The causal mask is float (1.0 / 0.0) instead of bool."),
    dict(task=2, name="causal_mask_sees_next_position",
         edits=((".tril()  # (L, L)", ".tril(1)  # (L, L)"),),
         what="tril(1) also allows the key just after the query (j <= i + 1): each position sees one future "
              "token."),
    dict(task=2, name="causal_mask_extra_leading_axis",
         edits=((".tril()  # (L, L)", ".tril()[None]  # (L, L)"),),
         what="The causal mask has shape (1, L, L) instead of (L, L)."),
    dict(task=2, name="padding_mask_token_ids",
         edits=(("return (tokens != pad_id)[:, None, None, :]", "return tokens[:, None, None, :]"),),
         what="The padding mask is the token ids themselves (nonzero = attend), which is neither bool nor right "
              "when pad_id is not 0."),
    dict(task=2, name="padding_mask_axes_in_front",
         edits=(("(tokens != pad_id)[:, None, None, :]", "(tokens != pad_id)[None, None]"),),
         what="The padding mask has shape (1, 1, B, L) instead of (B, 1, 1, L): the batch sits on the query axis."),
    dict(task=2, name="padding_mask_greater_than_pad",
         edits=(("tokens != pad_id", "tokens > pad_id"),),
         what="The padding mask is tokens > pad_id, which also hides every token whose id is below pad_id."),

    # ---- Task 3: MultiheadAttention with a context ----
    dict(task=3, name="mha_keys_from_x",
         edits=(("key = self.k_proj(context)", "key = self.k_proj(x)"),),
         what="The keys are projected from x instead of from the context (the values are right): cross-attention "
              "fails when L_q != L_k and is wrong when they are equal."),
    dict(task=3, name="mha_context_or_x",
         edits=(("context = x if context is None else context", "context = context or x"),),
         what="context = context or x takes the truth value of a tensor, which raises whenever a context is "
              "given."),
    dict(task=3, name="mha_keys_split_with_query_length",
         edits=(("key_len = context.size(1)", "key_len = x.size(1)"),),
         what="The keys and values are split with the query length L_q, which fails when the context length "
              "differs."),
    dict(task=3, name="mha_key_value_projections_swapped",
         edits=(("key = self.k_proj(context)", "key = self.v_proj(context)"),
                ("value = self.v_proj(context)", "value = self.k_proj(context)")),
         what="The keys are projected with v_proj and the values with k_proj."),
    dict(task=3, name="mha_queries_scaled_twice",
         edits=((".transpose(1, 2)  # (B, H, L_q, head_dim)", ".transpose(1, 2) / math.sqrt(self.head_dim)"),),
         what="The queries are divided by sqrt(head_dim) before scaled_softmax_attention, which scales again: "
              "the scores are divided by head_dim."),
    dict(task=3, name="mha_heads_interleaved",
         edits=((_SPLIT_QUERY, _interleaved(_SPLIT_QUERY)), (_SPLIT_KEY, _interleaved(_SPLIT_KEY)),
                (_SPLIT_VALUE, _interleaved(_SPLIT_VALUE))),
         what="The heads are split as (head_dim, H) instead of (H, head_dim), so head h takes the interleaved "
              "features h, h + H, ... instead of a contiguous slice."),
    dict(task=3, name="mha_always_returns_weights",
         edits=(("return (outputs, attention) if return_attention else outputs", "return outputs, attention"),),
         what="forward returns (output, attention) even when return_attention is False."),

    # ---- Task 4: DecoderBlock ----
    dict(task=4, name="decoder_self_attention_unmasked",
         edits=(("self.self_attention(x, mask=self_mask, return_attention=True)",
                 "self.self_attention(x, return_attention=True)"),),
         what="self_mask is not passed to the self-attention, so each target position sees the future."),
    dict(task=4, name="decoder_cross_attention_unmasked",
         edits=(("x, context=memory, mask=memory_mask, return_attention=True)",
                 "x, context=memory, return_attention=True)"),),
         what="memory_mask is not passed to the cross-attention, so the source's PAD positions are attended."),
    dict(task=4, name="decoder_norm2_norm3_swapped",
         edits=(("x = self.norm2(x + self.dropout(attended))\n        x = self.norm3(",
                 "x = self.norm3(x + self.dropout(attended))\n        x = self.norm2("),),
         what="norm3 follows the cross-attention and norm2 the feed-forward network, instead of the other way."),
    dict(task=4, name="decoder_cross_output_discarded",
         edits=(("x = self.norm2(x + self.dropout(attended))", "crossed = self.norm2(x + self.dropout(attended))"),),
         what="The cross-attention sub-layer's output is assigned to another name and never used: the "
              "feed-forward sub-layer reads the self-attention output, so the memory is ignored."),
    dict(task=4, name="decoder_dropout_on_residual_sum",
         edits=((_DECODER_SUBLAYERS,
                 _DECODER_SUBLAYERS.replace("(x + self.dropout(attended))", "(self.dropout(x + attended))")
                 .replace("(x + self.dropout(self.feedforward(x)))", "(self.dropout(x + self.feedforward(x)))")),),
         what="Dropout is applied to the residual sum x + sublayer(x) instead of to the sub-layer output alone "
              "(differs in training mode)."),
    dict(task=4, name="decoder_activation_ignored",
         edits=((_DECODER_FEEDFORWARD, _DECODER_FEEDFORWARD.replace("activation()", "nn.ReLU()")),),
         what="The feed-forward network always uses nn.ReLU(), ignoring the activation argument."),
    dict(task=4, name="decoder_returns_only_cross_weights",
         edits=(("return (x, self_weights, cross_weights) if return_attention else x",
                 "return (x, cross_weights) if return_attention else x"),),
         what="With return_attention the block returns (x, cross_weights), leaving out the self-attention "
              "weights."),

    # ---- Task 5: Seq2SeqTransformer ----
    dict(task=5, name="model_embedding_divided_by_sqrt_d",
         edits=(("self.embedding(source) * math.sqrt(self.embed_dim)",
                 "self.embedding(source) / math.sqrt(self.embed_dim)"),
                ("self.embedding(target_input) * math.sqrt(self.embed_dim)",
                 "self.embedding(target_input) / math.sqrt(self.embed_dim)")),
         what="The token embeddings are divided by sqrt(embed_dim) instead of multiplied by it."),
    dict(task=5, name="model_causal_mask_sized_by_source",
         edits=(("causal_mask(target_input.size(1), device=target_input.device)",
                 "causal_mask(source.size(1), device=source.device)"),),
         what="The decoder's causal mask is sized by the source length S instead of the target length T, a "
              "shape error when S != T."),
    dict(task=5, name="model_encoder_causal_mask",
         edits=((_ENCODE_MASK, _ENCODE_MASK.replace(
             "padding_mask(source, self.pad_id)",
             "padding_mask(source, self.pad_id) & causal_mask(source.size(1), device=source.device)")),),
         what="The encoder's self-attention is also causal, so each source position only sees the ones before it."),
    dict(task=5, name="model_pad_id_hardcoded_zero",
         edits=((_ENCODE_MASK, _ENCODE_MASK.replace("padding_mask(source, self.pad_id)", "padding_mask(source, 0)")),
                ("memory_mask = padding_mask(source, self.pad_id)", "memory_mask = padding_mask(source, 0)")),
         what="The padding masks compare the source with 0 instead of the model's pad_id."),
    dict(task=5, name="model_encoder_attention_not_collected",
         edits=(('memory = self.encode(source, attention["encoder"])', "memory = self.encode(source)"),),
         what="forward_attention does not pass its encoder list to encode, so attention['encoder'] stays empty."),
    dict(task=5, name="model_separate_target_embedding",
         edits=(("self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)",
                 "self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)\n"
                 "        self.target_embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)"),
                ("self.embedding(target_input)", "self.target_embedding(target_input)")),
         what="The target has its own embedding table instead of sharing the source's one embedding."),
    dict(task=5, name="model_decoder_depth_from_encoder_layers",
         edits=(("DecoderBlock(*sizes) for _ in range(num_decoder_layers)",
                 "DecoderBlock(*sizes) for _ in range(num_encoder_layers)"),),
         what="The decoder gets num_encoder_layers blocks instead of num_decoder_layers."),
    dict(task=5, name="model_decoder_blocks_not_chained",
         edits=(("x, self_weights, cross_weights = block(x, memory, self_mask, memory_mask, return_attention=True)",
                 "hidden, self_weights, cross_weights = block(x, memory, self_mask, memory_mask, "
                 "return_attention=True)"),
                ("return self.output(x)  # (B, T, vocab_size)", "return self.output(hidden)  # (B, T, vocab_size)")),
         what="Every decoder block reads the embedded target instead of the previous block's output, so only "
              "the last block counts."),

    # ---- Task 6: greedy_decode ----
    dict(task=6, name="greedy_never_stops_early",
         edits=(("                if finished.all():\n                    break\n", ""),),
         what="The loop never stops when every sequence is finished: it always generates max_len tokens, the "
              "last columns all PAD."),
    dict(task=6, name="greedy_one_token_too_many",
         edits=(("for _ in range(max_len):", "for _ in range(max_len + 1):"),),
         what="The loop runs max_len + 1 steps (off by one), so up to max_len + 1 tokens are returned."),
    dict(task=6, name="greedy_finished_not_accumulated",
         edits=(("finished |= next_token == eos_id", "finished = next_token == eos_id"),),
         what="finished is overwritten with this step's EOS test instead of accumulated, so a sequence resumes "
              "generating after the PAD that follows its EOS."),
    dict(task=6, name="greedy_argmax_keepdim",
         edits=((".argmax(dim=-1)  # (B,)", ".argmax(dim=-1, keepdim=True)  # (B,)"),),
         what="argmax with keepdim=True gives (B, 1), so the PAD fill and the concatenation get the wrong shapes."),
    dict(task=6, name="greedy_leaves_train_mode",
         edits=(("model.train(mode_before)", "model.train()"),),
         what="The model is always put in training mode at the end, instead of back into the mode it was in."),
    dict(task=6, name="greedy_fills_with_eos",
         edits=(("next_token.masked_fill(finished, model.pad_id)", "next_token.masked_fill(finished, eos_id)"),),
         what="Finished sequences are filled with eos_id instead of model.pad_id."),
    dict(task=6, name="greedy_batch_from_source_length",
         edits=(("torch.full((source.size(0), 1), bos_id", "torch.full((source.size(1), 1), bos_id"),
                ("finished = torch.zeros(source.size(0)", "finished = torch.zeros(source.size(1)")),
         what="The BOS column and the finished flags are sized by the source length S instead of the batch "
              "size B, a shape error when B != S."),
]


LIST = HeldOut("seq2seq")


# What this list found when it was written (issue 43), still open: mistakes its checks pass, and mistakes the
# grade pays (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
