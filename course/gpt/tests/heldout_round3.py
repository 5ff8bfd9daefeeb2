"""The third held-out list of student mistakes for the gpt assignment (Tasks 1-6 and 8), written without the checks.

Written from the notebooks (student and solutions) and reference answers only (not from checkers/gpt, the planted
mistakes or the other tests; heldout_round2.py and unnamed_mistakes.py were read for their format and names only, so
that no mistake here repeats one there). Each mistake is a list of edits (old text, new text) of the reference answer
source, applied in order as course.mutant.Mutant applies a planted mistake; each old text occurs exactly once where
it is applied. `what` says what is wrong, in the words a check that names the mistake would need.
"""

from tools.heldout import HeldOut

from .heldout_round2 import trained_model  # Task 8's cell passes the notebook's model: built as round 2 builds it


_STACK = "rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)"
_RETURNS = "return (out, (key, value), attention) if return_attention else (out, (key, value))"
_GREEDY_THEN_DIVIDE = """\
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)  # (B, 1)
    logits = logits / temperature  # (B, V): before the softmax, so it sharpens or flattens the distribution
"""

MISTAKES = [
    # ---- Task 1: RotaryEmbedding ----
    dict(task=1, name="rope_rotated_halves_concatenated",
         edits=((_STACK, _STACK.replace("torch.stack(", "torch.cat(")),
                ("return rotated.flatten(-2)", "return rotated")),
         what="The rotated pairs are concatenated, all first components then all second ones, instead of put back "
              "in place: feature 2i + 1 of the output is not the partner of feature 2i."),
    dict(task=1, name="rope_length_from_heads_axis",
         edits=(("seq_len = x.size(-2)", "seq_len = x.size(1)"),),
         what="The number of positions is read from x.size(1), the heads axis of (B, H, L, head_dim), instead of "
              "x.size(-2): right only when H == L."),

    # ---- Task 2: CausalSelfAttention ----
    dict(task=2, name="attn_mask_polarity_inverted",
         edits=(('scores.masked_fill(~allowed, float("-inf"))', 'scores.masked_fill(allowed, float("-inf"))'),),
         what="The causal mask is used the wrong way round: the allowed keys (the past and the token itself) are "
              "hidden and the future ones kept, and the last row, with every key hidden, becomes NaN."),
    dict(task=2, name="attn_rotary_sized_by_embed_dim",
         edits=(("self.rotary = RotaryEmbedding(self.head_dim, max_len) if rope else None",
                 "self.rotary = RotaryEmbedding(embed_dim, max_len) if rope else None"),),
         what="RoPE is built for embed_dim features instead of head_dim, so its tables have D / 2 frequencies for "
              "head_dim / 2 pairs: a shape error unless there is one head."),

    # ---- Task 3: the (keys, values) cache ----
    dict(task=3, name="cache_returned_values_first",
         edits=((_RETURNS, _RETURNS.replace("(key, value)", "(value, key)")),),
         what="The new cache is returned as (values, keys) while it is read back as (keys, values), so the next "
              "call scores against the cached values and mixes the cached keys."),

    # ---- Task 4: GPTBlock ----
    dict(task=4, name="block_attention_reads_unnormalised_input",
         edits=(("self.attention(self.norm1(x), cache=cache)", "self.attention(x, cache=cache)"),),
         what="The attention reads the raw residual stream x instead of norm1(x): norm1 is created but never used."),

    # ---- Task 5: GPT ----
    dict(task=5, name="gpt_head_copied_not_tied",
         edits=(("self.lm_head.weight = self.token_embedding.weight",
                 "with torch.no_grad():\n            self.lm_head.weight.copy_(self.token_embedding.weight)"),),
         what="The head's weight is copied from the embedding once instead of tied: two separate (V, D) matrices "
              "that start equal and drift apart in training (V * D parameters too many)."),
    dict(task=5, name="gpt_cache_list_overwritten",
         edits=(("new_cache.append(block_cache)", "new_cache = [block_cache]"),),
         what="new_cache is overwritten by each block instead of appended to, so it holds only the last block's "
              "(keys, values) and a cached call with more than one block fails or uses the wrong cache."),

    # ---- Task 6: sample_next_token ----
    dict(task=6, name="sample_divides_before_greedy_check",
         edits=((_GREEDY_THEN_DIVIDE,
                 "    logits = logits / temperature\n    if temperature == 0:\n"
                 "        return logits.argmax(dim=-1, keepdim=True)  # (B, 1)\n"),),
         what="The logits are divided by the temperature before the temperature == 0 test, so greedy decoding "
              "takes the argmax of +-inf and NaN (logits / 0) instead of the logits."),

    # ---- Task 8: generate ----
    dict(task=8, name="generate_uncached_feeds_last_token",
         edits=(("model(unseen, cache=cache) if use_cache else model(tokens)",
                 "model(unseen, cache=cache) if use_cache else model(unseen)"),),
         what="Without the cache each step feeds only the newest token (unseen) instead of the whole sequence, so "
              "use_cache=False forgets the prompt and everything before the last token."),
]


LIST = HeldOut("gpt", trained_model)


# What this list found when it was written, still open: mistakes its checks pass, and mistakes the grade pays
# (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
