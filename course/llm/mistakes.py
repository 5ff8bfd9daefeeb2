"""Known student mistakes of the llm assignment, each a few edits of the reference source (the solutions notebook),
from the prototypes (/work/llm-proto/bpe/ and layers/ mistakes.py, rewritten against the notebook's answers). Task 7 has
none yet (it has no answer by definitions). See course/transformer/mistakes.py for how they are used. Instructor-side only: never shipped.
"""
from checkers.llm import _bpe, _layer_probes, gqa as _gqa, layers as _layers, lora as _lora, tiled as _tiled
from checkers.llm import tokenizer as _tokenizer
from checkers.llm import training as _training
from course.mutant import Mutant

# ---- Task 1: the reference lines the mistakes edit ----
BEST = "    return max(tied, key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))"
TOP = "    top = max(counts.values())\n"
WORDS = 'word_counts = Counter(tuple(word.encode("utf-8", errors="surrogatepass")) for word in PRETOKENIZE.findall(text))'
FREQS = "    freqs = list(word_counts.values())"
UPDATE = ("            add_pairs(counts, where, old, -freqs[index], index)  # forget the word's old pairs ...\n"
          "            add_pairs(counts, where, new, freqs[index], index)  # ... and count its new ones\n")
WHERE = "        for index in where.pop(pair):"
STORE = "            words[index] = new\n"
APPEND = "        merges.append(pair)\n"
NEW_IDS = "    for new_id in range(256, vocab_size):"
DROP = "        counts = +counts  # drop the pairs whose count fell to 0: they no longer occur\n"
STOP = DROP + "        if not counts:\n            break\n"
STEP = "            merged.append(new_id)\n            i += 2"
SCAN = "    merged, i = [], 0\n    while i < len(ids):"
RIGHT_TO_LEFT = ("    if pair[0] == pair[1]:  # a run such as 'aaa': scanned from the right\n"
                 "        merged, i = [], len(ids) - 1\n"
                 "        while i >= 0:\n"
                 "            if i > 0 and ids[i - 1] == pair[0] and ids[i] == pair[1]:\n"
                 "                merged.append(new_id)\n                i -= 2\n"
                 "            else:\n                merged.append(ids[i])\n                i -= 1\n"
                 "        return merged[::-1]\n" + SCAN)

TRAINER_MUTANTS = [
    Mutant(1, "ties to the smaller pair", ((BEST, BEST.replace("return max(", "return min(")),), _training.TIE_SMALLER),
    Mutant(1, "ties to the pair counted first", ((TOP, "    return max(counts, key=counts.get)\n"),),
           _training.TIE_FIRST_SEEN),
    Mutant(1, "ties by ids", ((BEST, "    return max(tied)"),), _training.TIE_BY_IDS),
    Mutant(1, "pairs across words", ((WORDS, WORDS.replace("for word in PRETOKENIZE.findall(text))",
                                                           "for word in [text])")),), _training.CROSS_WORD),
    Mutant(1, "no frequency weights", ((FREQS, "    freqs = [1] * len(word_counts)"),),
           _training.NO_FREQUENCY_WEIGHTS),
    Mutant(1, "only the merged pair forgotten", ((UPDATE, ""), (WHERE, "        del counts[pair]\n" + WHERE)),
           _training.STALE_COUNTS),
    Mutant(1, "merged words not stored", ((STORE, ""),)),  # a KeyError, which a wrong merge_word raises too
    Mutant(1, "new ids from 0", ((NEW_IDS, "    for new_id in range(vocab_size - 256):"),), _training.IDS_FROM_ZERO),
    Mutant(1, "vocab_size merges", ((NEW_IDS, "    for new_id in range(256, 256 + vocab_size):"),),
           _training.MERGE_COUNT),
    Mutant(1, "no early stop", ((STOP, DROP),), _training.NO_EARLY_STOP),
    Mutant(1, "plain UTF-8 in training", ((WORDS, WORDS.replace('word.encode("utf-8", errors="surrogatepass")',
                                                                'word.encode("utf-8")')),), _bpe.NO_SURROGATEPASS),
    Mutant(1, "overlapping merges in training", ((STEP, STEP.replace("i += 2", "i += 1")),)),  # Task 2 names it
    Mutant(1, "right to left in training", ((SCAN, RIGHT_TO_LEFT),), _bpe.MERGE_RIGHT_TO_LEFT),
    Mutant(1, "merges as lists", ((APPEND, APPEND.replace("merges.append(pair)", "merges.append(list(pair))")),),
           _training.MERGES_AS_LISTS),
    Mutant(1, "a full recount after every merge",  # right merges, the whole text's cost per merge
           ((DROP, "        counts, where = Counter(), defaultdict(set)\n"
                   "        for index, word in enumerate(words):\n"
                   "            add_pairs(counts, where, word, freqs[index], index)\n"), (UPDATE, "")),
           _training.TOO_SLOW),
]

