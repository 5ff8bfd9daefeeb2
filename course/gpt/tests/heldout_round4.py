"""The fourth held-out list of student mistakes for the gpt assignment (Tasks 1-6 and 8), written without the checks.

Written from the notebooks (student and solutions) and reference answers only (not from checkers/gpt, the planted
mistakes or the other tests; heldout_round2.py, heldout_round3.py and unnamed_mistakes.py were read for their names and
`what` lines only, so that no mistake here repeats one there). Each mistake is a list of edits (old text, new text) of
the reference answer source, applied in order as course.mutant.Mutant applies a planted mistake; each old text occurs
exactly once where it is applied. `what` says what is wrong, in the words a check that names the mistake would need.
"""

from tools.heldout import HeldOut

from .heldout_round2 import trained_model  # Task 8's cell passes the notebook's model: built as round 2 builds it


_TOP_K = """\
        kth_largest = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth_largest, float("-inf"))  # (B, V): ties with the k-th stay
"""
_FIRST_K = """\
        logits[:, top_k:] = float("-inf")  # (B, V): keep the top k
"""

MISTAKES = [
    # ---- Task 1: RotaryEmbedding ----
    dict(task=1, name="rope_slice_end_without_offset",
         edits=(("cos = self.cos[offset:offset + seq_len]", "cos = self.cos[offset:seq_len]"),
                ("sin = self.sin[offset:offset + seq_len]", "sin = self.sin[offset:seq_len]")),
         what="The tables are sliced [offset:seq_len] instead of [offset:offset + seq_len]: right at offset 0, but "
              "any offset gives L - offset rows (or none) for L positions: a shape error, or, when one row is left, "
              "that one angle broadcast to every position."),
    dict(task=1, name="rope_theta_over_max_len",
         edits=(("theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)",
                 "theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / max_len)"),),
         what="The exponent 2i is divided by max_len instead of head_dim: theta_i = base ** (-2i / max_len), so the "
              "frequencies depend on the table's length and barely fall from pair to pair."),

    # ---- Task 2: CausalSelfAttention ----
    dict(task=2, name="attn_head_dim_true_division",
         edits=(("self.num_heads, self.head_dim = num_heads, embed_dim // num_heads",
                 "self.num_heads, self.head_dim = num_heads, embed_dim / num_heads"),),
         what="head_dim is embed_dim / num_heads, a float, instead of the integer embed_dim // num_heads, so "
              "viewing the projections as (B, L, H, head_dim) raises a TypeError."),

    # ---- Task 3: the (keys, values) cache ----
    dict(task=3, name="cache_mask_diagonal_from_new_length",
         edits=((".tril(past)", ".tril(seq_len)"),),
         what="The mask's diagonal offset is the number of new tokens L instead of L_past: without a cache nothing is "
              "masked (each token sees the future), and with a cache a new token sees L keys past its own position "
              "instead of exactly the cached prefix and itself."),
    dict(task=3, name="cache_past_from_len",
         edits=(("past = 0 if cache is None else cache[0].size(2)", "past = 0 if cache is None else len(cache[0])"),),
         what="L_past is len(cache[0]), the batch size B of the cached keys (B, H, L_past, head_dim), instead of "
              "their size(2): the new tokens are rotated from position B and the mask is built for B cached "
              "positions, right only when B == L_past."),

    # ---- Task 4: GPTBlock ----
    dict(task=4, name="block_attention_arguments_swapped",
         edits=(("self.attention = CausalSelfAttention(embed_dim, num_heads, max_len)",
                 "self.attention = CausalSelfAttention(embed_dim, max_len, num_heads)"),),
         what="num_heads and max_len are passed to CausalSelfAttention in the wrong order: the attention gets "
              "max_len heads (head_dim = D // max_len, often 0) and RoPE tables of only num_heads positions."),

    # ---- Task 5: GPT ----
    dict(task=5, name="gpt_blocks_not_chained",
         edits=(("x, block_cache = block(x, cache=None if cache is None else cache[index])",
                 "hidden, block_cache = block(x, cache=None if cache is None else cache[index])"),
                ("return self.lm_head(self.final_norm(x)), new_cache", "return self.lm_head(self.final_norm(hidden)), "
                 "new_cache")),
         what="Every block reads the token embeddings x instead of the previous block's output, and the head reads "
              "the last block's output: only the last block counts, the others are computed and thrown away."),

    # ---- Task 6: sample_next_token ----
    dict(task=6, name="sample_topk_threshold_without_keepdim",
         edits=(("kth_largest = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)",
                 "kth_largest = logits.topk(top_k, dim=-1).values[:, -1]  # (B,)"),),
         what="The k-th largest logits are taken as values[:, -1], shape (B,), instead of values[:, -1:], (B, 1): "
              "comparing them with the (B, V) logits broadcasts along the vocabulary, a shape error unless B is 1 "
              "(or compares token v with row v's threshold when B == V)."),
    dict(task=6, name="sample_topk_first_k_ids",
         edits=((_TOP_K, _FIRST_K),),
         what="Top-k keeps the first k token ids (logits[:, top_k:] = -inf) instead of the k tokens with the largest "
              "logits: the ids are not sorted by logit."),

    # ---- Task 8: generate ----
    dict(task=8, name="generate_sampling_arguments_swapped",
         edits=(("sample_next_token(logits[:, -1], temperature, top_k, generator)",
                 "sample_next_token(logits[:, -1], top_k, temperature, generator)"),),
         what="temperature and top_k are passed to sample_next_token in the wrong order, so top_k is used as the "
              "temperature and the temperature as top_k (with top_k=None, the logits are divided by None: a "
              "TypeError)."),
]


LIST = HeldOut("gpt", trained_model)


# What this list found when it was written, still open: mistakes its checks pass, and mistakes the grade pays
# (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
