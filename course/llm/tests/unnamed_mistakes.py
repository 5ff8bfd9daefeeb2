"""Held-out student mistakes for the llm assignment (Tasks 1-6 and 8), written without reading the checks.

Written from the solutions notebook's task text and reference answers only (not from checkers/llm, the planted
mistakes in course/llm/mistakes.py, the study or the other tests). Each mistake is a list of edits (old text, new
text) of the reference answer source, applied in order as course.mutant.Mutant applies a planted mistake; each old
text occurs exactly once where it is applied (test_unnamed_mistakes.py holds that). `what` says what is wrong, in
the words a check that names the mistake would need.
"""
from course.llm import WORK_IN_PROGRESS
from course.mutant import Mutant
from course.reference import load_reference, reference_source

CHECKED = {1: "train_bpe", 2: "BPETokenizer", 3: "RMSNorm", 4: "SwiGLU", 5: "GroupedQueryAttention",
           6: "tiled_attention", 8: "LoRALinear"}  # task -> the object its check is called with

# the incremental update of train_bpe, replaced whole by the full recount the task text forbids
_INCREMENTAL = """        for index in where.pop(pair):
            old, new = words[index], merge_word(words[index], pair, new_id)
            if len(new) == len(old):
                continue  # an earlier merge already took the pair out of this word
            add_pairs(counts, where, old, -freqs[index], index)  # forget the word's old pairs ...
            add_pairs(counts, where, new, freqs[index], index)  # ... and count its new ones
            words[index] = new
"""
_RECOUNT = """        words = [merge_word(word, pair, new_id) for word in words]
        counts, where = Counter(), defaultdict(set)
        for index, word in enumerate(words):
            add_pairs(counts, where, word, freqs[index], index)
"""
_TIES = """    top = max(counts.values())
    tied = [pair for pair, count in counts.items() if count == top]
    return max(tied, key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))
"""
_DECODE = """        try:
            return data.decode("utf-8", errors="surrogatepass")  # the exact inverse of encode
        except UnicodeDecodeError:
            return data.decode("utf-8", errors="replace")  # ids that are not UTF-8, e.g. [255]
"""
_MERGE_BODY = """\
        merged = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None)
        merged = merged.to(self.base.weight)  # the base's dtype and device
        with torch.no_grad():
            merged.weight.copy_(self.base.weight + self.scaling * self.B @ self.A)  # (out, r) @ (r, in) -> (out, in)
            if self.base.bias is not None:
                merged.bias.copy_(self.base.bias)
        return merged
"""