# ---- Task 2 ----
START = '    ids = list(word.encode("utf-8", errors="surrogatepass"))'
LOWEST = "        pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, math.inf))"
JOIN = '        data = b"".join(self.vocab[i] for i in ids)\n'
SURROGATE_DECODE = '            return data.decode("utf-8", errors="surrogatepass")  # the exact inverse of encode'
FALLBACK = '        except UnicodeDecodeError:\n            return data.decode("utf-8", errors="replace")'

TOKENIZER_MUTANTS = [
    Mutant(2, "code points", ((START, "    ids = [ord(c) for c in word]"),), _tokenizer.ENCODES_CODE_POINTS),
    Mutant(2, "first mergeable pair from the left",
           ((LOWEST, "        pair = next((p for p in zip(ids, ids[1:]) if p in ranks), None)"),),
           _tokenizer.ENCODE_MERGE_ORDER),
    Mutant(2, "no pre-tokenizer in encode", (("        for word in PRETOKENIZE.findall(text):",
                                              "        for word in [text]:"),), _tokenizer.ENCODE_NO_PRETOKENIZE),
    Mutant(2, "decode per token", ((JOIN, '        return "".join(self.vocab[i].decode("utf-8", errors="replace") '
                                          'for i in ids)\n'),), _tokenizer.DECODE_PER_TOKEN),
    Mutant(2, "plain UTF-8 in decode", ((SURROGATE_DECODE, SURROGATE_DECODE.replace('errors="surrogatepass"',
                                                                                     'errors="strict"')),),
           _tokenizer.DECODE_NO_SURROGATEPASS),
    Mutant(2, "no replace fallback", ((FALLBACK, "        finally:\n            pass"),), _tokenizer.DECODE_NOT_REPLACE),
    Mutant(2, "plain UTF-8 in encode", ((START, START.replace(', errors="surrogatepass"', "")),),
           _bpe.NO_SURROGATEPASS),
    Mutant(2, "overlapping merges", ((STEP, STEP.replace("i += 2", "i += 1")),), _bpe.MERGE_OVERLAPPING),
    Mutant(2, "right to left", ((SCAN, RIGHT_TO_LEFT),), _bpe.MERGE_RIGHT_TO_LEFT),
]

# ---- Tasks 3-4 ----
RMS = "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)"
NORMED = "return x / rms * self.weight  # (..., D)"
GAIN = "self.weight = nn.Parameter(torch.ones(embed_dim))  # (D,)"
GATED = "hidden = F.silu(self.gate_proj(x)) * self.up_proj(x)  # (..., hidden_dim)"
PROJECTIONS = ("self.gate_proj = nn.Linear(embed_dim, hidden_dim, bias=False)\n"
               "        self.up_proj = nn.Linear(embed_dim, hidden_dim, bias=False)\n"
               "        self.down_proj = nn.Linear(hidden_dim, embed_dim, bias=False)")

