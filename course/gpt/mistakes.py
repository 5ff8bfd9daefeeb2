"""Known student mistakes of the gpt assignment, each a few edits of the reference source (the solutions notebook).
See course/transformer/mistakes.py for how they are used. Instructor-side only: never shipped.
"""
from checkers.gpt import attention as _attention, block as _block, cache as _cache, generation as _generation
from checkers.gpt import model as _model, rotary as _rotary, sampling as _sampling
from course.mutant import Mutant

# ---- Tasks 1-3: the reference lines the mistakes edit ----
THETA = "theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # (head_dim // 2,)"
ANGLE = "angle = torch.arange(max_len, dtype=torch.float64)[:, None] * theta  # (max_len, head_dim // 2)"
TABLES = ('self.register_buffer("cos", angle.cos().to(torch.get_default_dtype()), persistent=False)\n'
          '        self.register_buffer("sin", angle.sin().to(torch.get_default_dtype()), persistent=False)')
PAIRS = "even, odd = x[..., 0::2], x[..., 1::2]  # (B, H, L, head_dim // 2) each"
ROTATED = "rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)"
FLATTEN = "return rotated.flatten(-2)"
ROWS = "cos = self.cos[offset:offset + seq_len].to(x.dtype)  # (L, head_dim // 2)"
SIN_ROWS = "sin = self.sin[offset:offset + seq_len].to(x.dtype)  # (L, head_dim // 2)"
PAST_MAX_LEN = "if offset < 0 or offset + seq_len > self.max_len:"

ROTARY_MUTANTS = [
    Mutant(1, "halves instead of interleaved pairs",
           ((PAIRS, "half = x.size(-1) // 2\n        even, odd = x[..., :half], x[..., half:]"),
            (FLATTEN, "return rotated.transpose(-2, -1).flatten(-2)")), _rotary.HALVES),
    Mutant(1, "i for 2i in the exponent", ((THETA, THETA.replace("torch.arange(0, head_dim, 2,",
                                                                  "torch.arange(head_dim // 2,")),),
           _rotary.EXPONENT_HALVED),
    Mutant(1, "exponent twice too large", ((THETA, THETA.replace("/ head_dim)", "/ (head_dim // 2))")),),
           _rotary.EXPONENT_DOUBLED),
    Mutant(1, "positions from 1", ((ANGLE, ANGLE.replace("torch.arange(max_len,", "torch.arange(1, max_len + 1,")),),
           _rotary.FROM_ONE),
    Mutant(1, "turned clockwise", ((ROTATED, "rotated = torch.stack([even * cos + odd * sin, odd * cos - even * sin], "
                                             "dim=-1)"),), _rotary.CLOCKWISE),
    Mutant(1, "each feature times a sine or cosine",
           ((ROTATED, "rotated = x * torch.cat([sin, cos], dim=-1)  # (B, H, L, head_dim)"),
            (FLATTEN, "return rotated")),
           _rotary.MULTIPLIED),
    Mutant(1, "additive sines and cosines",
           ((ROTATED, "rotated = torch.stack([even + sin, odd + cos], dim=-1)"),), _rotary.ADDITIVE),
    Mutant(1, "every token turned by the offset's angle", ((ROWS, "cos = self.cos[offset].to(x.dtype)  # (head_dim // 2,)"),
                                                           (SIN_ROWS, "sin = self.sin[offset].to(x.dtype)")),
           _rotary.ONE_ANGLE),
    Mutant(1, "offset ignored", ((ROWS, ROWS.replace("offset:offset + seq_len", ":seq_len")),
                                 (SIN_ROWS, SIN_ROWS.replace("offset:offset + seq_len", ":seq_len"))),
           _rotary.OFFSET_IGNORED),
    Mutant(1, "base ignored", ((THETA, THETA.replace("base **", "10000.0 **")),), _rotary.BASE_IGNORED),
    Mutant(1, "ValueError at max_len", ((PAST_MAX_LEN, PAST_MAX_LEN.replace("> self.max_len", ">= self.max_len")),),
           _rotary.BOUNDARY),
    Mutant(1, "sine and cosine swapped", ((ROTATED, "rotated = torch.stack([even * sin - odd * cos, even * cos + odd * "
                                                    "sin], dim=-1)"),)),
]