MISTAKES = [
    # ---- Task 1: train_bpe (with merge_word, add_pairs, best_pair) ----
    dict(task=1, name="bpe_tie_smaller_pair",
         edits=(("return max(tied, key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))",
                 "return min(tied, key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))"),),
         what="Ties go to the smaller (vocab[a], vocab[b]) instead of the greater."),
    dict(task=1, name="bpe_tie_by_ids",
         edits=(("return max(tied, key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))", "return max(tied)"),),
         what="Ties are broken by comparing the ids (a, b), not the byte strings they stand for."),
    dict(task=1, name="bpe_tie_first_counted",
         edits=((_TIES, "    return max(counts, key=counts.get)\n"),),
         what="No tie-break: max(counts, key=counts.get) takes whichever tied pair the Counter holds first."),
    dict(task=1, name="bpe_tie_concatenated_bytes",
         edits=(("key=lambda pair: (vocab[pair[0]], vocab[pair[1]])",
                 "key=lambda pair: vocab[pair[0]] + vocab[pair[1]]"),),
         what="Ties compare the concatenated bytes vocab[a] + vocab[b] instead of the tuple (b'a', b'z' vs b'ab', "
              "b'c' order differently)."),
    dict(task=1, name="bpe_merge_no_skip",
         edits=(("            merged.append(new_id)\n            i += 2",
                 "            merged.append(new_id)\n            i += 1"),),
         what="merge_word does not skip past a merged pair (i += 1), so overlapping pairs duplicate bytes: "
              "(a, a) in aaa gives [aa, aa, a]."),
    dict(task=1, name="bpe_merge_misses_last_pair",
         edits=(("if i + 1 < len(ids) and", "if i < len(ids) - 2 and"),),
         what="merge_word's bound is off by one: a pair in the last two positions of a word is never merged."),
    dict(task=1, name="bpe_frequency_ignored",
         edits=(("freqs = list(word_counts.values())", "freqs = [1] * len(word_counts)"),),
         what="Each distinct word counts once: its frequency f_w is not used as the weight of its pairs."),
    dict(task=1, name="bpe_no_pretokenize",
         edits=(('surrogatepass")) for word in PRETOKENIZE.findall(text))', 'surrogatepass")) for word in [text])'),),
         what="The text is not pre-tokenized: it is one word, so merges cross word boundaries."),
    dict(task=1, name="bpe_split_on_whitespace",
         edits=(('surrogatepass")) for word in PRETOKENIZE.findall(text))',
                 'surrogatepass")) for word in text.split())'),),
         what="Words are text.split() instead of PRETOKENIZE.findall(text): the spaces are lost (no ' the' token)."),
    dict(task=1, name="bpe_strict_utf8",
         edits=(('tuple(word.encode("utf-8", errors="surrogatepass"))', 'tuple(word.encode("utf-8"))'),),
         what="The words are encoded without errors='surrogatepass', so a lone surrogate raises UnicodeEncodeError."),
    dict(task=1, name="bpe_one_merge_too_few",
         edits=(("for new_id in range(256, vocab_size):", "for new_id in range(256, vocab_size - 1):"),),
         what="vocab_size - 257 merges (off by one): the vocabulary ends one token short."),
    dict(task=1, name="bpe_one_merge_too_many",
         edits=(("for new_id in range(256, vocab_size):", "for new_id in range(256, vocab_size + 1):"),),
         what="vocab_size - 255 merges (off by one): the vocabulary has one token too many."),
    dict(task=1, name="bpe_keeps_zero_counts",
         edits=(("        counts = +counts  # drop the pairs whose count fell to 0: they no longer occur\n", ""),),
         what="Pairs whose count fell to 0 stay in the Counter, so a finished text keeps 'merging' pairs that no "
              "longer occur instead of stopping early."),
    dict(task=1, name="bpe_word_not_updated",
         edits=(("            words[index] = new\n", ""),),
         what="The merged word is never stored back (words[index] = new missing): later merges see its old form."),
    # GAP, FLAKY (2026-11-27): check_task_1 passed it once at load 1.3 (0.57 s of CPU on its 20,000 characters) and
    # failed it 7 times of 7 at load 4.4-4.7 (0.75-1.16 s); the reference takes ~0.05 s there: the verdict sits at
    # the check's threshold. Not a valid variant (the task text says a full recount fails). The check then takes
    # ~2.5 s of CPU.
    dict(task=1, name="bpe_full_recount",
         edits=((_INCREMENTAL, _RECOUNT),),
         what="Every merge re-merges every word and recounts every pair from scratch (correct merges, but too slow)."),
    dict(task=1, name="bpe_full_recount_all_words",
         edits=(("words = [list(word) for word in word_counts]",
                 'words = [list(word.encode("utf-8", errors="surrogatepass")) for word in PRETOKENIZE.findall(text)]'),
                ("freqs = list(word_counts.values())", "freqs = [1] * len(words)"),
                (_INCREMENTAL, _RECOUNT)),
         what="Every merge re-merges and recounts every word of the text, repeats included (the whole text per "
              "merge: correct merges, far too slow)."),

    # ---- Task 2: encode_word and BPETokenizer ----
    dict(task=2, name="encode_highest_rank_first",
         edits=(("pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, math.inf))",
                 "pair = max(zip(ids, ids[1:]), key=lambda p: ranks.get(p, -1))"),),
         what="encode_word merges the pair learnt last (highest rank) first instead of the lowest rank."),
    dict(task=2, name="encode_leftmost_known_pair",
         edits=(("pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, math.inf))",
                 "pair = next((p for p in zip(ids, ids[1:]) if p in ranks), None)"),),
         what="encode_word merges the leftmost pair that has a merge, not the one with the lowest rank."),
    dict(task=2, name="encode_stops_at_two",
         edits=(("while len(ids) > 1:", "while len(ids) > 2:"),),
         what="encode_word's loop stops at two ids (off by one): a word of two tokens is never merged into one."),
    dict(task=2, name="encode_no_pretokenize",
         edits=(("        for word in PRETOKENIZE.findall(text):\n", "        for word in [text]:\n"),),
         what="encode does not pre-tokenize: the whole text is one word, so merges cross word boundaries."),
    dict(task=2, name="encode_strict_utf8",
         edits=(('list(word.encode("utf-8", errors="surrogatepass"))', 'list(word.encode("utf-8"))'),),
         what="encode_word encodes without surrogatepass, so '\\ud800' raises UnicodeEncodeError."),
    dict(task=2, name="decode_token_by_token",
         edits=((_DECODE, '        return "".join(self.vocab[i].decode("utf-8", errors="replace") for i in ids)\n'),),
         what="decode decodes each token on its own, so a character split across tokens becomes '\\ufffd's."),
    dict(task=2, name="decode_no_fallback",
         edits=((_DECODE, '        return data.decode("utf-8", errors="surrogatepass")\n'),),
         what="decode has no fallback: ids that are not UTF-8 (decode([255])) raise UnicodeDecodeError."),
    dict(task=2, name="decode_replace_only",
         edits=((_DECODE, '        return data.decode("utf-8", errors="replace")\n'),),
         what="decode always uses errors='replace', so a lone surrogate such as '\\ud800' does not round-trip."),
    dict(task=2, name="decode_ignore_fallback",
         edits=(('return data.decode("utf-8", errors="replace")', 'return data.decode("utf-8", errors="ignore")'),),
         what="The fallback drops invalid bytes (errors='ignore'): decode([255]) gives '' instead of '\\ufffd'."),
    dict(task=2, name="tokenizer_ids_from_257",
         edits=(("self.ranks = {tuple(pair): 256 + k for k, pair", "self.ranks = {tuple(pair): 257 + k for k, pair"),),
         what="Merge k is given id 257 + k (off by one) instead of 256 + k."),
    dict(task=2, name="tokenizer_cache_shared",
         edits=(("        self.cache = {}  # word -> ids: real text repeats its words\n", ""),
                ('decode(list of ids) -> str."""\n', 'decode(list of ids) -> str."""\n    cache = {}\n')),
         what="The word cache is a class attribute, shared by every tokenizer: a second tokenizer with other "
              "merges returns the first one's ids."),

    # ---- Task 3: RMSNorm ----
    dict(task=3, name="rms_eps_outside_sqrt",
         edits=(("torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
                 "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + self.eps"),),
         what="eps is added after the square root instead of inside it."),
    dict(task=3, name="rms_mean_subtracted",
         edits=(("torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
                 "torch.sqrt(x.var(dim=-1, keepdim=True, unbiased=False) + self.eps)"),
                ("return x / rms * self.weight", "return (x - x.mean(dim=-1, keepdim=True)) / rms * self.weight")),
         what="The row mean is subtracted (LayerNorm without bias), which RMSNorm does not do."),
    dict(task=3, name="rms_unbiased_std",
         edits=(("torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
                 "torch.sqrt(x.std(dim=-1, keepdim=True) ** 2 + self.eps)"),),
         what="The statistic is the (unbiased, centred) standard deviation instead of the root mean square."),
    dict(task=3, name="rms_sum_not_mean",
         edits=(("x.pow(2).mean(dim=-1, keepdim=True)", "x.pow(2).sum(dim=-1, keepdim=True)"),),
         what="The squares are summed instead of averaged (off by a factor sqrt(D))."),
    dict(task=3, name="rms_wrong_axis",
         edits=(("x.pow(2).mean(dim=-1, keepdim=True)", "x.pow(2).mean(dim=1, keepdim=True)"),),
         what="The mean is taken over dim 1 (right for 2-D input only) instead of the last dimension."),
    dict(task=3, name="rms_no_keepdim",
         edits=(("x.pow(2).mean(dim=-1, keepdim=True)", "x.pow(2).mean(dim=-1)"),),
         what="The mean loses its last axis (no keepdim), so dividing broadcasts along the wrong axis or fails."),
    dict(task=3, name="rms_weight_zeros",
         edits=(("self.weight = nn.Parameter(torch.ones(embed_dim))",
                 "self.weight = nn.Parameter(torch.zeros(embed_dim))"),),
         what="The weight starts at zeros instead of ones: the layer outputs zeros."),
    dict(task=3, name="rms_weight_not_parameter",
         edits=(("self.weight = nn.Parameter(torch.ones(embed_dim))", "self.weight = torch.ones(embed_dim)"),),
         what="weight is a plain tensor, not an nn.Parameter: it is never trained."),
    dict(task=3, name="rms_with_bias",
         edits=(("        self.weight = nn.Parameter(torch.ones(embed_dim))  # (D,)\n",
                 "        self.weight = nn.Parameter(torch.ones(embed_dim))  # (D,)\n"
                 "        self.bias = nn.Parameter(torch.zeros(embed_dim))\n"),
                ("return x / rms * self.weight", "return x / rms * self.weight + self.bias")),
         what="A bias parameter is added (LayerNorm habit); RMSNorm has none."),
    dict(task=3, name="rms_eps_ignored",
         edits=(("        self.eps = eps\n", "        self.eps = 1e-6\n"),),
         what="The eps argument is ignored (1e-6 hard-coded)."),
    dict(task=3, name="rms_eps_default_1e5",
         edits=(("def __init__(self, embed_dim, eps=1e-6):", "def __init__(self, embed_dim, eps=1e-5):"),),
         what="The default eps is 1e-5 (LayerNorm's) instead of the 1e-6 the signature pins."),
    dict(task=3, name="rms_detached_statistic",
         edits=(("rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
                 "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps).detach()"),),
         what="The root mean square is detached, so the input's gradient misses the normalisation's term."),

    dict(task=3, name="rms_weight_inside",
         edits=(("        rms = torch.sqrt(x.pow(2)", "        x = x * self.weight\n        rms = torch.sqrt(x.pow(2)"),
                ("return x / rms * self.weight", "return x / rms")),
         what="The weight multiplies x before the root mean square is taken, so a trained weight is normalised away."),
    # ---- Task 4: SwiGLU ----
    dict(task=4, name="swiglu_activation_on_up",
         edits=(("F.silu(self.gate_proj(x)) * self.up_proj(x)", "self.gate_proj(x) * F.silu(self.up_proj(x))"),),
         what="SiLU goes on up_proj instead of gate_proj."),
    dict(task=4, name="swiglu_gelu",
         edits=(("F.silu(self.gate_proj(x))", "F.gelu(self.gate_proj(x))"),),
         what="The gate uses GELU (GPT's activation) instead of SiLU."),
    dict(task=4, name="swiglu_sigmoid",
         edits=(("F.silu(self.gate_proj(x))", "torch.sigmoid(self.gate_proj(x))"),),
         what="The gate uses a sigmoid (the original GLU) instead of SiLU = z sigmoid(z)."),
    dict(task=4, name="swiglu_silu_after_product",
         edits=(("F.silu(self.gate_proj(x)) * self.up_proj(x)", "F.silu(self.gate_proj(x) * self.up_proj(x))"),),
         what="SiLU is applied to the product gate * up instead of to the gate only."),
    dict(task=4, name="swiglu_sum_not_product",
         edits=(("F.silu(self.gate_proj(x)) * self.up_proj(x)", "F.silu(self.gate_proj(x)) + self.up_proj(x)"),),
         what="The gate is added to the up projection instead of multiplying it."),
    dict(task=4, name="swiglu_gate_used_twice",
         edits=(("F.silu(self.gate_proj(x)) * self.up_proj(x)", "F.silu(self.gate_proj(x)) * self.gate_proj(x)"),),
         what="Copy-paste: gate_proj is used for both factors and up_proj is never used."),
    dict(task=4, name="swiglu_gate_bias",
         edits=(("self.gate_proj = nn.Linear(embed_dim, hidden_dim, bias=False)",
                 "self.gate_proj = nn.Linear(embed_dim, hidden_dim)"),),
         what="gate_proj keeps nn.Linear's default bias; all three projections must be bias=False."),
    dict(task=4, name="swiglu_hidden_fixed",
         edits=(("self.gate_proj = nn.Linear(embed_dim, hidden_dim, bias=False)",
                 "self.gate_proj = nn.Linear(embed_dim, 4 * embed_dim, bias=False)"),
                ("self.up_proj = nn.Linear(embed_dim, hidden_dim, bias=False)",
                 "self.up_proj = nn.Linear(embed_dim, 4 * embed_dim, bias=False)"),
                ("self.down_proj = nn.Linear(hidden_dim, embed_dim, bias=False)",
                 "self.down_proj = nn.Linear(4 * embed_dim, embed_dim, bias=False)")),
         what="The hidden width is hard-coded as 4 * embed_dim instead of the hidden_dim argument."),

    dict(task=4, name="swiglu_silu_on_output",
         edits=(("return self.down_proj(hidden)", "return F.silu(self.down_proj(hidden))"),),
         what="A second SiLU is applied to the output of down_proj."),
    # ---- Task 5: GroupedQueryAttention ----
    dict(task=5, name="gqa_repeat_not_interleave",
         edits=(("keys, values = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)",
                 "keys, values = key.repeat(1, group, 1, 1), value.repeat(1, group, 1, 1)"),),
         what="Key/value heads are tiled with repeat: query head h reads kv head h % H_kv instead of h // group."),
    dict(task=5, name="gqa_no_scale",
         edits=(("scores = query @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)",
                 "scores = query @ keys.transpose(-2, -1)"),),
         what="The scores are not scaled by 1 / sqrt(head_dim)."),
    dict(task=5, name="gqa_scale_embed_dim",
         edits=(("scores = query @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)",
                 "scores = query @ keys.transpose(-2, -1) / math.sqrt(embed_dim)"),),
         what="The scores are scaled by 1 / sqrt(embed_dim) instead of 1 / sqrt(head_dim)."),
    dict(task=5, name="gqa_mask_ignores_cache",
         edits=((".tril(past)  # (L, L_all)", ".tril()  # (L, L_all)"),),
         what="The causal mask has no offset for the cache: with a cache, query i sees only keys 0..i of all."),
    dict(task=5, name="gqa_mask_off_by_one",
         edits=((".tril(past)  # (L, L_all)", ".tril(past - 1)  # (L, L_all)"),),
         what="The mask is off by one: a position does not see itself (the first row is all -inf, NaN)."),
    dict(task=5, name="gqa_rope_no_offset",
         edits=(("query = self.rotary(heads(self.q_proj(x), self.num_heads), offset=past)",
                 "query = self.rotary(heads(self.q_proj(x), self.num_heads))"),
                ("key = self.rotary(heads(self.k_proj(x), self.num_kv_heads), offset=past)",
                 "key = self.rotary(heads(self.k_proj(x), self.num_kv_heads))")),
         what="RoPE rotates the new positions from 0 instead of L_past, so cached generation disagrees with a "
              "full pass."),
    dict(task=5, name="gqa_rope_on_values",
         edits=(("value = heads(self.v_proj(x), self.num_kv_heads)",
                 "value = self.rotary(heads(self.v_proj(x), self.num_kv_heads), offset=past)"),),
         what="The values are rotated too; RoPE applies to queries and keys only."),
    dict(task=5, name="gqa_cache_repeated_heads",
         edits=(("return self.o_proj(out), (key, value)", "return self.o_proj(out), (keys, values)"),),
         what="The cache returned holds the repeated H heads instead of the H_kv key/value heads."),
    dict(task=5, name="gqa_cache_returns_new_only",
         edits=(("return self.o_proj(out), (key, value)",
                 "return self.o_proj(out), (key[:, :, past:], value[:, :, past:])"),),
         what="The returned cache holds only this call's keys and values, not the cached ones before them."),
    dict(task=5, name="gqa_cache_unrotated_keys",
         edits=(("key = self.rotary(heads(self.k_proj(x), self.num_kv_heads), offset=past)",
                 "key = heads(self.k_proj(x), self.num_kv_heads)"),
                ("keys, values = key.repeat_interleave(group, dim=1)",
                 "keys, values = self.rotary(key).repeat_interleave(group, dim=1)")),
         what="The cache stores the keys before RoPE (rotated after concatenation): outputs agree, but the returned "
              "keys are not rotated."),
    dict(task=5, name="gqa_cache_new_first",
         edits=(("torch.cat([cache[0], key], dim=2), torch.cat([cache[1], value], dim=2)",
                 "torch.cat([key, cache[0]], dim=2), torch.cat([value, cache[1]], dim=2)"),),
         what="The new keys and values are put before the cached ones instead of after them."),
    dict(task=5, name="gqa_past_from_heads_axis",
         edits=(("past = 0 if cache is None else cache[0].size(2)",
                 "past = 0 if cache is None else cache[0].size(1)"),),
         what="L_past is read from axis 1 of the cached keys (H_kv) instead of axis 2 (the positions)."),
    dict(task=5, name="gqa_split_without_transpose",
         edits=(("t.view(batch_size, seq_len, n, self.head_dim).transpose(1, 2)",
                 "t.view(batch_size, n, seq_len, self.head_dim)"),),
         what="The heads are split by viewing (B, L, n hd) as (B, n, L, hd) without a transpose, mixing positions."),
    dict(task=5, name="gqa_merge_without_transpose",
         edits=(("(weights @ values).transpose(1, 2).reshape(batch_size, seq_len, embed_dim)",
                 "(weights @ values).reshape(batch_size, seq_len, embed_dim)"),),
         what="The heads are merged by reshaping (B, H, L, hd) straight to (B, L, D), without moving H next to hd."),
    dict(task=5, name="gqa_softmax_wrong_axis",
         edits=(('.softmax(dim=-1)  # (B, H, L, L_all)', '.softmax(dim=-2)  # (B, H, L, L_all)'),),
         what="The softmax runs over the queries (dim -2) instead of the keys."),
    dict(task=5, name="gqa_projection_biases",
         edits=(("self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)",
                 "self.q_proj = nn.Linear(embed_dim, embed_dim)"),
                ("self.o_proj = nn.Linear(embed_dim, embed_dim, bias=False)",
                 "self.o_proj = nn.Linear(embed_dim, embed_dim)")),
         what="q_proj and o_proj keep their default biases; all four projections must be bias=False."),

    # ---- Task 6: tiled_attention ----
    dict(task=6, name="tiled_output_not_rescaled",
         edits=(("out = out * correction + probs @ value[..., start:end, :]",
                 "out = out + probs @ value[..., start:end, :]"),),
         what="The running output is not rescaled by exp(m - m') when the maximum grows."),
    dict(task=6, name="tiled_sum_not_rescaled",
         edits=(("row_sum = row_sum * correction + probs.sum(dim=-1, keepdim=True)",
                 "row_sum = row_sum + probs.sum(dim=-1, keepdim=True)"),),
         what="The running sum is not rescaled by exp(m - m') when the maximum grows."),
    dict(task=6, name="tiled_no_scale",
         edits=(("transpose(-2, -1) / math.sqrt(head_dim)  # (B, H, L, block)",
                 "transpose(-2, -1)  # (B, H, L, block)"),),
         what="The scores are not scaled by 1 / sqrt(head_dim)."),
    dict(task=6, name="tiled_mask_diagonal",
         edits=(("future = positions[start:end][None, :] > positions[:, None]",
                 "future = positions[start:end][None, :] >= positions[:, None]"),),
         what="The causal mask also hides the diagonal (>= instead of >): position 0 sees nothing (NaN)."),
    dict(task=6, name="tiled_mask_block_local",
         edits=(("future = positions[start:end][None, :] > positions[:, None]",
                 "future = positions[:end - start][None, :] > positions[:, None]"),),
         what="The mask uses the key's position within its block instead of its position in the sequence, so "
              "later blocks are masked as if they were the first."),
    dict(task=6, name="tiled_mask_reversed",
         edits=(("future = positions[start:end][None, :] > positions[:, None]",
                 "future = positions[start:end][None, :] < positions[:, None]"),),
         what="The mask hides the past instead of the future (< instead of >)."),
    dict(task=6, name="tiled_partial_block_dropped",
         edits=(("for start in range(0, seq_len, block_size):",
                 "for start in range(0, seq_len - block_size + 1, block_size):"),),
         what="The loop stops before a last partial block, so lengths that are not multiples of the block lose keys."),
    dict(task=6, name="tiled_block_max_only",
         edits=(("new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True))",
                 "new_max = scores.amax(dim=-1, keepdim=True)"),),
         what="The new maximum is the block's alone, not the running maximum: a fully masked block gives "
              "exp(inf) (NaN), and a lower block max overflows."),
    dict(task=6, name="tiled_no_max_subtracted",
         edits=(("correction = torch.exp(row_max - new_max)", "correction = 1.0"),
                ("probs = torch.exp(scores - new_max)", "probs = torch.exp(scores)")),
         what="No maximum is subtracted (a plain running sum of exp(s)): exact on small scores, inf/NaN on large."),
    dict(task=6, name="tiled_not_divided",
         edits=(("return out / row_sum  # (B, H, L, head_dim)", "return out  # (B, H, L, head_dim)"),),
         what="The output is never divided by the running sum l."),
    dict(task=6, name="tiled_normalised_per_block",
         edits=(("out = out * correction + probs @ value[..., start:end, :]",
                 "out = out * correction + probs @ value[..., start:end, :] / probs.sum(dim=-1, keepdim=True)"),
                ("return out / row_sum  # (B, H, L, head_dim)", "return out  # (B, H, L, head_dim)")),
         what="Each block's softmax is normalised on its own and the blocks summed, instead of one division by l."),

    dict(task=6, name="tiled_max_updated_first",
         edits=(("        correction = torch.exp(row_max - new_max)",
                 "        row_max = new_max\n        correction = torch.exp(row_max - new_max)"),),
         what="The running maximum is overwritten before the correction is computed, so the correction is always 1."),
    dict(task=6, name="tiled_max_starts_at_zero",
         edits=(('row_max = query.new_full(query.shape[:-1] + (1,), float("-inf"))',
                 "row_max = query.new_zeros(query.shape[:-1] + (1,))"),),
         what="The running maximum starts at 0 instead of -inf: rows whose scores are all far below 0 underflow "
              "(0 / 0)."),
    dict(task=6, name="tiled_one_block",
         edits=(("for start in range(0, seq_len, block_size):", "for start in range(0, 1):"),
                ("end = min(start + block_size, seq_len)", "end = seq_len")),
         what="block_size is ignored: one block of all L keys, so the whole L x L score matrix is built at once."),
    dict(task=6, name="tiled_uses_sdpa",
         edits=(("    seq_len, head_dim = query.shape[-2:]\n",
                 "    return F.scaled_dot_product_attention(query, key, value, is_causal=causal)\n"),),
         what="Returns F.scaled_dot_product_attention, which the task forbids."),
    # ---- Task 8: LoRALinear ----
    dict(task=8, name="lora_scale_rank_over_alpha",
         edits=(("self.scaling = alpha / rank", "self.scaling = rank / alpha"),),
         what="The scale is rank / alpha instead of alpha / rank."),
    dict(task=8, name="lora_scale_alpha_only",
         edits=(("self.scaling = alpha / rank", "self.scaling = alpha"),),
         what="The scale is alpha, not divided by the rank."),
    # GAP (2026-11-27): passes check_task_8 (its cases use alpha=6, rank=2, where alpha // rank == alpha / rank);
    # the grader's hidden case (rank 2, alpha 3) scores it 0, so the check's ✓ is not paid. Not a valid variant.
    dict(task=8, name="lora_scale_floor_division",
         edits=(("self.scaling = alpha / rank", "self.scaling = alpha // rank"),),
         what="The scale is alpha // rank (floor division): alpha=8, rank=16 gives 0 instead of 0.5."),
    dict(task=8, name="lora_forward_unscaled",
         edits=(("return self.base(x) + self.scaling * update", "return self.base(x) + update"),),
         what="forward adds x A^T B^T without the alpha / rank scale (merge still scales)."),
    dict(task=8, name="lora_init_swapped",
         edits=(("self.A = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))",
                 "self.A = nn.Parameter(torch.zeros(rank, base.in_features))"),
                ("self.B = nn.Parameter(torch.zeros(base.out_features, rank))",
                 "self.B = nn.Parameter(torch.randn(base.out_features, rank) / math.sqrt(rank))")),
         what="A starts at zeros and B at random, instead of A random and B zeros."),
    dict(task=8, name="lora_both_random",
         edits=(("self.B = nn.Parameter(torch.zeros(base.out_features, rank))",
                 "self.B = nn.Parameter(torch.randn(base.out_features, rank) / math.sqrt(rank))"),),
         what="B starts at random instead of zeros, so the adapted layer does not start equal to the base."),
    dict(task=8, name="lora_both_zero",
         edits=(("self.A = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))",
                 "self.A = nn.Parameter(torch.zeros(rank, base.in_features))"),),
         what="A starts at zeros as well as B, so neither ever gets a gradient and the adapter never trains."),
    dict(task=8, name="lora_base_not_frozen",
         edits=(("self.base = base.requires_grad_(False)", "self.base = base"),),
         what="The base layer is not frozen: its weight and bias still require gradients."),
    dict(task=8, name="lora_bias_not_frozen",
         edits=(("self.base = base.requires_grad_(False)",
                 "self.base = base\n        self.base.weight.requires_grad_(False)"),),
         what="Only the base weight is frozen; its bias still requires a gradient."),
    dict(task=8, name="lora_A_not_parameter",
         edits=(("self.A = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))",
                 "self.A = torch.randn(rank, base.in_features) / math.sqrt(base.in_features)"),),
         what="A is a plain tensor, not an nn.Parameter: it is never trained."),
    dict(task=8, name="lora_shapes_transposed",
         edits=(("self.A = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))",
                 "self.A = nn.Parameter(torch.randn(base.in_features, rank) / math.sqrt(base.in_features))"),
                ("self.B = nn.Parameter(torch.zeros(base.out_features, rank))",
                 "self.B = nn.Parameter(torch.zeros(rank, base.out_features))"),
                ("update = x @ self.A.T @ self.B.T", "update = x @ self.A @ self.B"),
                ("self.scaling * self.B @ self.A)", "self.scaling * (self.A @ self.B).T)")),
         what="A is stored (in, rank) and B (rank, out), transposed from the (rank, in) and (out, rank) asked for."),
    dict(task=8, name="lora_merge_mutates_base",
         edits=((_MERGE_BODY, "        with torch.no_grad():\n"
                              "            self.base.weight += self.scaling * self.B @ self.A\n"
                              "        return self.base\n"),),
         what="merge adds the update into base's weight in place and returns base, instead of a new layer."),
    dict(task=8, name="lora_merge_unscaled",
         edits=(("merged.weight.copy_(self.base.weight + self.scaling * self.B @ self.A)",
                 "merged.weight.copy_(self.base.weight + self.B @ self.A)"),),
         what="merge adds B A without the alpha / rank scale."),
    dict(task=8, name="lora_merge_transposed_update",
         edits=(("self.scaling * self.B @ self.A)", "self.scaling * (self.B @ self.A).T)"),),
         what="merge adds the update transposed (A^T B^T, shape (in, out)), right only by accident for square layers."),
    dict(task=8, name="lora_merge_bias_dropped",
         edits=(("            if self.base.bias is not None:\n                merged.bias.copy_(self.base.bias)\n",
                 ""),),
         what="merge does not copy the base's bias: the new layer keeps nn.Linear's random bias."),
    dict(task=8, name="lora_merge_default_dtype",
         edits=(("        merged = merged.to(self.base.weight)  # the base's dtype and device\n", ""),),
         what="The merged layer is created in the default dtype, not the base's (a float64 layer merges to float32)."),
]


def mistake_source(item):
    """The reference answer source with the mistake's edits applied in order (as a planted Mutant applies them)."""
    return Mutant(item["task"], item["name"], item["edits"]).apply(reference_source(WORK_IN_PROGRESS))


def mistake_object(item):
    """The object the mistake's task check is called with, executed from the edited source."""
    return load_reference(mistake_source(item))[CHECKED[item["task"]]]