LAYER_MUTANTS = [
    Mutant(3, "mean subtracted (LayerNorm)", ((RMS, "x = x - x.mean(dim=-1, keepdim=True)\n        " + RMS),),
           _layers.RMS_SUBTRACTS_MEAN),
    Mutant(3, "eps outside the square root",
           ((RMS, "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + self.eps  # (..., 1)"),),
           _layers.RMS_EPS_OUTSIDE),
    Mutant(3, "eps argument ignored", ((RMS, RMS.replace("self.eps", "1e-6")),), _layers.RMS_EPS_IGNORED),
    Mutant(3, "squares summed", ((RMS, RMS.replace(".mean(dim=-1", ".sum(dim=-1")),), _layers.RMS_SUM_NOT_MEAN),
    Mutant(3, "standard deviation", ((RMS, "rms = x.std(dim=-1, keepdim=True) + self.eps  # (..., 1)"),),
           _layers.RMS_STD),
    Mutant(3, "mean over dim 1", ((RMS, RMS.replace("mean(dim=-1", "mean(dim=1")),), _layers.RMS_WRONG_DIM),
    Mutant(3, "weight not applied", ((NORMED, "return x / rms  # (..., D)"),), _layers.RMS_NO_WEIGHT),
    Mutant(3, "weight added", ((NORMED, "return x / rms + self.weight  # (..., D)"),), _layers.RMS_WEIGHT_ADDED),
    Mutant(3, "weight starts at zeros", ((GAIN, GAIN.replace("torch.ones", "torch.zeros")),),
           _layers.RMS_WEIGHT_INIT),
    Mutant(3, "a bias", ((GAIN, GAIN + "\n        self.bias = nn.Parameter(torch.zeros(embed_dim))"),
                         (NORMED, "return x / rms * self.weight + self.bias  # (..., D)")), _layers.RMS_BIAS),
    Mutant(3, "mean of |x|", ((RMS, "rms = x.abs().mean(dim=-1, keepdim=True) + self.eps  # (..., 1)"),),
           _layer_probes.RMS_MEAN_ABS),
    Mutant(4, "sigmoid gate (GLU)", ((GATED, GATED.replace("F.silu(", "torch.sigmoid(")),), _layers.SWIGLU_SIGMOID),
    Mutant(4, "gate and up swapped", ((GATED, "hidden = F.silu(self.up_proj(x)) * self.gate_proj(x)"),),
           _layers.SWIGLU_SWAPPED),
    Mutant(4, "GELU gate (GeGLU)", ((GATED, GATED.replace("F.silu(", "F.gelu(")),), _layers.SWIGLU_GELU),
    Mutant(4, "silu of the product", ((GATED, "hidden = F.silu(self.gate_proj(x) * self.up_proj(x))"),),
           _layers.SWIGLU_SILU_OF_PRODUCT),
    Mutant(4, "silu on both", ((GATED, "hidden = F.silu(self.gate_proj(x)) * F.silu(self.up_proj(x))"),),
           _layers.SWIGLU_BOTH_ACTIVATED),
    Mutant(4, "up_proj unused", ((GATED, "hidden = F.silu(self.gate_proj(x))"),), _layers.SWIGLU_UP_UNUSED),
    Mutant(4, "biases", ((PROJECTIONS, PROJECTIONS.replace("bias=False", "bias=True")),), _layers.SWIGLU_BIAS),
    Mutant(4, "tanh gate", ((GATED, GATED.replace("F.silu(", "torch.tanh(")),),
           _layer_probes.SWIGLU_OTHER_GATE.format(gate="tanh")),
]

# ---- Task 6 ----
SUM = "row_sum = row_sum * correction + probs.sum(dim=-1, keepdim=True)  # (B, H, L, 1)"
ACC = "out = out * correction + probs @ value[..., start:end, :]  # (B, H, L, head_dim)"
FUTURE = "future = positions[start:end][None, :] > positions[:, None]  # (L, block)"
END = "end = min(start + block_size, seq_len)  # the last block may be shorter"
BLOCK_SCORES = "scores = query @ key[..., start:end, :].transpose(-2, -1) / math.sqrt(head_dim)  # (B, H, L, block)"
MAX_START = 'row_max = query.new_full(query.shape[:-1] + (1,), float("-inf"))  # (B, H, L, 1)'
NEW_MAX = "new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True))  # (B, H, L, 1)"
PROBS = "probs = torch.exp(scores - new_max)  # (B, H, L, block)"

