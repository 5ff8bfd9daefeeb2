"""Known student mistakes of the gpt assignment, each a few edits of the reference source (the solutions notebook).
See course/mistakes/transformer.py for how they are used. Instructor-side only: never shipped.
"""
from checkers.gpt import block as _block, model as _model, sampling as _sampling
from course.mistakes import Mutant

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
GREEDY = "if temperature == 0:\n        return logits.argmax(dim=-1, keepdim=True)"

BLOCK_MUTANTS = [
    Mutant(4, "post-norm", ((BLOCK_ATTENTION, BLOCK_ATTENTION.replace("self.norm1(x)", "x")),
                            (BLOCK_RESIDUAL, "x = self.norm1(x + self.dropout(attended))"),
                            (BLOCK_FEEDFORWARD, "x = self.norm2(x + self.dropout(self.feedforward(x)))")),
           _block.POST_NORM),
    Mutant(4, "post-norm attention", ((BLOCK_ATTENTION, BLOCK_ATTENTION.replace("self.norm1(x)", "x")),
                                      (BLOCK_RESIDUAL, "x = self.norm1(x + self.dropout(attended))")),
           _block.POST_NORM_ATTENTION),
    Mutant(4, "post-norm feed-forward",
           ((BLOCK_FEEDFORWARD, "x = self.norm2(x + self.dropout(self.feedforward(x)))"),), _block.POST_NORM_FEEDFORWARD),
    Mutant(4, "no residual around the attention", ((BLOCK_RESIDUAL, "x = self.dropout(attended)"),),
           _block.NO_RESIDUAL.format(name="the attention", formula=_block.ATTENTION_FORMULA)),
    Mutant(4, "no residual around the feed-forward network",
           ((BLOCK_FEEDFORWARD, "x = self.dropout(self.feedforward(self.norm2(x)))"),),
           _block.NO_RESIDUAL.format(name="the feed-forward network", formula=_block.FEEDFORWARD_FORMULA)),
    Mutant(4, "norms swapped", ((BLOCK_ATTENTION, BLOCK_ATTENTION.replace("norm1", "norm2")),
                                (BLOCK_FEEDFORWARD, BLOCK_FEEDFORWARD.replace("norm2", "norm1"))), _block.NORMS_SWAPPED),
    Mutant(4, "activation argument ignored", ((BLOCK_FFN, BLOCK_FFN.replace("activation()", "nn.GELU()")),),
           "the `activation` argument is never called"),
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
    Mutant(5, "max_len not stored", ((GPT_MAX_LEN, "self.token_embedding"),), "GPT.max_len should store"),
]

SAMPLING_MUTANTS = [
    Mutant(6, "temperature after the softmax", ((DIVIDE, "logits = logits"),
                                                (DRAW, DRAW.replace("dim=-1)", "dim=-1) / temperature"))),
           _sampling.TEMPERATURE_AFTER_SOFTMAX),
    Mutant(6, "temperature multiplied", ((DIVIDE, "logits = logits * temperature"),), _sampling.TEMPERATURE_MULTIPLIED),
    Mutant(6, "top-k keeps the smallest logits", ((KTH, KTH.replace("dim=-1)", "dim=-1, largest=False)")),
                                                  (KEEP, KEEP.replace("<", ">"))), _sampling.TOP_K_SMALLEST),
    Mutant(6, "top-k keeps k - 1", ((KEEP, KEEP.replace("<", "<=")),), _sampling.TOP_K_MINUS_ONE),
    Mutant(6, "top-k ignored", ((TOP_K_IF, "if False:"),), _sampling.TOP_K_IGNORED),
    Mutant(6, "global RNG instead of the generator", ((DRAW, DRAW.replace(", generator=generator", "")),),
           _sampling.GLOBAL_RNG),
    Mutant(6, "shape (B,) instead of (B, 1)", ((DRAW, DRAW + ".squeeze(-1)"),), _sampling.SHAPE_B),
    Mutant(6, "temperature 0 samples", ((GREEDY, "if temperature == 0:\n        temperature = 1e-6\n    if False:\n"
                                                 "        return None"),), _sampling.GREEDY_DRAWS),
    Mutant(6, "logits divided in place", ((DIVIDE, "logits /= temperature"),), _sampling.MODIFIES_LOGITS),
]

MUTANTS = [
    # ---- Tasks 1-3 ----

    # ---- Tasks 4-6, 8 ----
    *BLOCK_MUTANTS,
    *MODEL_MUTANTS,
    *SAMPLING_MUTANTS,
]