ROTARY_INIT = "self.rotary = RotaryEmbedding(self.head_dim, max_len) if rope else None"
HEADS = "query, key, value = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))"
IF_ROPE = "        if self.rotary is not None:\n"
ROPE = "query, key = self.rotary(query, offset=past), self.rotary(key, offset=past)  # (B, H, L, head_dim)"
SPLIT_HEADS = "t.view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)"
MERGE_HEADS = "(attention @ value).transpose(1, 2).reshape("
SCALE = "/ math.sqrt(self.head_dim)"
SOFTMAX = ".softmax(dim=-1)  # (B, H, L, L_past + L)"
ALLOWED = "dtype=torch.bool, device=x.device).tril(past)"
CONCAT = """        if cache is not None:
            key = torch.cat([cache[0], key], dim=2)  # (B, H, L_past + L, head_dim)
            value = torch.cat([cache[1], value], dim=2)  # (B, H, L_past + L, head_dim)
"""
RETURNED = "return (out, (key, value), attention) if return_attention else (out, (key, value))"
PAST = "past = 0 if cache is None else cache[0].size(2)"
SCORES = "scores = query @ key.transpose(-2, -1)"
SDPA_ROUTE = ("if not return_attention:  # no weights asked: SDPA, {}\n"
              "            out = nn.functional.scaled_dot_product_attention(query, key, value, {})\n"
              "            out = out.transpose(1, 2).reshape(batch_size, seq_len, embed_dim)\n"
              "            return self.o_proj(out), (key, value)\n"
              "        " + SCORES)
ROTATE_AFTER_CACHING = CONCAT + "        new_cache = (key, value)  # before RoPE\n" + IF_ROPE
RETURN_UNROTATED = RETURNED.replace("(key, value)", "new_cache")

ATTENTION_MUTANTS = [
    Mutant(2, "RoPE on the values too", ((ROPE, ROPE + "\n            value = self.rotary(value, offset=past)"),),
           _attention.VALUES_ROTATED),
    Mutant(2, "RoPE on the queries only", ((ROPE, "query = self.rotary(query, offset=past)"),),
           _attention.ONLY_QUERIES),
    Mutant(2, "RoPE on the keys only", ((ROPE, "key = self.rotary(key, offset=past)"),), _attention.ONLY_KEYS),
    Mutant(2, "RoPE before the heads are split",
           ((ROTARY_INIT, ROTARY_INIT.replace("self.head_dim", "embed_dim")),
            (HEADS, "whole = lambda t: t if self.rotary is None else self.rotary(t[:, None], offset=past)[:, 0]\n"
                    "        " + HEADS.replace("heads(self.q_proj(x))", "heads(whole(self.q_proj(x)))")
                                  .replace("heads(self.k_proj(x))", "heads(whole(self.k_proj(x)))")),
            (ROPE, "pass")), _attention.BEFORE_SPLIT),
    Mutant(2, "RoPE before the transpose", ((HEADS, "early = lambda t: self.rotary(t.view(batch_size, seq_len, "
                                                    "self.num_heads, self.head_dim), offset=past).transpose(1, 2)\n"
                                                    "        query, key, value = early(self.q_proj(x)), "
                                                    "early(self.k_proj(x)), heads(self.v_proj(x))"), (ROPE, "pass")),
           _attention.ROPE_NO_EFFECT),
    Mutant(2, "scores not scaled", ((SCALE, ""),), _attention.NOT_SCALED),
    Mutant(2, "scores divided by head_dim**1/2 in a variable", ((SCALE, "/ scale"), (PAST, PAST + "\n        scale = "
                                                                               "self.head_dim**1/2")),
           _attention.HALF_HEAD_DIM.format(name="head_dim / 2", size=6)),
    Mutant(2, "scores divided by head_dim**1/2 inline", ((SCALE, "/ self.head_dim**1/2"),),
           _attention.HALF_HEAD_DIM.format(name="2·head_dim", size=24)),
    Mutant(2, "scores divided by sqrt(embed_dim)", ((SCALE, "/ math.sqrt(embed_dim)"),)),
    Mutant(2, "no causal mask", ((ALLOWED, ALLOWED.replace(".tril(past)", "")),), _attention.NOT_CAUSAL),
    Mutant(2, "mask sees the next position", ((ALLOWED, ALLOWED.replace(".tril(past)", ".tril(past + 1)")),),
           _attention.NOT_CAUSAL),
    Mutant(2, "mask hides the diagonal", ((ALLOWED, ALLOWED.replace(".tril(past)", ".tril(past - 1)")),),
           _attention.DIAGONAL_HIDDEN),
    Mutant(2, "heads split without the transpose", ((SPLIT_HEADS, "t.view(batch_size, self.num_heads, seq_len, "
                                                                  "self.head_dim)"),), _attention.SPLIT_LAYOUT),
    Mutant(2, "heads merged without the transpose", ((MERGE_HEADS, "(attention @ value).reshape("),),
           _attention.MERGE_LAYOUT),
    Mutant(2, "softmax over the queries", ((SOFTMAX, ".softmax(dim=-2)"),), "do not sum to 1 over the keys"),
    Mutant(2, "no output projection", (("out = self.o_proj(out)  # (B, L, D)", "pass"),)),
]

