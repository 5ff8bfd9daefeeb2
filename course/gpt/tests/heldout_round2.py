"""The second held-out list of student mistakes for the gpt assignment (Tasks 1-6 and 8), written without the checks.

Written from the solutions notebook's task text and reference answers only (not from checkers/gpt, the planted
mistakes in course/gpt/mistakes.py or the other tests; course/gpt/tests/unnamed_mistakes.py was read for its names
only, so that no mistake here repeats one there). Each mistake is a list of edits (old text, new text) of the
reference answer source, applied in order as course.mutant.Mutant applies a planted mistake; each old text occurs
exactly once where it is applied. `what` says what is wrong, in the words a check that names the mistake would need.
"""
import torch

from tools.heldout import HeldOut
from course_lib import gpt as gpt_defaults


_THETA = "theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)"
_ROTATE = "query, key = self.rotary(query, offset=past), self.rotary(key, offset=past)"
_MASK = "allowed = torch.ones(seq_len, past + seq_len, dtype=torch.bool, device=x.device).tril(past)"
_SAMPLE = "unseen = sample_next_token(logits[:, -1], temperature, top_k, generator)"
_BLOCKS = """nn.ModuleList([GPTBlock(embed_dim, num_heads, feedforward_dim, max_len, dropout=dropout)
                                     for _ in range(num_layers)])"""

