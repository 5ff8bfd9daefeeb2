"""Hidden cases of Tasks 1-6 and 8: other texts, merges, sizes, groupings, caches, block sizes, ranks, seeds.

A notebook that special-cases the visible inputs (or is right only for them) fails these. Every input obeys the
task's pinned contract (a text is any str, ids come from the tokenizer's own merges or are any bytes, a cache is
(keys, values) of shape (B, num_kv_heads, L_past, head_dim) with L_past + L <= max_len, a block size is any positive
int), so a correct answer in any formulation passes. Texts are drawn from a seeded torch.Generator over words of a
small alphabet (so pairs repeat and ties occur) with Unicode of every width mixed in; merges for Task 2 are the
reference train_bpe's on hidden texts (inputs, not expected values). Weights are random per role, drawn with the
shapes of the reference's modules.
"""
import torch

from checkers.llm import tiled as tiled_check

from grading.cases.parts import called, instance, module, randn, random_weights, recipe, watch
from .facts import ATTENTION_SLOTS, LORA_MERGE, LORA_SLOTS, LORA_START, PARAMETERS, RMS_SLOTS, SWIGLU_SLOTS
from .visible import SCORES, base_layer

SEED = 515151  # never a seed of the notebook, the checkers or the fixtures
TOLERANCE = dict(atol=1e-6, rtol=1e-6)
FLOAT32 = dict(atol=1e-5, rtol=1e-5)
ALPHABET = "abcdeé 日😀\t\n'"  # bytes of 1 to 4 in UTF-8, spaces that the pre-tokenizer keeps apart


def drawn_text(generator, length, alphabet=ALPHABET):
    """length characters drawn from alphabet (never starting "nn.", which a recipe reads as a torch class)."""
    picks = torch.randint(len(alphabet), (length,), generator=generator).tolist()
    return "".join(alphabet[i] for i in picks)


def drawn_words(generator, count, vocabulary=("the", "then", "cat", "cats", "a", "at", "héllo", "日本", "😀x")):
    """count words of a small vocabulary, joined by spaces, with a newline now and then."""
    picks = torch.randint(len(vocabulary), (count,), generator=generator).tolist()
    gaps = torch.randint(8, (count,), generator=generator).tolist()
    return "".join(vocabulary[i] + ("\n" if gap == 0 else " ") for i, gap in zip(picks, gaps))


def training_texts(generator):
    """(name, text, vocab_size) of Task 1's hidden cases."""
    return [("no merges asked", "hello hello", 256), ("a text of spaces only", "   \n\n  ", 270),
            ("one repeated character", "x" * 17, 270), ("ties of three pairs", "ab ba ab ba cd dc", 262),
            ("a lone surrogate and a pair", "a\udc80b \ud83d\ude00 a\udc80b", 266),
            ("words of a small vocabulary", drawn_words(generator, 300), 330),
            ("drawn characters", drawn_text(generator, 600), 320),
            ("tabs and carriage returns", "x\t\ty\r\n\r\n z\t\ty\r\n", 266),
            ("digits and punctuation", "3.14, 2.71; 1.41! (3.14) [2.71] 1.41?", 280)]


def training_cases(reference, generator):
    """Task 1: the merges on texts and vocabulary sizes the check never uses."""
    return [recipe(1, f"hidden: {name}, vocab_size {size}", False, call=called(text, size), values=True)
            for name, text, size in training_texts(generator)]


HAND_MADE = {"a chain (a, b), (ab, c), (abc, abc)": [(97, 98), (256, 99), (257, 257)],
             "(a, a) then (aa, aa)": [(97, 97), (256, 256)],
             "a later merge that applies first": [(98, 99), (97, 98), (256, 100)],
             "across bytes of one character": [(195, 169), (256, 32)]}


def encode_texts(generator):
    """Texts to encode: unseen characters, lone surrogates, runs, mixed scripts, empty."""
    return ["", "abcabc abc", "aaaaaaa aaaa", "aéé é", "\udfff", "x\ud800\udc00y", "the cat " * 5,
            drawn_words(generator, 40), drawn_text(generator, 120), "\U0001f600\u200d\U0001f600 ok"]


def tokenizer_cases(reference, generator):
    """Task 2: encode and decode under hand-made merges and under merges learnt from hidden texts."""
    learnt = {"learnt on words": reference["train_bpe"](drawn_words(generator, 200), 320),
              "learnt on drawn characters": reference["train_bpe"](drawn_text(generator, 400), 300)}
    cases = []
    for name, merges in {**HAND_MADE, **learnt}.items():
        built = instance("BPETokenizer", merges)
        for text in encode_texts(generator):
            cases.append(recipe(2, f"hidden: encode {text[:12]!r} with {name}", False, build=built,
                                call=called(text, method="encode"), values=True))
        ids = torch.randint(256 + len(merges), (30,), generator=generator).tolist()
        for label, tokens in (("drawn ids", ids), ("bytes of no UTF-8", [0xE6, 0x97, 99, 0xFF, 0x80]),
                              ("a character split over two ids", [0xC3, 0xA9, 32, 0xC3, 0xA9]), ("no ids", [])):
            cases.append(recipe(2, f"hidden: decode {label} with {name}", False, build=built,
                                call=called(tokens, method="decode"), values=True))
    return cases