CACHE_MUTANTS = [
    Mutant(3, "new keys rotated at position 0", ((ROPE, ROPE.replace("self.rotary(key, offset=past)",
                                                                     "self.rotary(key)")),), _cache.KEYS_AT_ZERO),
    Mutant(3, "new queries and keys rotated at position 0", ((ROPE, ROPE.replace(", offset=past", "")),),
           _cache.KEYS_AT_ZERO),
    Mutant(3, "cache built before RoPE, rotated again every step",
           ((IF_ROPE + "            " + ROPE + "\n" + CONCAT,
             ROTATE_AFTER_CACHING + "            " + ROPE.replace("self.rotary(key, offset=past)", "self.rotary(key)")
             + "\n"), (RETURNED, RETURN_UNROTATED)), _attention.CACHE_BEFORE_ROPE),
    Mutant(3, "cache of unrotated keys",
           ((IF_ROPE + "            " + ROPE + "\n" + CONCAT,
             ROTATE_AFTER_CACHING + "            query = self.rotary(query, offset=past)\n"
             "            key = torch.cat([key[:, :, :past], self.rotary(key[:, :, past:], offset=past)], dim=2)\n"),
            (RETURNED, RETURN_UNROTATED)), _attention.CACHE_BEFORE_ROPE),
    Mutant(3, "keys rotated after the concatenation, the cached ones twice",
           ((ROPE, "query = self.rotary(query, offset=past)"),
            (CONCAT, CONCAT + "        if self.rotary is not None:\n            key = self.rotary(key)\n")),
           _cache.ROTATED_TWICE),
    Mutant(3, "mask ignores the cached prefix", ((ALLOWED, ALLOWED.replace(".tril(past)", ".tril()")),),
           _cache.MASK_IGNORES_PREFIX),
    Mutant(3, "no mask with a cache", ((ALLOWED, ALLOWED.replace(".tril(past)", ".tril(past if past == 0 else "
                                                                                 "past + seq_len)")),),
           _cache.FUTURE_WITH_CACHE),
    Mutant(3, "new keys before the cached ones", ((CONCAT, CONCAT.replace("[cache[0], key]", "[key, cache[0]]")
                                                   .replace("[cache[1], value]", "[value, cache[1]]")),),
           _cache.CACHE_ORDER),
    Mutant(3, "only the new positions returned as the cache",
           ((RETURNED, RETURNED.replace("(key, value)", "(key[:, :, past:], value[:, :, past:])")),),
           _attention.NEW_ONLY),
    Mutant(3, "SDPA is_causal=True with a cache when no weights are asked",
           ((SCORES, SDPA_ROUTE.format("its top-left mask", "is_causal=True")),), _cache.MASK_IGNORES_PREFIX),
    Mutant(3, "SDPA without a mask with a cache when no weights are asked",
           ((SCORES, SDPA_ROUTE.format("no mask with a cache", "is_causal=cache is None")),), _cache.FUTURE_WITH_CACHE),
    Mutant(3, "new keys rotated at position 0 when no weights are asked",
           ((SCORES, "if not return_attention and cache is not None and self.rotary is not None:\n"
                     "            key = torch.cat([cache[0], self.rotary(heads(self.k_proj(x)))], dim=2)\n"
                     "        " + SCORES),), _cache.KEYS_AT_ZERO),
    Mutant(3, "cache length read from the heads axis", ((PAST, PAST.replace(".size(2)", ".size(1)")),)),
]