TILED_MUTANTS = [
    Mutant(6, "accumulator not rescaled", ((ACC, ACC.replace("out * correction", "out")),), _tiled.NO_RESCALE_ACC),
    Mutant(6, "running sum not rescaled", ((SUM, SUM.replace("row_sum * correction", "row_sum")),),
           _tiled.NO_RESCALE_SUM),
    Mutant(6, "divided by the running sum each block",
           ((ACC, "out = out * correction + probs @ value[..., start:end, :] / (row_sum * correction + "
                  "probs.sum(dim=-1, keepdim=True))"),
            ("    return out / row_sum  # (B, H, L, head_dim)", "    return out  # (B, H, L, head_dim)")),
           _tiled.DIVIDE_EARLY),
    Mutant(6, "block-local key indices in the mask", ((FUTURE, FUTURE.replace("positions[start:end]",
                                                                              "positions[:end - start]")),),
           _tiled.LOCAL_MASK),
    Mutant(6, "diagonal masked", ((FUTURE, FUTURE.replace("] > positions", "] >= positions")),),
           _tiled.DIAGONAL_HIDDEN),
    Mutant(6, "last partial block dropped",
           (("for start in range(0, seq_len, block_size):", "for start in range(0, seq_len - block_size + 1, "
                                                            "block_size):"),), _tiled.LAST_BLOCK_DROPPED),
    Mutant(6, "causal flag ignored", (("        if causal:\n            future", "        if False:\n            future"),),
           _tiled.NOT_CAUSAL),
    Mutant(6, "not scaled", ((BLOCK_SCORES, BLOCK_SCORES.replace(" / math.sqrt(head_dim)", "")),), _tiled.NOT_SCALED),
    Mutant(6, "no running max", ((PROBS, "probs = torch.exp(scores)  # (B, H, L, block)"),
                                 ("correction = torch.exp(row_max - new_max)", "correction = 1.0")), _tiled.NO_MAX),
    Mutant(6, "running max from 0", ((MAX_START, MAX_START.replace('float("-inf")', "0.0")),), _tiled.MAX_FROM_ZERO),
    Mutant(6, "calls scaled_dot_product_attention",
           (("    seq_len, head_dim = query.shape[-2:]\n", "    return F.scaled_dot_product_attention(query, key, "
                                                           "value, is_causal=causal)\n"),), _tiled.CALLS_SDPA),
    Mutant(6, "full scores", ((BLOCK_SCORES, "scores = (query @ key.transpose(-2, -1) / math.sqrt(head_dim))"
                                             "[..., start:end]  # (B, H, L, block)"),),
           "the full L × L score matrix"),  # a fragment of the template _tiled.FULL_SCORES, which the message fills
    Mutant(6, "full boolean mask", ((FUTURE, "future = (positions[None, :] > positions[:, None])[:, start:end]  # "
                                             "(L, L) built, (L, block) kept"),),
           "the full L × L score matrix"),  # a bool (L, L) grows with L² too: the same template, filled
    Mutant(6, "exp with the old max", ((PROBS, "probs = torch.exp(scores - row_max)  # (B, H, L, block)"),)),
]

# ---- Task 8 ----
INIT_A = "self.A = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))  # (r, in)"
INIT_B = "self.B = nn.Parameter(torch.zeros(base.out_features, rank))  # (out, r)"
SCALING = "self.scaling = alpha / rank"
UPDATED = "return self.base(x) + self.scaling * update"
MERGED_WEIGHT = "merged.weight.copy_(self.base.weight + self.scaling * self.B @ self.A)"
NEW_LINEAR = ("merged = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None)\n"
              "        merged = merged.to(self.base.weight)  # the base's dtype and device")
