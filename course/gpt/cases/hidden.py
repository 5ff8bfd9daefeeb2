"""Hidden cases of Tasks 1-6 and 8: other head sizes, bases, offsets, caches, activations, sampling settings, seeds.

A notebook that special-cases the visible inputs (or is right only for them) fails these. Every input obeys the
task's pinned contract (offset + L <= max_len, a cache of (B, H, L_past, head_dim) keys and values, logits without
ties unless a case is about ties), so a correct answer in any formulation passes; the pinned errors (a ValueError past
max_len) are cases too. Weights are random per role, drawn with the shapes of the reference's modules. Sampling and
generation draw from a seeded torch.Generator made in the probe (checkers.gpt._standin), whose use is compared, and
generation runs on the checks' fixed-logits stand-in model (checkers.gpt._scripted), whose report says how generate
drove it (positions fed per call, mode, gradients, the mode it was left in).
"""
import torch

from checkers.gpt import rotary as rotary_check

from grading.cases.parts import called, helper, module, randn, random_weights, recipe
from .facts import MAX_LEN, ROTARY, ROTARY_TABLES

SEED = 919191  # never a seed of the notebook, the checkers or make_fixtures
TOLERANCE = dict(atol=1e-6, rtol=1e-6)
ROLES = "checkers.gpt._roles"  # the weight roles of each module the cases build
ATTENTION, BLOCK, GPT_SLOTS = (f"{ROLES}:{name}" for name in ("attention_slots", "block_slots", "gpt_slots"))
STANDIN = "checkers.gpt._standin"  # the generator and the reports


def natural(weights, generator):
    """Every LayerNorm's scale near 1 and shift near 0, as training keeps them (random signs would wash out the
    input, and the outputs would hardly tell mistakes apart)."""
    return {role: (1.0 if role.endswith("weight") else 0.0) + randn(generator, *value.shape, scale=0.2)
            if "norm" in role else value for role, value in weights.items()}


def rotary_tolerance(last_position):
    """The check's tolerance for rotated positions up to last_position: angles p·theta_i computed in float32 (a
    correct answer the check accepts) are off by about p float32 steps, so the check's far tolerance (positions 2040
    to 2043) is scaled down to p, never below the near one."""
    scale = min(1.0, last_position / 2043)
    return dict(atol=max(rotary_check.ATOL, rotary_check.FAR_ATOL * scale),
                rtol=max(rotary_check.RTOL, rotary_check.FAR_RTOL * scale))


def rotary_cases(reference, generator):
    """Task 1: head_dim 2 to 16, bases 100 to 500,000, offsets up to max_len's end, float32, gradients."""
    cases = []
    for head_dim, max_len, base, (batch, heads, seq_len), offset in (
            (2, 16, 10000.0, (1, 1, 5), 0), (6, 40, 10000.0, (2, 3, 7), 3), (10, 64, 100.0, (1, 2, 9), 55),
            (16, 2048, 10000.0, (2, 1, 4), 2040), (8, 32, 500000.0, (3, 2, 1), 31), (12, 20, 10000.0, (1, 4, 20), 0)):
        built = module("RotaryEmbedding", head_dim=head_dim, max_len=max_len, base=base)
        x = randn(generator, batch, heads, seq_len, head_dim, scale=2.0)
        call = called(x, offset=offset) if offset else called(x)
        name = f"hidden: head_dim {head_dim}, base {base:g}, input {tuple(x.shape)}, offset {offset}"
        cases.append(recipe(1, name, False, build=built, call=call, **rotary_tolerance(offset + seq_len - 1)))
    x = randn(generator, 2, 2, 6, 8)
    built = module("RotaryEmbedding", head_dim=8, max_len=24)
    cases += [recipe(1, "hidden: offset given by position", False, build=built, call=called(x, 11),
                     **rotary_tolerance(16)),
              recipe(1, "hidden: one position past max_len", False, build=built,
                     call=called(x, offset=19, raises=True)),
              recipe(1, "hidden: the tables cos and sin: non-persistent buffers in the default dtype", False,
                     build=module("RotaryEmbedding", dtype="float32", native=True, head_dim=6, max_len=9),
                     facts=[ROTARY]),
              recipe(1, "hidden: gradients", False, build=built, grad=True, call=called(x, offset=7),
                     **rotary_tolerance(12)),
              recipe(1, "hidden: float32, module built under float32", False, call=called(x.float(), offset=17),
                     build=module("RotaryEmbedding", dtype="float32", native=True, head_dim=8, max_len=24),
                     atol=1e-5, rtol=1e-5),
              recipe(1, "hidden: float16 input, module built under float32", False, atol=0.02, rtol=0.01,
                     call=called(x.to(torch.float16), offset=5),
                     build=module("RotaryEmbedding", dtype="float32", native=True, head_dim=8, max_len=24))]
    return cases