# Mistakes of the pinned API that leave every value right: the checks name them, and the grader's facts (the tables'
# buffers, persistence, dtype; rotary None) and must-raise cases reject them.
API_MUTANTS = [
    Mutant(1, "no ValueError past max_len", ((PAST_MAX_LEN, "if offset < 0:"),), _rotary.NO_VALUE_ERROR),
    Mutant(1, "tables saved in the state_dict", ((TABLES, TABLES.replace("persistent=False", "persistent=True")),),
           _rotary.PERSISTENT),
    Mutant(1, "tables kept in float64", ((TABLES, TABLES.replace(".to(torch.get_default_dtype())", "")),),
           _rotary.TABLES_DTYPE.format(found="torch.float64", dtype="torch.float32")),
    Mutant(1, "tables as plain attributes", ((TABLES, TABLES.replace('self.register_buffer("cos", ', "self.cos = (")
                                                             .replace('self.register_buffer("sin", ', "self.sin = (")
                                                             .replace(", persistent=False)", ")")),),
           "a plain tensor attribute"),
    Mutant(2, "rope=False ignored", ((ROTARY_INIT, "self.rotary = RotaryEmbedding(self.head_dim, max_len)"),),
           "with rope=False it should be None"),
]

# ---- Tasks 4-6, 8: the reference lines the mistakes edit ----
BLOCK_ATTENTION = "attended, new_cache = self.attention(self.norm1(x), cache=cache)  # (B, L, D)"
BLOCK_RESIDUAL = "x = x + self.dropout(attended)  # (B, L, D)"
BLOCK_FEEDFORWARD = "x = x + self.dropout(self.feedforward(self.norm2(x)))  # (B, L, D)"
BLOCK_FFN = "nn.Sequential(nn.Linear(embed_dim, feedforward_dim), activation(),"
BLOCK_RETURN = "return x, new_cache\n"
TIE = "self.lm_head.weight = self.token_embedding.weight"
EMBED = "x = self.token_embedding(tokens)  # (B, L, D)"
HEAD = "return self.lm_head(self.final_norm(x)), new_cache"
EMBEDDING = "self.token_embedding = nn.Embedding(vocab_size, embed_dim)"
BLOCK_CALL = "x, block_cache = block(x, cache=None if cache is None else cache[index])"
GPT_MAX_LEN = "self.max_len = max_len\n        self.token_embedding"
DIVIDE = "logits = logits / temperature"
KTH = "kth_largest = logits.topk(top_k, dim=-1).values[:, -1:]"
KEEP = "logits.masked_fill(logits < kth_largest, float(\"-inf\"))"
TOP_K_IF = "if top_k is not None and top_k < logits.size(-1):"
DRAW = "torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)"
STEP = "logits, cache = model(unseen, cache=cache) if use_cache else model(tokens)"
SAMPLE = "sample_next_token(logits[:, -1], temperature, top_k, generator)"
RESTORE = "        return tokens\n    finally:\n        model.train(mode_before)"
NO_GRAD = "@torch.no_grad()\ndef generate("
TOO_LONG = "if prompt.size(1) + max_new_tokens > model.max_len:"
GREEDY = "if temperature == 0:\n        return logits.argmax(dim=-1, keepdim=True)"

BLOCK_MUTANTS = [
    Mutant(4, "post-norm", ((BLOCK_ATTENTION, BLOCK_ATTENTION.replace("self.norm1(x)", "x")),
                            (BLOCK_RESIDUAL, "x = self.norm1(self.dropout(attended) + x)"),
                            (BLOCK_FEEDFORWARD, "x = self.norm2(self.dropout(self.feedforward(x)) + x)")),
           _block.POST_NORM),
    Mutant(4, "post-norm attention", ((BLOCK_ATTENTION, BLOCK_ATTENTION.replace("self.norm1(x)", "x")),
                                      (BLOCK_RESIDUAL, "x = self.norm1(self.dropout(attended) + x)")),
           _block.POST_NORM_ATTENTION),
    Mutant(4, "post-norm feed-forward",
           ((BLOCK_FEEDFORWARD, "x = self.norm2(self.dropout(self.feedforward(x)) + x)"),),
           _block.POST_NORM_FEEDFORWARD),
    Mutant(4, "no residual around the attention", ((BLOCK_RESIDUAL, "x = self.dropout(attended)"),),
           _block.NO_RESIDUAL.format(name="the attention", formula=_block.ATTENTION_FORMULA)),
    Mutant(4, "no residual around the feed-forward network",
           ((BLOCK_FEEDFORWARD, "x = self.dropout(self.feedforward(self.norm2(x)))"),),
           _block.NO_RESIDUAL.format(name="the feed-forward network", formula=_block.FEEDFORWARD_FORMULA)),
    Mutant(4, "norms swapped", ((BLOCK_ATTENTION, BLOCK_ATTENTION.replace("norm1", "norm2")),
                                (BLOCK_FEEDFORWARD, BLOCK_FEEDFORWARD.replace("norm2", "norm1"))),
           _block.NORMS_SWAPPED),
    Mutant(4, "activation argument ignored", ((BLOCK_FFN, BLOCK_FFN.replace("activation()", "nn.GELU()")),),
           _block.ACTIVATION_IGNORED),
    Mutant(4, "cache not passed to the attention",
           ((BLOCK_ATTENTION, BLOCK_ATTENTION.replace(", cache=cache", "")),), _block.CACHE_NOT_PASSED),
    Mutant(4, "new cache not returned", ((BLOCK_RETURN, BLOCK_RETURN.replace("x, new_cache", "x, cache")),),
           _block.CACHE_NOT_RETURNED),
    Mutant(4, "dropout on the residual stream", ((BLOCK_RESIDUAL, "x = self.dropout(x + attended)"),),
           _block.DROPOUT_ON_RESIDUAL),
    Mutant(4, "no dropout on the attention", ((BLOCK_RESIDUAL, "x = x + attended"),),
           _block.NO_SUBLAYER_DROPOUT.format(name="the attention", formula=_block.ATTENTION_FORMULA)),
    Mutant(4, "dropout active in eval mode",
           ((BLOCK_FEEDFORWARD, "x = x + nn.functional.dropout(self.feedforward(self.norm2(x)), self.dropout.p)"),),
           _block.DROPOUT_IN_EVAL),
]