def rms_norm_cases(reference, generator):
    """Task 3: widths 1 to 16, eps 1e-6 to 1, rows of small and large scales, float32, gradients."""
    cls, cases = reference["RMSNorm"], []
    for embed_dim, eps, shape, scale in ((1, 1e-6, (3, 1), 2.0), (7, 1e-6, (2, 3, 7), 1e-3), (16, 0.5, (4, 16), 1.0),
                                         (5, 1e-2, (1, 2, 3, 5), 30.0), (12, 1.0, (6, 12), 0.3)):
        weights = random_weights(cls, "RMSNorm", RMS_SLOTS, generator, embed_dim=embed_dim)
        built = module("RMSNorm", RMS_SLOTS, {"weight": weights["weight"] + 1.0}, embed_dim=embed_dim, eps=eps)
        x = randn(generator, *shape, scale=scale) + scale / 3
        cases.append(recipe(3, f"hidden: embed_dim {embed_dim}, eps {eps:g}, input {shape}", False, build=built,
                            call=called(x), **TOLERANCE))
    cases += [recipe(3, "hidden: gradients", False, build=built, grad=True, call=called(x), **TOLERANCE),
              recipe(3, "hidden: the default eps", False, build=module("RMSNorm", embed_dim=9),
                     call=called(randn(generator, 4, 9, scale=1e-3)), **TOLERANCE),
              recipe(3, "hidden: a fresh weight of width 11", False, build=module("RMSNorm", embed_dim=11),
                     attribute="weight", atol=0.0),
              recipe(3, "hidden: one parameter of width 11", False, build=module("RMSNorm", embed_dim=11),
                     facts=[PARAMETERS]),
              recipe(3, "hidden: float32, module built under float32", False, call=called(x.float()), **FLOAT32,
                     build=module("RMSNorm", dtype="float32", native=True, embed_dim=12, eps=1.0)),
              recipe(3, "hidden: bfloat16 module and input, a bfloat16 output", False, atol=0.05, rtol=0.05,
                     build=module("RMSNorm", dtype="bfloat16", embed_dim=12, eps=1.0), call=called(x.bfloat16()))]
    return cases


def swiglu_cases(reference, generator):
    """Task 4: other widths (hidden narrower and wider than embed_dim), 2-D to 4-D inputs, float32, gradients."""
    cls, cases = reference["SwiGLU"], []
    for embed_dim, hidden_dim, shape in ((4, 16, (2, 3, 4)), (9, 5, (7, 9)), (8, 8, (1, 2, 3, 8)), (3, 1, (5, 3))):
        sizes = dict(embed_dim=embed_dim, hidden_dim=hidden_dim)
        weights = random_weights(cls, "SwiGLU", SWIGLU_SLOTS, generator, scale=0.8, **sizes)
        built = module("SwiGLU", SWIGLU_SLOTS, weights, **sizes)
        x = randn(generator, *shape, scale=1.5)
        cases += [recipe(4, f"hidden: {embed_dim} -> {hidden_dim} -> {embed_dim}, input {shape}", False,
                         build=built, call=called(x), **TOLERANCE),
                  recipe(4, f"hidden: parameters of {embed_dim} -> {hidden_dim}", False,
                         build=module("SwiGLU", **sizes), facts=[PARAMETERS])]
    cases += [recipe(4, "hidden: gradients", False, build=built, grad=True, call=called(x), **TOLERANCE),
              recipe(4, "hidden: float32, module built under float32", False, call=called(x.float()), **FLOAT32,
                     build=module("SwiGLU", SWIGLU_SLOTS, weights, "float32", native=True, embed_dim=3, hidden_dim=1))]
    return cases


def cache_of(generator, batch, kv_heads, past, head_dim):
    """A (keys, values) cache of `past` positions: any tensors of the pinned shape are a valid cache."""
    return randn(generator, batch, kv_heads, past, head_dim), randn(generator, batch, kv_heads, past, head_dim)


