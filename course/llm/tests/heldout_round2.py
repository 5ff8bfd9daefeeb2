"""The second held-out list of student mistakes for the llm assignment (Tasks 1-6 and 8), written without the checks.

Written from the solutions notebook's task text and reference answers only (not from checkers/llm, the planted
mistakes in course/llm/mistakes.py, the study or the other tests; course/llm/tests/unnamed_mistakes.py was read for
its names and `what` lines only, so that no mistake here repeats one there). Each mistake is a list of edits (old
text, new text) of the reference answer source, applied in order as course.mutant.Mutant applies a planted mistake;
each old text occurs exactly once where it is applied. `what` says what is wrong, in the words a check that names
the mistake would need.
"""
from tools.heldout import HeldOut


_MERGE_WORD = """    merged, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged
"""
_MERGE_IN_PLACE = """    i = 0
    while i + 1 < len(ids):
        if ids[i] == pair[0] and ids[i + 1] == pair[1]:
            ids[i:i + 2] = [new_id]
        i += 1
    return ids
"""
_RMS = "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)"
_GATE = "F.silu(self.gate_proj(x))"
_QUERY = "query = self.rotary(heads(self.q_proj(x), self.num_heads), offset=past)"
_KEY = "key = self.rotary(heads(self.k_proj(x), self.num_kv_heads), offset=past)"
_GROUP = "group = self.num_heads // self.num_kv_heads"
_MASK = "allowed = torch.ones(seq_len, past + seq_len, dtype=torch.bool, device=x.device).tril(past)"
_MERGE_WEIGHT = "merged.weight.copy_(self.base.weight + self.scaling * self.B @ self.A)"

