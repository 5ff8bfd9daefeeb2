"""The fourth held-out list of student mistakes for the llm assignment (Tasks 1-6 and 8), written without the checks.

Written from the notebooks (student and solutions) and reference answers only (not from checkers/llm, the planted
mistakes, the study or the other tests; heldout_round2.py, heldout_round3.py and unnamed_mistakes.py were read for
their names and `what` lines only, so that no mistake here repeats one there). Each mistake is a list of edits (old
text, new text) of the reference answer source, applied in order as course.mutant.Mutant applies a planted mistake;
each old text occurs exactly once where it is applied. `what` says what is wrong, in the words a check that names the
mistake would need.
"""
from tools.heldout import HeldOut


_RUNNING_UPDATE = """\
        row_sum = row_sum * correction + probs.sum(dim=-1, keepdim=True)  # (B, H, L, 1)
        out = out * correction + probs @ value[..., start:end, :]  # (B, H, L, head_dim)"""
_RUNNING_UPDATE_LATE_CORRECTION = """\
        row_sum = (row_sum + probs.sum(dim=-1, keepdim=True)) * correction  # (B, H, L, 1)
        out = (out + probs @ value[..., start:end, :]) * correction  # (B, H, L, head_dim)"""

MISTAKES = [
    # ---- Task 1: train_bpe ----
    dict(task=1, name="bpe_stops_at_count_one",
         edits=(("        if not counts:\n            break",
                 "        if not counts or max(counts.values()) < 2:\n            break"),),
         what="Training stops when the most frequent pair occurs only once, although such pairs are still left to "
              "merge: a small text gets fewer than vocab_size - 256 merges."),
    dict(task=1, name="bpe_vocab_size_as_merge_count",
         edits=(("for new_id in range(256, vocab_size):", "for new_id in range(256, 256 + vocab_size):"),),
         what="vocab_size is read as the number of merges: up to vocab_size merges are learnt instead of "
              "vocab_size - 256, so the vocabulary grows to 256 + vocab_size tokens."),

    # ---- Task 2: BPETokenizer ----
    dict(task=2, name="encode_loop_on_nonempty_word",
         edits=(("while len(ids) > 1:", "while len(ids) > 0:"),),
         what="encode_word's loop runs while the word has any id (> 0 instead of > 1): a word of one token has no "
              "pairs, so min() of an empty sequence raises ValueError (a one-byte word such as '.' or a word merged "
              "down to one token)."),
    dict(task=2, name="decode_ids_as_bytes",
         edits=(('data = b"".join(self.vocab[i] for i in ids)', "data = bytes(ids)"),),
         what="decode turns the ids themselves into bytes instead of joining vocab[i] for each id: right for the 256 "
              "byte tokens, but any merged token (id >= 256) raises ValueError."),

    # ---- Task 3: RMSNorm ----
    dict(task=3, name="rms_weight_not_applied",
         edits=(("return x / rms * self.weight  # (..., D)", "return x / rms  # (..., D)"),),
         what="forward never multiplies by self.weight: right while the weight is all ones, but a trained (or "
              "loaded) weight has no effect and receives no gradient."),

    # ---- Task 4: SwiGLU ----
    dict(task=4, name="swiglu_silu_on_both",
         edits=(("hidden = F.silu(self.gate_proj(x)) * self.up_proj(x)",
                 "hidden = F.silu(self.gate_proj(x)) * F.silu(self.up_proj(x))"),),
         what="SiLU is applied to the up projection as well as to the gate: silu(gate(x)) * silu(up(x)) instead of "
              "silu(gate(x)) * up(x)."),

    # ---- Task 5: GroupedQueryAttention ----
    dict(task=5, name="gqa_group_true_division",
         edits=(("group = self.num_heads // self.num_kv_heads", "group = self.num_heads / self.num_kv_heads"),),
         what="The group size is num_heads / num_kv_heads, a float, so repeat_interleave raises a TypeError (it "
              "needs an integer number of repeats)."),
    dict(task=5, name="gqa_keys_not_repeated",
         edits=(("keys, values = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)",
                 "keys, values = key, value.repeat_interleave(group, dim=1)"),),
         what="Only the values are repeated to num_heads heads; the keys keep num_kv_heads heads, which broadcasts "
              "only when num_kv_heads is 1 (or equals num_heads) and is a shape error otherwise."),

    # ---- Task 6: tiled_attention ----
    dict(task=6, name="tiled_correction_after_adding",
         edits=((_RUNNING_UPDATE, _RUNNING_UPDATE_LATE_CORRECTION),),
         what="The correction exp(m - m') multiplies the running sum and output after the new block is added, so "
              "the new block is rescaled too: the first block is multiplied by exp(-inf) = 0 and lost, so a row that "
              "sees only the first block comes out 0 / 0 (NaN), and later blocks are shrunk whenever the maximum "
              "grows."),

    # ---- Task 8: LoRALinear ----
    dict(task=8, name="lora_merge_bias_for_biasless_base",
         edits=(("merged = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None)",
                 "merged = nn.Linear(self.base.in_features, self.base.out_features)"),),
         what="merge always creates the new nn.Linear with a bias: for a base layer without bias the merged layer "
              "keeps nn.Linear's random initial bias, so its outputs differ from the LoRA layer's."),
]


LIST = HeldOut("llm")


# What this list found when it was written, still open: mistakes its checks pass, and mistakes the grade pays
# (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