def attention_cases(reference, generator):
    """Task 2 (cache=None): 1 to 4 heads, head_dim 2, one token, rope=False, attention weights, float32, gradients."""
    cls, cases = reference["CausalSelfAttention"], []
    for embed_dim, heads, batch, seq_len, max_len in ((12, 3, 2, 5, 32), (8, 1, 1, 7, 7), (16, 4, 3, 6, 40),
                                                      (6, 3, 2, 4, 16), (24, 2, 1, 1, 8)):
        sizes = dict(embed_dim=embed_dim, num_heads=heads, max_len=max_len)
        weights = random_weights(cls, "CausalSelfAttention", ATTENTION, generator, **sizes)
        built = module("CausalSelfAttention", ATTENTION, weights, **sizes)
        x = randn(generator, batch, seq_len, embed_dim)
        shape = f"{heads} heads of {embed_dim // heads}, input {tuple(x.shape)}"
        cases += [recipe(2, f"hidden: {shape}", False, build=built, call=called(x), **TOLERANCE),
                  recipe(2, f"hidden: {shape}, attention weights", False, build=built,
                         call=called(x, return_attention=True), **TOLERANCE)]
    cases += [
        recipe(2, "hidden: the rotary tables cover max_len", False, build=built, facts=[ROTARY_TABLES]),
        recipe(2, "hidden: rope=False", False, call=called(x, return_attention=True), **TOLERANCE,
               build=module("CausalSelfAttention", ATTENTION, weights, **sizes, rope=False)),
        recipe(2, "hidden: gradients", False, build=module("CausalSelfAttention", ATTENTION, weights, **sizes),
               grad=True, call=called(randn(generator, 2, 6, embed_dim)), **TOLERANCE),
        recipe(2, "hidden: float32, module built under float32", False, call=called(x.float()), atol=1e-5, rtol=1e-5,
               build=module("CausalSelfAttention", ATTENTION, weights, "float32", native=True, **sizes))]
    return cases


def cache_of(generator, batch, heads, past, head_dim):
    """A (keys, values) cache of `past` positions: any tensors of the pinned shape are a valid cache."""
    return randn(generator, batch, heads, past, head_dim), randn(generator, batch, heads, past, head_dim)