MODEL_MUTANTS = [
    Mutant(5, "GELU's tanh approximation in the blocks",
           (("GPTBlock(embed_dim, num_heads, feedforward_dim, max_len, dropout=dropout)",
             'GPTBlock(embed_dim, num_heads, feedforward_dim, max_len, lambda: nn.GELU(approximate="tanh"), dropout)'),),
           "tanh approximation"),
    Mutant(5, "missing final norm", ((HEAD, "return self.lm_head(x), new_cache"),), _model.NO_FINAL_NORM),
    Mutant(5, "untied head (a copy)", ((TIE, "self.lm_head.weight = nn.Parameter(self.token_embedding.weight.detach()"
                                             ".clone())"),), _model.UNTIED_COPY),
    Mutant(5, "untied head (its own weights)", ((TIE, "pass"),), _model.UNTIED_COPY),
    Mutant(5, "untied head (.data shared)", ((TIE, "self.lm_head.weight.data = self.token_embedding.weight.data"),),
           _model.UNTIED_DATA),
    Mutant(5, "embeddings scaled by sqrt(embed_dim)",
           ((EMBED, "x = self.token_embedding(tokens) * self.token_embedding.embedding_dim ** 0.5"),), _model.SCALED),
    Mutant(5, "absolute position embedding added",
           ((EMBEDDING, EMBEDDING + "\n        self.position_embedding = nn.Embedding(max_len, embed_dim)"),
            (EMBED, "x = self.token_embedding(tokens) + self.position_embedding(torch.arange(tokens.size(1)))")),
           "looks like an absolute position table"),
    Mutant(5, "one cache for every block", ((BLOCK_CALL, "x, block_cache = block(x, cache=None if cache is None else "
                                                         "cache[0])"),), "is not given its own entry of the cache"),
    Mutant(5, "the given cache returned", ((HEAD, HEAD.replace("new_cache", "new_cache if cache is None else cache")),),
           _model.RETURNS_GIVEN_CACHE),
    Mutant(5, "max_len not stored", ((GPT_MAX_LEN, "self.token_embedding"),), "GPT.max_len should store"),
]