def attention_cases(reference, generator):
    """Task 5: groupings of 1 to 6 query heads per key/value head, caches of 1 to 9 up to max_len, float32,
    gradients."""
    cls, cases = reference["GroupedQueryAttention"], []
    for embed_dim, heads, kv_heads, batch, seq_len, past, max_len in (
            (24, 6, 3, 2, 5, 3, 16), (24, 6, 2, 1, 4, 2, 8), (16, 8, 1, 2, 3, 9, 12), (8, 2, 2, 3, 6, 1, 7),
            (12, 6, 6, 1, 1, 0, 4), (20, 2, 1, 2, 7, 0, 7)):
        sizes = dict(embed_dim=embed_dim, num_heads=heads, num_kv_heads=kv_heads, max_len=max_len)
        weights = random_weights(cls, "GroupedQueryAttention", ATTENTION_SLOTS, generator, **sizes)
        built = module("GroupedQueryAttention", ATTENTION_SLOTS, weights, **sizes)
        x = randn(generator, batch, seq_len, embed_dim)
        shape = f"{heads} query heads on {kv_heads} key/value heads, input {tuple(x.shape)}"
        cases.append(recipe(5, f"hidden: {shape}", False, build=built, call=called(x), **TOLERANCE))
        if past:
            cache = cache_of(generator, batch, kv_heads, past, embed_dim // heads)
            cases.append(recipe(5, f"hidden: {shape}, after a cache of {past}", False, build=built,
                                call=called(x, cache=cache), **TOLERANCE))
    cases += [recipe(5, "hidden: gradients with a cache", False, build=built, grad=True,
                     call=called(x[:, :3], cache=cache_of(generator, 2, 1, 4, 10)), **TOLERANCE),
              recipe(5, "hidden: float32, module built under float32", False, call=called(x.float()), **FLOAT32,
                     build=module("GroupedQueryAttention", ATTENTION_SLOTS, weights, "float32", native=True,
                                  **sizes))]
    return cases


def tiled_cases(reference, generator):
    """Task 6: block sizes 1 to past L, lengths 1 to 50, causal or not, float64 and float32, large scores, and no call
    of a fused attention."""
    cases = []
    for (batch, heads, seq_len, head_dim), block in (((2, 3, 11, 4), 1), ((1, 2, 50, 8), 7), ((1, 1, 1, 5), 4),
                                                     ((2, 1, 16, 6), 16), ((1, 2, 9, 3), 20), ((3, 2, 23, 2), 5)):
        query, key, value = (randn(generator, batch, heads, seq_len, head_dim) for _ in range(3))
        for causal in (False, True):
            cases.append(recipe(6, f"hidden: L {seq_len}, head_dim {head_dim}, block {block}, causal {causal}", False,
                                call=called(query, key, value, block, causal), **TOLERANCE))
    large = randn(generator, 1, 2, 30, 8).sign() * 9.0  # scores near ±230 between rows of (un)equal signs
    mixed = randn(generator, 1, 2, 30, 8)
    cases += [recipe(6, f"hidden: scores near ±230, causal {causal}", False,
                     call=called(large, large, mixed, 6, causal), **TOLERANCE) for causal in (False, True)]
    cases += [recipe(6, "hidden: float32 inputs", False, atol=tiled_check.ATOL, rtol=tiled_check.RTOL,
                     call=called(query.float(), key.float(), value.float(), 4, True)),
              recipe(6, "hidden: bfloat16 inputs, a bfloat16 output", False, atol=0.05, rtol=0.05,
                     call=called(query.bfloat16(), key.bfloat16(), value.bfloat16(), 4, True)),
              recipe(6, "hidden: neither a fused attention call nor the L × L scores", False,
                     call=called(query, key, value, 5, True), watch=watch(**SCORES, length=query.size(-2)),
                     **TOLERANCE)]
    return cases


def lora_cases(reference, generator):
    """Task 8: ranks 1 to 4, alphas 1 to 16, square and non-square layers, a base without a bias, 2-D to 4-D inputs."""
    cases = []
    for out_features, in_features, rank, alpha, bias, shape in ((5, 5, 1, 1.0, True, (3, 5)),
                                                                (3, 9, 4, 16.0, False, (2, 2, 9)),
                                                                (10, 4, 2, 3.0, True, (1, 2, 3, 4))):
        weights = {"base.weight": randn(generator, out_features, in_features),
                   "A": randn(generator, rank, in_features), "B": randn(generator, out_features, rank)}
        if bias:
            weights["base.bias"] = randn(generator, out_features)
        settings = dict(base=base_layer(weights), rank=rank, alpha=alpha)
        built = module("LoRALinear", LORA_SLOTS, {role: weights[role] for role in ("A", "B")}, **settings)
        name = f"{in_features} -> {out_features}, rank {rank}, alpha {alpha:g}, {'a' if bias else 'no'} bias"
        x = randn(generator, *shape)
        cases += [recipe(8, f"hidden: {name}, at the start", False, build=module("LoRALinear", **settings),
                         facts=[LORA_START]),
                  recipe(8, f"hidden: {name}, outputs", False, build=built, call=called(x), **TOLERANCE),
                  recipe(8, f"hidden: {name}, gradients", False, build=built, grad=True, call=called(x), **TOLERANCE),
                  recipe(8, f"hidden: {name}, merge()", False, build=built, facts=[LORA_MERGE])]
    return cases


HIDDEN = {1: training_cases, 2: tokenizer_cases, 3: rms_norm_cases, 4: swiglu_cases, 5: attention_cases,
          6: tiled_cases, 8: lora_cases}


def hidden_cases(task, reference):
    """The hidden cases of one task, drawn from a seed of their own."""
    generator = torch.Generator().manual_seed(SEED + task)
    return HIDDEN[task](reference, generator)