BIAS_COPY = "            if self.base.bias is not None:\n                merged.bias.copy_(self.base.bias)\n"

LORA_MUTANTS = [
    Mutant(8, "base not frozen", (("self.base = base.requires_grad_(False)", "self.base = base"),),
           _lora.BASE_NOT_FROZEN),
    Mutant(8, "B random too", ((INIT_B, "self.B = nn.Parameter(torch.randn(base.out_features, rank))"),),
           _lora.BOTH_RANDOM),
    Mutant(8, "A zero too", ((INIT_A, "self.A = nn.Parameter(torch.zeros(rank, base.in_features))"),),
           _lora.BOTH_ZERO),
    Mutant(8, "A zero and B random", ((INIT_A, "self.A = nn.Parameter(torch.zeros(rank, base.in_features))"),
                                      (INIT_B, "self.B = nn.Parameter(torch.randn(base.out_features, rank))")),
           _lora.INIT_SWAPPED),
    Mutant(8, "A and B layouts transposed",
           ((INIT_A, "self.A = nn.Parameter(torch.randn(base.in_features, rank) / math.sqrt(base.in_features))"),
            (INIT_B, "self.B = nn.Parameter(torch.zeros(rank, base.out_features))"),
            ("update = x @ self.A.T @ self.B.T", "update = x @ self.A @ self.B")), _lora.AB_LAYOUT),
    Mutant(8, "no scaling", ((SCALING, "self.scaling = 1.0"),), _lora.SCALING_MISSING),
    Mutant(8, "rank / alpha", ((SCALING, "self.scaling = rank / alpha"),), _lora.SCALING_INVERTED),
    Mutant(8, "alpha alone", ((SCALING, "self.scaling = alpha"),), _lora.SCALING_ALPHA),
    Mutant(8, "1 / rank", ((SCALING, "self.scaling = 1 / rank"),), _lora.SCALING_RANK),
    Mutant(8, "alpha / sqrt(rank)", ((SCALING, "self.scaling = alpha / math.sqrt(rank)"),), _lora.SCALING_SQRT),
    Mutant(8, "base omitted", ((UPDATED, "return self.scaling * update"),), _lora.BASE_OMITTED),
    Mutant(8, "merge without the scaling", ((MERGED_WEIGHT, MERGED_WEIGHT.replace("self.scaling * ", "")),),
           _lora.MERGE_NO_SCALE),
    Mutant(8, "merge transposed", ((MERGED_WEIGHT, MERGED_WEIGHT.replace("self.B @ self.A", "(self.B @ self.A).T")),),
           _lora.MERGE_TRANSPOSED),
    Mutant(8, "merge without the bias", ((NEW_LINEAR, NEW_LINEAR.replace("bias=self.base.bias is not None",
                                                                         "bias=False")), (BIAS_COPY, "")),
           _lora.MERGE_NO_BIAS),
    Mutant(8, "merge in place", ((NEW_LINEAR, "merged = self.base"),
                                 (MERGED_WEIGHT, "merged.weight.add_(self.scaling * self.B @ self.A)")),
           _lora.MERGE_IN_PLACE),
]

# ---- Task 5 ----
KV_LINEARS = ("self.k_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=False)\n"
              "        self.v_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=False)")
Q_ROTATED = "query = self.rotary(heads(self.q_proj(x), self.num_heads), offset=past)  # (B, H, L, hd)"
K_ROTATED = "key = self.rotary(heads(self.k_proj(x), self.num_kv_heads), offset=past)  # (B, H_kv, L, hd)"
V_HEADS = "value = heads(self.v_proj(x), self.num_kv_heads)  # (B, H_kv, L, hd)"
REPEATED = ("keys, values = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)  "
            "# (B, H, L_all, hd)")