SAMPLING_MUTANTS = [
    Mutant(6, "temperature after the softmax", ((DIVIDE, "logits = logits"),
                                                (DRAW, DRAW.replace("dim=-1)", "dim=-1) / temperature"))),
           _sampling.TEMPERATURE_AFTER_SOFTMAX),
    Mutant(6, "temperature only without top_k", ((DIVIDE, "logits = logits / temperature if top_k is None else logits"),),
           _sampling.TEMPERATURE_ONLY_WITHOUT_TOP_K),
    Mutant(6, "temperature multiplied", ((DIVIDE, "logits = logits * temperature"),), _sampling.TEMPERATURE_MULTIPLIED),
    Mutant(6, "top-k keeps the smallest logits", ((KTH, KTH.replace("dim=-1)", "dim=-1, largest=False)")),
                                                  (KEEP, KEEP.replace("<", ">"))), _sampling.TOP_K_SMALLEST),
    Mutant(6, "top-k keeps k - 1", ((KEEP, KEEP.replace("<", "<=")),), _sampling.TOP_K_MINUS_ONE),
    Mutant(6, "top-k fills 0 instead of -inf", ((KEEP, KEEP.replace('float("-inf")', "0.0")),), _sampling.TOP_K_ZERO),
    Mutant(6, "top-k keeps k + 1", ((KTH, KTH.replace("topk(top_k,", "topk(top_k + 1,")),), _sampling.TOP_K_PLUS_ONE),
    Mutant(6, "top-k keeps exactly k on ties (topk + scatter)",
           ((KTH, "top_values, top_ids = logits.topk(top_k, dim=-1)"),
            (KEEP, 'torch.full_like(logits, float("-inf")).scatter(-1, top_ids, top_values)')), _sampling.TIES_DROPPED),
    Mutant(6, "top_k above the vocabulary not guarded", ((TOP_K_IF, "if top_k is not None:"),),
           _sampling.TOP_K_ABOVE_VOCAB),
    Mutant(6, "top-k ignored", ((TOP_K_IF, "if False:"),), _sampling.TOP_K_IGNORED),
    Mutant(6, "global RNG instead of the generator", ((DRAW, DRAW.replace(", generator=generator", "")),),
           _sampling.GLOBAL_RNG),
    Mutant(6, "shape (B,) instead of (B, 1)", ((DRAW, DRAW + ".squeeze(-1)"),), _sampling.SHAPE_B),
    Mutant(6, "temperature 0 samples", ((GREEDY, "if temperature == 0:\n        temperature = 1e-6\n    if False:\n"
                                                 "        return None"),), _sampling.GREEDY_DRAWS),
    Mutant(6, "logits divided in place", ((DIVIDE, "logits /= temperature"),), _sampling.MODIFIES_LOGITS),
]

GENERATION_MUTANTS = [
    Mutant(8, "cache never used", ((STEP, "logits, cache = model(tokens)"),), _generation.CACHE_NEVER_USED),
    Mutant(8, "new cache not kept", ((STEP, STEP.replace("logits, cache =", "logits, _ =")),),
           _generation.CACHE_NOT_KEPT.split("{")[0]),
    Mutant(8, "whole sequence fed with the cache", ((STEP, STEP.replace("model(unseen", "model(tokens")),),
           _generation.WHOLE_WITH_CACHE),
    Mutant(8, "mode not restored", ((RESTORE, RESTORE.replace("model.train(mode_before)", "pass")),),
           _generation.MODE_NOT_RESTORED.split("{")[0]),
    Mutant(8, "mode restored only without an error",
           ((RESTORE, "        model.train(mode_before)\n        return tokens\n    finally:\n        pass"),),
           _generation.MODE_AFTER_ERROR),
    Mutant(8, "train mode", (("    model.eval()\n    try:", "    try:"),), _generation.TRAIN_MODE),
    Mutant(8, "gradients on", ((NO_GRAD, "def generate("),), _generation.BUILDS_GRAPH),
    Mutant(8, "global RNG instead of the generator", ((SAMPLE, SAMPLE.replace(", generator)", ")")),),
           _generation.GLOBAL_RNG),
    Mutant(8, "temperature not passed on", ((SAMPLE, SAMPLE.replace("temperature,", "1.0,")),),
           _generation.TEMPERATURE_DROPPED),
    Mutant(8, "top_k not passed on", ((SAMPLE, SAMPLE.replace("top_k,", "None,")),), _generation.TOP_K_DROPPED),
    Mutant(8, "logits of the first position", ((SAMPLE, SAMPLE.replace("[:, -1]", "[:, 0]")),),
           _generation.FIRST_POSITION),
    Mutant(8, "no ValueError past max_len", ((TOO_LONG, "if False:"),), "no ValueError was raised"),
    Mutant(8, "ValueError at max_len", ((TOO_LONG, TOO_LONG.replace(">", ">=")),), "which fits"),
]

MUTANTS = [
    # ---- Tasks 1-3 ----
    *ROTARY_MUTANTS,
    *ATTENTION_MUTANTS,
    *CACHE_MUTANTS,
    *API_MUTANTS,

    # ---- Tasks 4-6, 8 ----
    *BLOCK_MUTANTS,
    *MODEL_MUTANTS,
    *SAMPLING_MUTANTS,
    *GENERATION_MUTANTS,
]
