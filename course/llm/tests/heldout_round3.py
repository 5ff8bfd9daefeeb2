"""The third held-out list of student mistakes for the llm assignment (Tasks 1-6 and 8), written without the checks.

Written from the notebooks (student and solutions) and reference answers only (not from checkers/llm, the planted
mistakes, the study or the other tests; heldout_round2.py and unnamed_mistakes.py were read for their format, names
and `what` lines only, so that no mistake here repeats one there). Each mistake is a list of edits (old text, new text)
of the reference answer source, applied in order as course.mutant.Mutant applies a planted mistake; each old text
occurs exactly once where it is applied. `what` says what is wrong, in the words a check that names the mistake would
need.
"""
from tools.heldout import HeldOut


_RMS = "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)"

MISTAKES = [
    # ---- Task 1: train_bpe ----
    dict(task=1, name="bpe_code_points_not_bytes",
         edits=(('Counter(tuple(word.encode("utf-8", errors="surrogatepass")) for word in PRETOKENIZE.findall(text))',
                 "Counter(tuple(ord(c) for c in word) for word in PRETOKENIZE.findall(text))"),),
         what="The words are split into Unicode code points (ord) instead of UTF-8 bytes: right for ASCII only; "
              "'é' becomes the single id 233 instead of bytes 195, 169, and a character above 255 is not a byte id "
              "at all (KeyError in the vocab, or a clash with a merge id)."),
    dict(task=1, name="bpe_old_pairs_subtracted_once",
         edits=(("add_pairs(counts, where, old, -freqs[index], index)", "add_pairs(counts, where, old, -1, index)"),),
         what="When a word changes, its old pairs are taken away once (weight -1) instead of once per occurrence of "
              "the word (-f_w), so the counts of words seen more than once stay too high."),

    # ---- Task 2: BPETokenizer ----
    dict(task=2, name="encode_unknown_pairs_rank_zero",
         edits=(("key=lambda p: ranks.get(p, math.inf)", "key=lambda p: ranks.get(p, 0)"),),
         what="encode_word gives a pair with no merge the rank 0 (the default of ranks.get) instead of infinity, so "
              "any unknown pair in a word is picked as the 'lowest rank' and the word stops merging."),
    dict(task=2, name="tokenizer_vocab_from_pair_ids",
         edits=(("self.vocab[new_id] = self.vocab[a] + self.vocab[b]", "self.vocab[new_id] = bytes([a, b])"),),
         what="A merged token's bytes are bytes([a, b]), the two ids as bytes, instead of vocab[a] + vocab[b]: "
              "right only when both halves are single bytes, a ValueError as soon as a merge uses a merged id."),

    # ---- Task 3: RMSNorm ----
    dict(task=3, name="rms_upcast_not_cast_back",
         edits=((_RMS, "x = x.float()\n        " + _RMS),),
         what="The input is cast to float32 for the statistic and never cast back, so a float64 or half input "
              "gives a float32 output (and float64 loses precision)."),

    # ---- Task 4: SwiGLU ----
    dict(task=4, name="swiglu_sigmoid_gate",
         edits=(("F.silu(self.gate_proj(x))", "torch.sigmoid(self.gate_proj(x))"),),
         what="The gate is sigmoid(gate_proj(x)) (the original GLU) instead of SiLU, x * sigmoid(x)."),

    # ---- Task 5: GroupedQueryAttention ----
    dict(task=5, name="gqa_group_inverted",
         edits=(("group = self.num_heads // self.num_kv_heads", "group = self.num_kv_heads // self.num_heads"),),
         what="The group size is num_kv_heads // num_heads (0 when there are fewer key/value heads) instead of "
              "num_heads // num_kv_heads: a shape error unless num_heads == num_kv_heads."),
    dict(task=5, name="gqa_scaled_by_kv_width",
         edits=(("scores = query @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)",
                 "scores = query @ keys.transpose(-2, -1) / math.sqrt(embed_dim // self.num_kv_heads)"),),
         what="The scores are divided by sqrt(D / num_kv_heads) instead of sqrt(head_dim) = sqrt(D / num_heads): "
              "right only when num_kv_heads == num_heads."),

    # ---- Task 6: tiled_attention ----
    dict(task=6, name="tiled_scaled_by_block_length",
         edits=(("/ math.sqrt(head_dim)", "/ math.sqrt(end - start)"),),
         what="Each block's scores are divided by the square root of the block's length instead of sqrt(head_dim) "
              "(and the shorter last block gets another scale)."),

    # ---- Task 8: LoRALinear ----
    dict(task=8, name="lora_merge_linear_sizes_swapped",
         edits=(("merged = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None)",
                 "merged = nn.Linear(self.base.out_features, self.base.in_features, "
                 "bias=self.base.bias is not None)"),),
         what="merge builds nn.Linear(out_features, in_features), the weight's (out, in) shape read as the "
              "constructor's order: right for a square layer only, a shape error otherwise."),
]


LIST = HeldOut("llm")


# What this list found when it was written, still open: mistakes its checks pass, and mistakes the grade pays
# (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