SCALED = "scores = query @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, L, L_all)"
MASKED = "weights = scores.masked_fill(~allowed, float(\"-inf\")).softmax(dim=-1)  # (B, H, L, L_all)"
ALLOWED = "torch.ones(seq_len, past + seq_len, dtype=torch.bool, device=x.device).tril(past)  # (L, L_all)"
RETURNED = "return self.o_proj(out), (key, value)"

GQA_MUTANTS = [
    Mutant(5, "projections with biases", (("self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)",
                                           "self.q_proj = nn.Linear(embed_dim, embed_dim)"),), _gqa.GQA_BIAS),
    Mutant(5, "k_proj and v_proj to every head",
           ((KV_LINEARS, KV_LINEARS.replace("num_kv_heads * self.head_dim", "embed_dim")),
            ("heads(self.k_proj(x), self.num_kv_heads)", "heads(self.k_proj(x), self.num_heads)"),
            ("heads(self.v_proj(x), self.num_kv_heads)", "heads(self.v_proj(x), self.num_heads)"),
            ("group = self.num_heads // self.num_kv_heads", "group = 1")), _gqa.KV_FULL),
    Mutant(5, "heads tiled with repeat", ((REPEATED, "keys, values = key.repeat(1, group, 1, 1), "
                                                     "value.repeat(1, group, 1, 1)"),), _gqa.REPEAT_GROUPING),
    Mutant(5, "the cache holds the repeated heads", ((RETURNED, "return self.o_proj(out), (keys, values)"),),
           _gqa.EXPANDED_CACHE),
    Mutant(5, "values rotated", ((V_HEADS, "value = self.rotary(heads(self.v_proj(x), self.num_kv_heads), "
                                           "offset=past)"),), _gqa.VALUES_ROTATED),
    Mutant(5, "no RoPE", ((Q_ROTATED, "query = heads(self.q_proj(x), self.num_heads)"),
                          (K_ROTATED, "key = heads(self.k_proj(x), self.num_kv_heads)")), _gqa.NO_ROPE),
    Mutant(5, "scaled by sqrt(embed_dim)", ((SCALED, SCALED.replace("self.head_dim", "embed_dim")),),
           _gqa.SCALE_EMBED),
    Mutant(5, "not causal", ((MASKED, "weights = scores.softmax(dim=-1)  # (B, H, L, L_all)"),), _gqa.NOT_CAUSAL),
    Mutant(5, "mask aligned to the top left", ((ALLOWED, ALLOWED.replace(".tril(past)", ".tril(0)")),),
           _gqa.MASK_IGNORES_PREFIX),
    Mutant(5, "offset ignored", ((Q_ROTATED, Q_ROTATED.replace("offset=past", "offset=0")),
                                 (K_ROTATED, K_ROTATED.replace("offset=past", "offset=0"))), _gqa.OFFSET_IGNORED),
    Mutant(5, "keys cached before RoPE",  # right outputs; only the cache says it
           ((K_ROTATED, "key = heads(self.k_proj(x), self.num_kv_heads)  # (B, H_kv, L, hd)"),
            (REPEATED, REPEATED.replace("key.repeat_interleave", "self.rotary(key).repeat_interleave"))),
           _gqa.KEYS_UNROTATED),
    Mutant(5, "the cache in (B, L, H_kv, hd)", ((RETURNED, "return self.o_proj(out), (key.transpose(1, 2), "
                                                           "value.transpose(1, 2))"),
                                                ("key, value = torch.cat([cache[0], key], dim=2), "
                                                 "torch.cat([cache[1], value], dim=2)",
                                                 "key, value = torch.cat([cache[0].transpose(1, 2), key], dim=2), "
                                                 "torch.cat([cache[1].transpose(1, 2), value], dim=2)")),
           _gqa.CACHE_LAYOUT),
]

MUTANTS = tuple(TRAINER_MUTANTS + TOKENIZER_MUTANTS + LAYER_MUTANTS + GQA_MUTANTS + TILED_MUTANTS + LORA_MUTANTS)