MISTAKES = [
    # ---- Task 1: train_bpe (with merge_word, add_pairs, best_pair) ----
    dict(task=1, name="bpe_new_token_bytes_not_recorded",
         edits=(("        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]\n", ""),),
         what="vocab never records a new token's bytes, so the tie-break raises KeyError as soon as a merged "
              "token is in the best pair."),
    dict(task=1, name="bpe_new_token_bytes_reversed",
         edits=(("vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]",
                 "vocab[new_id] = vocab[pair[1]] + vocab[pair[0]]"),),
         what="A new token's bytes are recorded as vocab[b] + vocab[a] (reversed), so later ties compare the "
              "wrong byte strings."),
    dict(task=1, name="bpe_pair_counted_once_per_word",
         edits=(("for pair in zip(word, word[1:]):", "for pair in set(zip(word, word[1:])):"),),
         what="Each distinct pair is counted once per word (a set of pairs) instead of n_w(a, b) times: aaa "
              "holds (a, a) twice, not once."),
    dict(task=1, name="bpe_count_overwritten",
         edits=(("counts[pair] += weight", "counts[pair] = weight"),),
         what="add_pairs sets counts[pair] = weight instead of adding to it, so a pair's count is the last "
              "word's frequency, not the sum over words."),
    dict(task=1, name="bpe_tie_first_token_only",
         edits=(("return max(tied, key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))",
                 "return max(tied, key=lambda pair: vocab[pair[0]])"),),
         what="Ties compare vocab[a] only: pairs with the same first token are left in the Counter's order "
              "instead of being decided by vocab[b]."),
    dict(task=1, name="bpe_new_pairs_weight_one",
         edits=(("add_pairs(counts, where, new, freqs[index], index)", "add_pairs(counts, where, new, 1, index)"),),
         what="After a merge the word's new pairs are added with weight 1 instead of the word's frequency f_w."),
    dict(task=1, name="bpe_old_pairs_not_subtracted",
         edits=(("add_pairs(counts, where, old, -freqs[index], index)", ""),),
         what="A merged word's old pairs are never subtracted, so the counts only grow: the merged pair stays the "
              "most frequent and is chosen again (where.pop raises KeyError)."),
    dict(task=1, name="bpe_merge_ids_from_257",
         edits=(("for new_id in range(256, vocab_size):", "for new_id in range(257, vocab_size + 1):"),),
         what="Merge k makes id 257 + k instead of 256 + k, so every later merge names its tokens off by one."),
    dict(task=1, name="bpe_merge_first_occurrence_only",
         edits=(("merged.append(new_id)\n            i += 2",
                 "merged.append(new_id)\n            merged.extend(ids[i + 2:])\n            break"),),
         what="merge_word replaces only the first occurrence of the pair in a word, not every occurrence."),
    dict(task=1, name="bpe_merge_word_in_place",
         edits=((_MERGE_WORD, _MERGE_IN_PLACE),),
         what="merge_word edits the given list in place and returns it, so the word's old form (needed to "
              "subtract its pairs) is lost."),
    # ---- Task 2: encode_word and BPETokenizer ----
    dict(task=2, name="encode_one_merge_per_word",
         edits=(("while len(ids) > 1:", "if len(ids) > 1:"),
                ("break  # no learnt pair left in the word", "return ids  # no learnt pair left in the word")),
         what="encode_word applies at most one merge per word (if instead of while), not merges until no learnt "
              "pair is left."),
    dict(task=2, name="tokenizer_vocab_bytes_reversed",
         edits=(("self.vocab[new_id] = self.vocab[a] + self.vocab[b]",
                 "self.vocab[new_id] = self.vocab[b] + self.vocab[a]"),),
         what="The tokenizer's vocab joins a merge's bytes as b + a, so decode swaps the halves of every merged "
              "token."),
    dict(task=2, name="encode_append_not_extend",
         edits=(("ids.extend(self.cache[word])", "ids.append(self.cache[word])"),),
         what="encode appends each word's list of ids (a list of lists) instead of extending one flat list."),
    dict(task=2, name="tokenizer_ranks_from_zero",
         edits=(("self.ranks = {tuple(pair): 256 + k for", "self.ranks = {tuple(pair): k for"),),
         what="ranks maps merge k to k instead of 256 + k, so merged tokens get byte ids and overwrite the "
              "vocab's single bytes."),
    dict(task=2, name="encode_split_on_whitespace",
         edits=(("for word in PRETOKENIZE.findall(text):", "for word in text.split():"),),
         what="encode splits the text with str.split() instead of PRETOKENIZE, so spaces and newlines are lost "
              "and decode(encode(s)) != s."),
    dict(task=2, name="encode_smallest_pair_not_lowest_rank",
         edits=(("pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, math.inf))",
                 "pair = min(zip(ids, ids[1:]))"),),
         what="encode_word takes the pair with the smallest ids instead of the pair with the lowest rank, and "
              "stops as soon as that pair has no merge."),
    dict(task=2, name="encode_no_stop_for_unknown_pair",
         edits=(("        if pair not in ranks:\n            break  # no learnt pair left in the word\n", ""),),
         what="encode_word does not stop when no pair of the word has a merge: ranks[pair] raises KeyError."),
    # ---- Task 3: RMSNorm ----
    dict(task=3, name="rms_mean_absolute_value",
         edits=((_RMS, "rms = x.abs().mean(dim=-1, keepdim=True) + self.eps"),),
         what="The statistic is the mean absolute value instead of the root mean square."),
    dict(task=3, name="rms_multiplied_not_divided",
         edits=(("return x / rms * self.weight", "return x * rms * self.weight"),),
         what="x is multiplied by the root mean square instead of divided by it."),
    dict(task=3, name="rms_no_square_root",
         edits=((_RMS, "rms = x.pow(2).mean(dim=-1, keepdim=True) + self.eps"),),
         what="x is divided by the mean square (no square root), so rows come out with RMS 1 / rms, not 1."),
    dict(task=3, name="rms_weight_two_dimensional",
         edits=(("nn.Parameter(torch.ones(embed_dim))", "nn.Parameter(torch.ones(1, embed_dim))"),),
         what="weight has shape (1, D) instead of (D,), so a 1-D input (D,) comes back as (1, D)."),
    dict(task=3, name="rms_divides_input_in_place",
         edits=(("return x / rms * self.weight", "x /= rms\n        return x * self.weight"),),
         what="x is divided in place (x /= rms), changing the caller's tensor (and failing on a leaf that needs "
              "a gradient)."),
    dict(task=3, name="rms_mean_over_all_elements",
         edits=(("x.pow(2).mean(dim=-1, keepdim=True)", "x.pow(2).mean()"),),
         what="The mean square is taken over every element of x (all rows together) instead of per row."),
    # ---- Task 4: SwiGLU ----
    dict(task=4, name="swiglu_down_proj_transposed",
         edits=(("self.down_proj = nn.Linear(hidden_dim, embed_dim, bias=False)",
                 "self.down_proj = nn.Linear(embed_dim, hidden_dim, bias=False)"),),
         what="down_proj maps embed_dim -> hidden_dim instead of hidden_dim -> embed_dim: fails unless F = D."),
    dict(task=4, name="swiglu_residual_inside",
         edits=(("return self.down_proj(hidden)  # (..., D)", "return x + self.down_proj(hidden)  # (..., D)"),),
         what="SwiGLU adds its input to its output (a residual inside the layer); the block adds the residual."),
    dict(task=4, name="swiglu_relu_gate",
         edits=((_GATE, "F.relu(self.gate_proj(x))"),),
         what="The gate uses ReLU instead of SiLU."),
    dict(task=4, name="swiglu_silu_before_gate_proj",
         edits=((_GATE, "self.gate_proj(F.silu(x))"),),
         what="SiLU is applied to the input x before gate_proj instead of to gate_proj's output."),
    # ---- Task 5: GroupedQueryAttention ----
    dict(task=5, name="gqa_repeat_by_kv_heads",
         edits=((_GROUP, "group = self.num_kv_heads"),),
         what="The key/value heads are repeated num_kv_heads times instead of num_heads / num_kv_heads: right "
              "only when H = H_kv ** 2 or H_kv = 1, shape errors otherwise."),
    dict(task=5, name="gqa_keys_not_rotated",
         edits=((_KEY, "key = heads(self.k_proj(x), self.num_kv_heads)"),),
         what="The keys are not rotated by RoPE (only the queries are), and the cache holds unrotated keys."),
    dict(task=5, name="gqa_cache_keys_rotated_twice",
         edits=((_KEY, "key = heads(self.k_proj(x), self.num_kv_heads)"),
                (_GROUP, "key = self.rotary(key)\n        " + _GROUP)),
         what="The keys are rotated after concatenation, from position 0, so the cached keys (already rotated) "
              "are rotated again at every cached call."),
    dict(task=5, name="gqa_repeat_along_positions",
         edits=(("key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)",
                 "key.repeat_interleave(group, dim=2), value.repeat_interleave(group, dim=2)"),),
         what="The key/value heads are repeated along dim 2 (the positions) instead of dim 1 (the heads)."),
    dict(task=5, name="gqa_no_output_projection",
         edits=(("return self.o_proj(out), (key, value)", "return out, (key, value)"),),
         what="o_proj is created but never applied to the merged heads."),
    dict(task=5, name="gqa_values_from_k_proj",
         edits=(("value = heads(self.v_proj(x), self.num_kv_heads)",
                 "value = heads(self.k_proj(x), self.num_kv_heads)"),),
         what="Copy-paste: the values come from k_proj instead of v_proj."),
    dict(task=5, name="gqa_no_mask_with_cache",
         edits=((_MASK, "allowed = torch.ones(seq_len, past + seq_len, dtype=torch.bool, device=x.device)\n"
                        "        if cache is None:\n            allowed = allowed.tril()"),),
         what="With a cache no causal mask is applied (one new token assumed), so several new tokens at once see "
              "each other's future."),
    dict(task=5, name="gqa_queries_not_offset",
         edits=((_QUERY, "query = self.rotary(heads(self.q_proj(x), self.num_heads))"),),
         what="The queries are rotated from position 0 even with a cache; only the keys get offset=L_past."),
    dict(task=5, name="gqa_ignores_kv_heads",
         edits=(("self.k_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=False)",
                 "self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)"),
                ("self.v_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=False)",
                 "self.v_proj = nn.Linear(embed_dim, embed_dim, bias=False)"),
                ("heads(self.k_proj(x), self.num_kv_heads)", "heads(self.k_proj(x), self.num_heads)"),
                ("heads(self.v_proj(x), self.num_kv_heads)", "heads(self.v_proj(x), self.num_heads)"),
                (_GROUP, "group = 1")),
         what="num_kv_heads is ignored: keys and values get H heads (ordinary multi-head attention), so k_proj, "
              "v_proj and the cache are not shrunk to H_kv heads."),
    # ---- Task 6: tiled_attention ----
    dict(task=6, name="tiled_correction_inverted",
         edits=(("correction = torch.exp(row_max - new_max)", "correction = torch.exp(new_max - row_max)"),),
         what="The correction is exp(m' - m) instead of exp(m - m'): inf before the first block (NaN output) and "
              "growing instead of shrinking afterwards."),
    dict(task=6, name="tiled_scaled_by_head_dim",
         edits=(("/ math.sqrt(head_dim)", "/ head_dim"),),
         what="The scores are divided by head_dim instead of sqrt(head_dim)."),
    dict(task=6, name="tiled_sum_over_queries",
         edits=(("row_sum * correction + probs.sum(dim=-1, keepdim=True)",
                 "row_sum * correction + probs.sum(dim=-2, keepdim=True)"),),
         what="The running sum adds each block's probabilities summed over the queries (dim -2) instead of over "
              "the keys."),
    dict(task=6, name="tiled_probs_block_max",
         edits=(("probs = torch.exp(scores - new_max)",
                 "probs = torch.exp(scores - scores.amax(dim=-1, keepdim=True))"),),
         what="Each block's exponentials subtract the block's own maximum instead of the running maximum m', so "
              "blocks are weighted inconsistently (and a fully masked block gives NaN)."),
    dict(task=6, name="tiled_mask_sees_next",
         edits=(("future = positions[start:end][None, :] > positions[:, None]",
                 "future = positions[start:end][None, :] > positions[:, None] + 1"),),
         what="The causal mask is off by one: each query also sees the next key."),
    dict(task=6, name="tiled_first_block_values",
         edits=(("probs @ value[..., start:end, :]", "probs @ value[..., :end - start, :]"),),
         what="Every block's probabilities multiply the first block's values instead of that block's values."),
    dict(task=6, name="tiled_causal_flag_not_none",
         edits=(("        if causal:\n", "        if causal is not None:\n"),),
         what="The mask is applied when causal is not None, so causal=False still masks the future."),
    dict(task=6, name="tiled_state_default_dtype",
         edits=(('row_max = query.new_full(query.shape[:-1] + (1,), float("-inf"))',
                 'row_max = torch.full(query.shape[:-1] + (1,), float("-inf"))'),
                ("row_sum = query.new_zeros(query.shape[:-1] + (1,))",
                 "row_sum = torch.zeros(query.shape[:-1] + (1,))")),
         what="The running maximum and sum are created in the default dtype on the CPU, not the query's dtype and "
              "device: half-precision (or GPU) inputs fail or change dtype."),
    # ---- Task 8: LoRALinear ----
    dict(task=8, name="lora_forward_drops_bias",
         edits=(("return self.base(x) + self.scaling * update",
                 "return x @ self.base.weight.T + self.scaling * update"),),
         what="forward computes x W^T by hand without the base layer's bias."),
    dict(task=8, name="lora_merge_without_no_grad",
         edits=(("        with torch.no_grad():\n            merged.weight.copy_(", "        merged.weight.copy_("),
                ("            if self.base.bias is not None:\n                merged.bias.copy_(self.base.bias)\n",
                 "        if self.base.bias is not None:\n            merged.bias.copy_(self.base.bias)\n")),
         what="merge copies into the new layer's parameters outside torch.no_grad(), which raises (in-place "
              "operation on a leaf that requires grad)."),
    dict(task=8, name="lora_adapter_frozen_too",
         edits=(("self.scaling = alpha / rank",
                 "self.scaling = alpha / rank\n        for parameter in self.parameters():\n"
                 "            parameter.requires_grad = False"),),
         what="Every parameter of the LoRA layer is frozen, A and B included, so the adapter never trains."),
    dict(task=8, name="lora_update_from_base_output",
         edits=(("update = x @ self.A.T @ self.B.T", "update = self.base(x) @ self.A.T @ self.B.T"),),
         what="The low-rank update is computed from base(x) instead of x: wrong for square layers, a shape error "
              "for others."),
    dict(task=8, name="lora_merge_scales_base_too",
         edits=((_MERGE_WEIGHT, "merged.weight.copy_(self.scaling * (self.base.weight + self.B @ self.A))"),),
         what="merge scales the whole sum, scaling (W + B A), instead of W + scaling B A."),
    dict(task=8, name="lora_B_in_features",
         edits=(("torch.zeros(base.out_features, rank)", "torch.zeros(base.in_features, rank)"),),
         what="B is shaped (in, rank) instead of (out, rank): only square layers work."),
    dict(task=8, name="lora_merge_returns_weight",
         edits=(("        return merged\n        ### END SOLUTION",
                 "        return merged.weight\n        ### END SOLUTION"),),
         what="merge returns the merged weight tensor instead of a new nn.Linear."),
]


LIST = HeldOut("llm")


# What this list found when it was written (issue 43), still open: mistakes its checks pass, and mistakes the
# grade pays (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