def cache_cases(reference, generator):
    """Task 3: one and several new positions after caches of 1 to 9, up to max_len, rope=False, gradients."""
    cls, cases = reference["CausalSelfAttention"], []
    for embed_dim, heads, batch, past, seq_len, max_len in ((12, 3, 2, 5, 1, 32), (8, 2, 1, 3, 4, 16),
                                                            (16, 4, 3, 1, 2, 20), (6, 1, 2, 9, 1, 10)):
        sizes = dict(embed_dim=embed_dim, num_heads=heads, max_len=max_len)
        weights = random_weights(cls, "CausalSelfAttention", ATTENTION, generator, **sizes)
        built = module("CausalSelfAttention", ATTENTION, weights, **sizes)
        x, cache = randn(generator, batch, seq_len, embed_dim), cache_of(generator, batch, heads, past,
                                                                          embed_dim // heads)
        shape = f"{heads} heads, {seq_len} new position{'s' * (seq_len > 1)} after {past} cached"
        cases += [recipe(3, f"hidden: {shape}", False, build=built, call=called(x, cache=cache), **TOLERANCE),
                  recipe(3, f"hidden: {shape}, attention weights", False, build=built,
                         call=called(x, cache, return_attention=True), **TOLERANCE)]
    cases += [
        recipe(3, "hidden: rope=False with a cache", False, call=called(x, cache=cache, return_attention=True),
               build=module("CausalSelfAttention", ATTENTION, weights, **sizes, rope=False), **TOLERANCE),
        recipe(3, "hidden: gradients with a cache", False, build=built, grad=True, call=called(x, cache=cache),
               **TOLERANCE)]
    return cases


def block_cases(reference, generator):
    """Task 4: GELU, ReLU and Tanh, with and without a cache, dropout in eval and train mode, gradients."""
    cls, cases = reference["GPTBlock"], []
    sizes = dict(embed_dim=12, num_heads=3, feedforward_dim=20, max_len=16)
    x, cache = randn(generator, 3, 5, 12), cache_of(generator, 3, 3, 4, 4)
    for activation in ("nn.GELU", "nn.ReLU", "nn.Tanh"):
        weights = natural(random_weights(cls, "GPTBlock", BLOCK, generator, activation=activation, **sizes),
                          generator)
        built = module("GPTBlock", BLOCK, weights, activation=activation, **sizes)
        cases += [recipe(4, f"hidden: {activation}", False, build=built, call=called(x), **TOLERANCE),
                  recipe(4, f"hidden: {activation}, with a cache of 4", False, build=built,
                         call=called(x[:, :2], cache=cache), **TOLERANCE),
                  recipe(4, f"hidden: {activation}, gradients", False, build=built, grad=True, call=called(x),
                         **TOLERANCE)]
    cases += [
        recipe(4, "hidden: dropout=0.0 in train mode", False, call=called(x), **TOLERANCE,
               build=module("GPTBlock", BLOCK, weights, activation="nn.Tanh", dropout=0.0, mode="train", **sizes)),
        recipe(4, "hidden: dropout=0.4 in eval mode", False, call=called(x), **TOLERANCE,
               build=module("GPTBlock", BLOCK, weights, activation="nn.Tanh", dropout=0.4, **sizes)),
        recipe(4, "hidden: dropout=0.4 in train mode", False, compare="differ", call=called(x, repeat=2),
               build=module("GPTBlock", BLOCK, weights, activation="nn.Tanh", dropout=0.4, mode="train", **sizes))]
    # Both sub-layers output zeros, so dropout on them changes nothing: the block must give x back unless dropout
    # acts on the residual stream itself.
    silent = dict(weights, **{role: torch.zeros_like(value) for role, value in weights.items()
                              if role.startswith(("attention.o_proj.", "feedforward.out."))})
    cases.append(recipe(4, "hidden: dropout=0.5 in train mode, sub-layers silenced", False, call=called(x),
                        build=module("GPTBlock", BLOCK, silent, activation="nn.Tanh", dropout=0.5, mode="train",
                                     **sizes), **TOLERANCE))
    # One sub-layer at a time, the other silenced: its output must get dropout (or dropout inside it).
    outputs = {"attention": "attention.o_proj.", "feed-forward": "feedforward.out."}
    for kept, prefix in outputs.items():
        alone = dict(weights, **{role: torch.zeros_like(value) for role, value in weights.items()
                                 if role.startswith(tuple(outputs.values())) and not role.startswith(prefix)})
        cases.append(recipe(4, f"hidden: dropout=0.5 in train mode, {kept} alone", False, compare="differ",
                            build=module("GPTBlock", BLOCK, alone, activation="nn.Tanh", dropout=0.5, mode="train",
                                         **sizes), call=called(x, repeat=2)))
    return cases


def model_cases(reference, generator):
    """Task 5: other sizes, 3 blocks, a cache per block, a batch of one, max_len kept, dropout, gradients."""
    cls = reference["GPT"]
    config = dict(vocab_size=11, embed_dim=12, num_heads=3, feedforward_dim=24, num_layers=3, max_len=20)
    weights = natural(random_weights(cls, "GPT", GPT_SLOTS, generator, scale=0.3, **config), generator)
    built = module("GPT", GPT_SLOTS, weights, **config)
    tokens = torch.randint(11, (3, 7), generator=generator)  # (B, L)
    caches = [cache_of(generator, 3, 3, 6, 4) for _ in range(3)]  # one (keys, values) per block
    return [
        recipe(5, "hidden: 3 blocks, vocabulary 11", False, build=built, call=called(tokens), **TOLERANCE),
        recipe(5, "hidden: a batch of one", False, build=built, call=called(tokens[1:2]), **TOLERANCE),
        recipe(5, "hidden: two new tokens after a cache of 6 per block", False, build=built,
               call=called(tokens[:, :2], cache=caches), **TOLERANCE),
        recipe(5, "hidden: max_len is kept as self.max_len", False, build=built, facts=[MAX_LEN]),
        recipe(5, "hidden: gradients", False, build=built, grad=True, call=called(tokens), **TOLERANCE),
        recipe(5, "hidden: dropout=0.5 in train mode", False, compare="differ", call=called(tokens, repeat=2),
               build=module("GPT", GPT_SLOTS, weights, mode="train", **dict(config, dropout=0.5))),
    ]


def seeded(seed):
    """A torch.Generator in the state manual_seed(seed) gives, made in the probe; how much the call drew from it is
    compared too (checkers.gpt._standin:generator_used)."""
    return helper(f"{STANDIN}:seeded_generator", f"{STANDIN}:generator_used", seed=seed)


def distinct_logits(generator, rows, vocab_size, scale=1.5):
    """(rows, V) logits without ties (a tie makes argmax and the k-th largest ambiguous)."""
    logits = randn(generator, rows, vocab_size, scale=scale)
    return logits + torch.arange(vocab_size, dtype=torch.float64) * 1e-3  # (rows, V)


def sampling_cases(reference, generator):
    """Task 6: greedy, temperatures 0.5 to 3, top-k of 1 to more than V (ties kept), exact draws of seeded
    generators over 300 rows (three distributions, 100 draws each), float32, positional arguments."""
    few = distinct_logits(generator, 3, 7)  # (3, V)
    logits = few.repeat_interleave(100, dim=0)  # (300, V): 100 draws from each of 3 distributions
    tied = torch.tensor([[2.0, 1.0, 1.0, 1.0, 0.5, -1.0, 0.0]] * 200, dtype=torch.float64)  # 3rd largest tied
    cases = [("temperature 0 (greedy)", called(few, 0.0)),
             ("temperature 0 (greedy), a generator by position", called(few, 0.0, None, seeded(4))),
             ("temperature=0 by keyword, with a generator", called(few, temperature=0, generator=seeded(3))),
             ("temperature 1", called(logits, generator=seeded(11))),
             ("temperature 0.5", called(logits, temperature=0.5, generator=seeded(12))),
             ("temperature 3", called(logits, temperature=3.0, generator=seeded(13))),
             ("top_k=1", called(logits, temperature=1.0, top_k=1, generator=seeded(14))),
             ("top_k=3, temperature 0.8", called(logits, temperature=0.8, top_k=3, generator=seeded(15))),
             ("top_k equal to the vocabulary", called(logits, top_k=7, generator=seeded(16))),
             ("top_k larger than the vocabulary", called(logits, top_k=10, generator=seeded(17))),
             ("top_k=3 with the 3rd largest logit tied", called(tied, top_k=3, generator=seeded(18))),
             ("arguments by position", called(logits, 1.5, 2, seeded(19))),
             ("a batch of one", called(few[1:2], temperature=2.0, generator=seeded(20))),
             ("float32 logits", called(logits.float(), temperature=0.7, generator=seeded(21))),
             ("large logits (every row raised by 1000)", called(logits + 1000.0, generator=seeded(22)))]
    return [recipe(6, f"hidden: {name}", False, call=call) for name, call in cases]


def standin(table, max_len=16, mode="eval", fail_at=None):
    """The fixed-logits stand-in for generate (checkers.gpt._scripted:FixedLogitsModel) and its report."""
    return helper("checkers.gpt._scripted:FixedLogitsModel", f"{STANDIN}:observed", mode, table=table, max_len=max_len,
                  fail_at=fail_at)


def generation_cases(reference, generator):
    """Task 8: greedy and sampled, with and without the cache, top-k, train mode, max_len reached and passed, an error
    in the model (the mode given back), one prompt."""
    table, other = distinct_logits(generator, 9, 9), distinct_logits(generator, 9, 9, scale=3.0)  # (V, V) each
    prompt = torch.randint(9, (3, 4), generator=generator)  # (B, P)
    cases = [
        ("greedy, with the cache", called(standin(table), prompt, 6, temperature=0)),
        ("greedy, without the cache", called(standin(table), prompt, 6, temperature=0, use_cache=False)),
        ("temperature 1, with the cache", called(standin(table), prompt, 7, generator=seeded(31))),
        ("temperature 1, without the cache", called(standin(table), prompt, 7, use_cache=False, generator=seeded(31))),
        ("temperature 0.7, top_k=4", called(standin(other), prompt, 5, temperature=0.7, top_k=4,
                                            generator=seeded(32))),
        ("model in train mode", called(standin(table, mode="train"), prompt, 4, temperature=1.3,
                                       generator=seeded(33))),
        ("up to max_len exactly", called(standin(other, max_len=10), prompt, 6, temperature=1.0,
                                         generator=seeded(34))),
        ("one prompt of one token", called(standin(other), prompt[2:, :1], 8, temperature=0.9, generator=seeded(35))),
        ("arguments by position", called(standin(table), prompt, 3, 1.1, 5, False, seeded(36))),
        ("one token past max_len", called(standin(table, max_len=9), prompt, 6, temperature=0, raises=True)),
        ("an error in the model's third call, train mode", called(standin(table, mode="train", fail_at=2), prompt, 5,
                                                                   generator=seeded(37), raises=True)),
    ]
    return [recipe(8, f"hidden: {name}", False, call=call) for name, call in cases]


HIDDEN = {1: rotary_cases, 2: attention_cases, 3: cache_cases, 4: block_cases, 5: model_cases, 6: sampling_cases,
          8: generation_cases}


def hidden_cases(task, reference):
    """The hidden cases of one task, drawn from a seed of their own."""
    generator = torch.Generator().manual_seed(SEED + task)
    return HIDDEN[task](reference, generator)