MISTAKES = [
    # ---- Task 1: RotaryEmbedding ----
    dict(task=1, name="rope_theta_positive_exponent",
         edits=((_THETA, _THETA.replace("(-torch", "(torch")),),
         what="theta_i = base ** (+2i / d): the exponent's minus sign is missing, so the frequencies grow with i "
              "instead of falling from 1."),
    dict(task=1, name="rope_theta_odd_exponents",
         edits=(("torch.arange(0, head_dim, 2, dtype=torch.float64)",
                 "torch.arange(1, head_dim, 2, dtype=torch.float64)"),),
         what="The exponents run over 1, 3, 5, ... instead of 0, 2, 4, ...: theta_i = base ** (-(2i + 1) / d), "
              "so pair 0 does not turn at frequency 1."),
    dict(task=1, name="rope_theta_over_half_dim",
         edits=(("/ head_dim)  # (head_dim // 2,)", "/ (head_dim // 2))  # (head_dim // 2,)"),),
         what="arange(0, d, 2) is divided by d / 2 instead of d: theta_i = base ** (-4i / d), frequencies fall "
              "twice as fast."),
    dict(task=1, name="rope_base_ignored",
         edits=((_THETA, _THETA.replace("theta = base **", "theta = 10000.0 **")),),
         what="The base argument is ignored (10000 hard-coded), so RotaryEmbedding(d, base=b) turns at the wrong "
              "frequencies for any other base."),
    dict(task=1, name="rope_cos_sin_tables_swapped",
         edits=(('"cos", angle.cos()', '"cos", angle.sin()'), ('"sin", angle.sin()', '"sin", angle.cos()')),
         what="The cos buffer holds sin(p theta) and the sin buffer cos(p theta): position 0 is no longer the "
              "identity and norms are not kept."),
    dict(task=1, name="rope_halves_not_interleaved",
         edits=(("rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)",
                 "rotated = torch.cat([even * cos - odd * sin, even * sin + odd * cos], dim=-1)"),
                ("return rotated.flatten(-2)", "return rotated")),
         what="The rotated pairs are concatenated as [all first components, all second components] instead of put "
              "back at features 2i and 2i + 1 (the output's features are permuted)."),
    dict(task=1, name="rope_second_component_features_swapped",
         edits=(("even * sin + odd * cos], dim=-1)", "odd * sin + even * cos], dim=-1)"),),
         what="The second feature of each pair is odd * sin + even * cos instead of even * sin + odd * cos: no "
              "rotation (norms change, position 0 is not the identity)."),
    dict(task=1, name="rope_length_from_feature_axis",
         edits=(("        seq_len = x.size(-2)\n", "        seq_len = x.size(-1)\n"),),
         what="L is read from the last axis (head_dim) instead of axis -2, so the tables' slice has head_dim rows "
              "and any L != head_dim fails to broadcast (and the length check tests the wrong number)."),
    dict(task=1, name="rope_length_check_off_by_one",
         edits=(("if offset < 0 or offset + seq_len > self.max_len:",
                 "if offset < 0 or offset + seq_len >= self.max_len:"),),
         what="The length check uses >= instead of >, so offset + L == max_len (the last position) is wrongly "
              "refused with ValueError."),
    dict(task=1, name="rope_tables_not_cast_to_input",
         edits=(("cos = self.cos[offset:offset + seq_len].to(x.dtype)", "cos = self.cos[offset:offset + seq_len]"),
                ("sin = self.sin[offset:offset + seq_len].to(x.dtype)", "sin = self.sin[offset:offset + seq_len]")),
         what="The tables are not cast to x's dtype, so a float16 or bfloat16 input comes back as float32."),
    dict(task=1, name="rope_tables_float64",
         edits=(('"cos", angle.cos().to(torch.get_default_dtype())', '"cos", angle.cos()'),
                ('"sin", angle.sin().to(torch.get_default_dtype())', '"sin", angle.sin()')),
         what="The cos and sin buffers are kept in float64 instead of torch's default dtype."),
    # ---- Task 2: CausalSelfAttention ----
    dict(task=2, name="attn_no_scale",
         edits=(("scores = query @ key.transpose(-2, -1) / math.sqrt(self.head_dim)",
                 "scores = query @ key.transpose(-2, -1)"),),
         what="The scores are not divided by sqrt(head_dim)."),
    dict(task=2, name="attn_scale_embed_dim",
         edits=(("/ math.sqrt(self.head_dim)", "/ math.sqrt(embed_dim)"),),
         what="The scores are divided by sqrt(embed_dim) instead of sqrt(head_dim)."),
    dict(task=2, name="attn_scale_multiplied",
         edits=(("/ math.sqrt(self.head_dim)", "* math.sqrt(self.head_dim)"),),
         what="The scores are multiplied by sqrt(head_dim) instead of divided by it."),
    dict(task=2, name="attn_rope_on_queries_only",
         edits=((_ROTATE, "query = self.rotary(query, offset=past)"),),
         what="Only the queries are rotated; the keys (and so the cache) stay unrotated, so scores depend on the "
              "query's absolute position."),
    dict(task=2, name="attn_keys_from_rotated_queries",
         edits=((_ROTATE, "query, key = self.rotary(query, offset=past), self.rotary(query, offset=past)"),),
         what="Copy-paste: the keys are the rotated queries (k_proj's output is thrown away)."),
    dict(task=2, name="attn_values_from_k_proj",
         edits=(("heads(self.v_proj(x))", "heads(self.k_proj(x))"),),
         what="Copy-paste: the values come from k_proj instead of v_proj (v_proj is never used)."),
    dict(task=2, name="attn_heads_strided_features",
         edits=(("t.view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)",
                 "t.view(batch_size, seq_len, self.head_dim, self.num_heads).permute(0, 3, 1, 2)"),),
         what="The heads are split as (head_dim, H) instead of (H, head_dim): head h gets features h, h + H, ... "
              "instead of a contiguous block, while the merge puts them back as blocks."),
    dict(task=2, name="attn_mask_hides_self",
         edits=((".tril(past)  # (L, L_past + L)", ".tril(past - 1)  # (L, L_past + L)"),),
         what="The causal mask's diagonal is one too low: a token does not see itself, so the first row is all "
              "-inf (NaN)."),
    dict(task=2, name="attn_returned_map_unmasked",
         edits=(("return (out, (key, value), attention) if return_attention",
                 "return (out, (key, value), scores.softmax(dim=-1)) if return_attention"),),
         what="With return_attention the returned map is the softmax of the unmasked scores, so it puts weight on "
              "the future (the output itself is right)."),
    dict(task=2, name="attn_no_output_projection",
         edits=(("        out = self.o_proj(out)  # (B, L, D)\n", ""),),
         what="o_proj is created but never applied: the merged heads are returned without the output projection."),
    dict(task=2, name="attn_rope_flag_ignored",
         edits=(("RotaryEmbedding(self.head_dim, max_len) if rope else None",
                 "RotaryEmbedding(self.head_dim, max_len)"),),
         what="rope=False is ignored: queries and keys are always rotated."),
    dict(task=2, name="attn_rotary_default_max_len",
         edits=(("RotaryEmbedding(self.head_dim, max_len) if rope", "RotaryEmbedding(self.head_dim) if rope"),),
         what="max_len is not passed to RotaryEmbedding, so its tables always cover 2048 positions: longer "
              "sequences fail and lengths beyond the layer's max_len are not refused."),
    dict(task=2, name="attn_projections_without_bias",
         edits=(("self.q_proj = nn.Linear(embed_dim, embed_dim)",
                 "self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)"),
                ("self.k_proj = nn.Linear(embed_dim, embed_dim)",
                 "self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)"),
                ("self.v_proj = nn.Linear(embed_dim, embed_dim)",
                 "self.v_proj = nn.Linear(embed_dim, embed_dim, bias=False)"),
                ("self.o_proj = nn.Linear(embed_dim, embed_dim)",
                 "self.o_proj = nn.Linear(embed_dim, embed_dim, bias=False)")),
         what="The four projections are created with bias=False; the task asks for nn.Linear(embed_dim, embed_dim) "
              "with its bias."),
    # ---- Task 3: the KV cache ----
    dict(task=3, name="cache_positions_shifted_by_one",
         edits=((_ROTATE, _ROTATE.replace("offset=past", "offset=past + 1")),),
         what="The new tokens are rotated from position L_past + 1 instead of L_past, one position too far from "
              "the cached keys (right without a cache, where the shift cancels)."),
    dict(task=3, name="cache_queries_not_offset",
         edits=((_ROTATE, "query, key = self.rotary(query), self.rotary(key, offset=past)"),),
         what="With a cache the keys are rotated from L_past but the queries from position 0."),
    dict(task=3, name="cache_no_mask_with_cache",
         edits=((_MASK, "allowed = torch.ones(seq_len, past + seq_len, dtype=torch.bool, device=x.device)\n"
                        "        if cache is None:\n            allowed = allowed.tril()"),),
         what="With a cache no causal mask is applied (one new token assumed), so several new tokens at once see "
              "each other's future."),
    dict(task=3, name="cache_concat_on_heads_axis",
         edits=(("key = torch.cat([cache[0], key], dim=2)", "key = torch.cat([cache[0], key], dim=1)"),
                ("value = torch.cat([cache[1], value], dim=2)", "value = torch.cat([cache[1], value], dim=1)")),
         what="The cached and new keys and values are concatenated along dim 1 (the heads) instead of dim 2 "
              "(the positions): shape errors."),
    dict(task=3, name="cache_values_not_concatenated",
         edits=(("            value = torch.cat([cache[1], value], dim=2)  # (B, H, L_past + L, head_dim)\n", ""),),
         what="Only the keys are concatenated with the cache; the values keep the new positions only, so the "
              "weights (L_past + L columns) do not match the values."),
    # ---- Task 4: GPTBlock ----
    dict(task=4, name="block_no_attention_residual",
         edits=(("x = x + self.dropout(attended)", "x = self.dropout(attended)"),),
         what="The attention sub-layer has no residual: x is replaced by the attention output instead of added to."),
    dict(task=4, name="block_no_feedforward_residual",
         edits=(("x = x + self.dropout(self.feedforward(self.norm2(x)))",
                 "x = self.dropout(self.feedforward(self.norm2(x)))"),),
         what="The feed-forward sub-layer has no residual: the block returns FFN(LN2(x)) instead of x + FFN(LN2(x))."),
    dict(task=4, name="block_dropout_on_stream",
         edits=(("x = x + self.dropout(attended)", "x = self.dropout(x + attended)"),
                ("x = x + self.dropout(self.feedforward(self.norm2(x)))",
                 "x = self.dropout(x + self.feedforward(self.norm2(x)))")),
         what="Dropout is applied to the residual sum instead of to each sub-layer's output, so training drops "
              "parts of the residual stream itself."),
    dict(task=4, name="block_no_activation",
         edits=(("nn.Linear(embed_dim, feedforward_dim), activation(),", "nn.Linear(embed_dim, feedforward_dim),"),),
         what="The feed-forward network has no activation between its two Linear layers (a purely linear FFN)."),
    dict(task=4, name="block_activation_class_not_called",
         edits=(("nn.Linear(embed_dim, feedforward_dim), activation(),",
                 "nn.Linear(embed_dim, feedforward_dim), activation,"),),
         what="The activation class is put into nn.Sequential without calling it, so building the block raises "
              "TypeError."),
    dict(task=4, name="block_dropout_default_half",
         edits=(("self.dropout = nn.Dropout(dropout)", "self.dropout = nn.Dropout()"),),
         what="nn.Dropout() is created without the dropout argument, so it drops with p = 0.5 in training even "
              "when dropout=0.0."),
    dict(task=4, name="block_feedforward_width_4d",
         edits=(("nn.Linear(embed_dim, feedforward_dim), activation(),\n"
                 "                                         nn.Linear(feedforward_dim, embed_dim))",
                 "nn.Linear(embed_dim, 4 * embed_dim), activation(),\n"
                 "                                         nn.Linear(4 * embed_dim, embed_dim))"),),
         what="The feed-forward hidden width is hard-coded as 4 * embed_dim instead of feedforward_dim."),
    dict(task=4, name="block_returns_given_cache",
         edits=(("return x, new_cache", "return x, cache"),),
         what="The block returns the cache it was given (None without one) instead of the attention's new cache."),
    # ---- Task 5: GPT ----
    dict(task=5, name="gpt_shared_block",
         edits=((_BLOCKS, "nn.ModuleList([GPTBlock(embed_dim, num_heads, feedforward_dim, max_len, "
                          "dropout=dropout)] * num_layers)"),),
         what="[block] * num_layers puts one block in the list num_layers times, so every layer shares weights."),
    dict(task=5, name="gpt_dropout_not_passed",
         edits=(("GPTBlock(embed_dim, num_heads, feedforward_dim, max_len, dropout=dropout)",
                 "GPTBlock(embed_dim, num_heads, feedforward_dim, max_len)"),),
         what="The dropout argument is not passed to the blocks, so the model never drops anything."),
    dict(task=5, name="gpt_logits_last_position_only",
         edits=(("return self.lm_head(self.final_norm(x)), new_cache",
                 "return self.lm_head(self.final_norm(x[:, -1])), new_cache"),),
         what="forward returns the last position's logits (B, V) instead of every position's (B, L, V)."),
    dict(task=5, name="gpt_final_norm_after_every_block",
         edits=(("new_cache.append(block_cache)",
                 "new_cache.append(block_cache)\n            x = self.final_norm(x)"),),
         what="final_norm is applied after every block (normalising the residual stream between blocks) instead "
              "of once before the head."),
    dict(task=5, name="gpt_max_len_not_kept",
         edits=(("self.max_len = max_len\n        self.token_embedding", "self.token_embedding"),),
         what="max_len is not kept as self.max_len, so generate cannot read it (AttributeError)."),
    dict(task=5, name="gpt_softmax_output",
         edits=(("return self.lm_head(self.final_norm(x)), new_cache",
                 "return self.lm_head(self.final_norm(x)).softmax(dim=-1), new_cache"),),
         what="forward returns softmax probabilities instead of logits."),
    dict(task=5, name="gpt_embeddings_normalised",
         edits=(("x = self.token_embedding(tokens)  # (B, L, D)",
                 "x = self.final_norm(self.token_embedding(tokens))"),),
         what="The token embeddings go through the final LayerNorm before the first block (an extra norm on the "
              "embeddings, and final_norm shared between two places)."),
    # ---- Task 6: sample_next_token ----
    dict(task=6, name="sample_topk_threshold_at_max",
         edits=(("kth_largest = logits.topk(top_k, dim=-1).values[:, -1:]",
                 "kth_largest = logits.topk(top_k, dim=-1).values[:, :1]"),),
         what="The top-k threshold is the largest logit (index 0 of topk's values) instead of the k-th, so only "
              "the maximum (and its ties) is ever drawn."),
    dict(task=6, name="sample_topk_strict_threshold",
         edits=(("logits.masked_fill(logits < kth_largest", "logits.masked_fill(logits <= kth_largest"),),
         what="Logits equal to the k-th largest are masked too (<= instead of <): k - 1 tokens are kept, and "
              "top_k=1 leaves no token (NaN probabilities)."),
    dict(task=6, name="sample_greedy_over_batch",
         edits=(("return logits.argmax(dim=-1, keepdim=True)", "return logits.argmax(dim=0, keepdim=True)"),),
         what="Greedy decoding takes the argmax over dim 0 (the batch) instead of the vocabulary: shape (1, V)."),
    dict(task=6, name="sample_softmax_over_batch",
         edits=(("torch.multinomial(torch.softmax(logits, dim=-1)", "torch.multinomial(torch.softmax(logits, dim=0)"),),
         what="The softmax runs over dim 0 (the batch) instead of the vocabulary, so the draws follow the wrong "
              "distribution (for B = 1, uniform over the whole vocabulary)."),
    dict(task=6, name="sample_unnormalised_exp",
         edits=(("torch.multinomial(torch.softmax(logits, dim=-1), 1,", "torch.multinomial(logits.exp(), 1,"),),
         what="The weights are logits.exp() without subtracting the maximum: large logits overflow to inf and "
              "torch.multinomial raises."),
    dict(task=6, name="sample_draw_flat_shape",
         edits=(("1, generator=generator)  # (B, 1)", "1, generator=generator).squeeze(-1)  # (B,)"),),
         what="The sampled tokens are squeezed to shape (B,) instead of (B, 1) (greedy still returns (B, 1))."),
    dict(task=6, name="sample_greedy_returns_max_value",
         edits=(("return logits.argmax(dim=-1, keepdim=True)", "return logits.max(dim=-1, keepdim=True).values"),),
         what="Greedy decoding returns the largest logit's value instead of its index."),
    dict(task=6, name="sample_topk_compared_with_batch",
         edits=(("top_k < logits.size(-1)", "top_k < logits.size(0)"),),
         what="top_k is compared with logits.size(0) (the batch) instead of V, so no filtering happens whenever "
              "top_k >= B."),
    # ---- Task 8: generate ----
    dict(task=8, name="generate_never_eval",
         edits=(("    model.eval()\n", ""),),
         what="The model is never switched to eval mode, so dropout stays active while generating."),
    dict(task=8, name="generate_generator_not_passed",
         edits=((_SAMPLE, "unseen = sample_next_token(logits[:, -1], temperature, top_k)"),),
         what="The generator is not passed to sample_next_token, so seeded generation is not reproducible."),
    dict(task=8, name="generate_one_token_short",
         edits=(("for _ in range(max_new_tokens):", "for _ in range(max_new_tokens - 1):"),),
         what="The loop runs max_new_tokens - 1 times: the result is one token short, (B, P + N - 1)."),
    dict(task=8, name="generate_length_check_ignores_prompt",
         edits=(("if prompt.size(1) + max_new_tokens > model.max_len:", "if max_new_tokens > model.max_len:"),),
         what="The length check compares max_new_tokens alone with max_len, forgetting the prompt's P tokens."),
    dict(task=8, name="generate_returns_new_tokens_only",
         edits=(("        return tokens\n", "        return tokens[:, prompt.size(1):]\n"),),
         what="Only the N new tokens are returned, (B, N), instead of the prompt followed by them, (B, P + N)."),
    dict(task=8, name="generate_always_greedy",
         edits=((_SAMPLE, "unseen = logits[:, -1].argmax(dim=-1, keepdim=True)"),),
         what="Each step takes the argmax instead of calling sample_next_token: temperature, top_k and generator "
              "are ignored."),
    dict(task=8, name="generate_mode_saved_after_eval",
         edits=(("mode_before = model.training\n    model.eval()", "model.eval()\n    mode_before = model.training"),),
         what="The mode is read after model.eval(), so a model in training mode is left in eval mode."),
]


def trained_model(namespace, task):
    """What Task 8's cell passes besides `generate`: the notebook's trained model, here the namespace's own GPT,
    untrained and seeded (as course/gpt/tests/agreement.py builds it)."""
    if task != 8:
        return ()
    torch.manual_seed(0)
    return (namespace["GPT"](**gpt_defaults.MODEL),)


LIST = HeldOut("gpt", trained_model)


# What this list found when it was written (issue 43), still open: mistakes its checks pass, and mistakes the
# grade pays (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
