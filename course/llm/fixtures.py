"""How the llm assignment's fixtures are built: small constructed texts and hand-made merges, run through the
reference (every task answered by definitions: 1-6 and 8).

Merge lists and id lists are stored as padded LongTensors (checkers/llm/_bpe.py), so that tools/make_fixtures.py
stores each known mistake's output beside the reference's (course/llm/mistakes.py); `make fixtures ASSIGNMENT=llm`
writes checkers/llm/fixtures/. Instructor-side only: the fixtures ship, these builders do not.
"""

from collections import Counter

import torch
import torch.nn as nn

from checkers._weights import attention_slots
from checkers.llm._bpe import padded_ids, padded_merges, unpadded
from checkers.llm._roles import rms_norm_slots, swiglu_slots
from checkers.llm.layers import RMS_DETACHED
from course.transformer.fixtures import randomize, weights
from course_lib.llm import PRETOKENIZE

OUTPUT_KEYS = ("merges", "ids", "outputs", "merged_outputs",  # Tasks 1-2, 3-4 and 6, 8
               "new_keys", "new_values", "continued", "continued_keys", "continued_values")  # Task 5

# ---- Task 1: train_bpe ----
TRAINER_PROBES = {  # name: (text, vocab_size); what each one isolates
    "empty text": ("", 300),  # no pair at all: no merge
    "one pair": ("ab", 300),  # one merge, then none left
    "one byte": ("a", 257),
    "ten merges": ("the cat sat on the mat, the end", 266),  # vocab_size counts the 256 bytes
    "a three-way tie": ("ab cd", 257),  # greater, smaller and first-seen ties all differ
    "bytes against ids": ("xy ab ab ab abc", 259),  # (b'x', b'y') against (b' ab', b'c'): ids 120, 121 vs 257, 99
    "pairs across words": ("x y x y x y", 257),  # (b'x', b' ') would win across words
    "word frequencies": ("zz zz zz zz ka kb kc", 257),  # (z, z) wins by frequency, (' ', k) by distinct words
    "overlaps": ("aaaaa", 259),
    "overlaps in several words": ("aaa aaaa aaaaa", 262),
    "broken Unicode": ("x\ud800y x\ud800y x\ud800y", 260),  # a lone surrogate: 3 bytes with surrogatepass
    "mixed text": ("hello hello world, héllo wörld 😀😀 日本 日本語\n\n  the  cat's   cat\t\tcat 123 1234!!", 300),
}
# The timed text (checkers/llm/training.py: SPEED_LIMIT): a few frequent words and many that occur once, over two
# disjoint alphabets, as prose has a few function words making up much of it and most distinct words occurring once.
# The first merges all join letters of the frequent words, so an incremental trainer touches a handful of words per
# merge, where a full recount goes over every distinct word again. The check compares the CPU time to TIMED_MERGES
# merges with the time to the first alone; 30 set the valid trainers (about 1 time) and the full recounts (7 and
# more) far apart and keep a full recount's check within a second (the slowest held-out one: 0.5-0.8 s at load 4).
TIMED_MERGES = 30
FREQUENT_LETTERS, RARE_LETTERS = "abcdefgh", "ijklmnopqrstuvwx"
FREQUENT_WORDS, FREQUENT_REPEATS, RARE_WORDS = 12, (200, 100), 1200  # repeats run from 200 (first word) to 100


def drawn_word(generator, letters, shortest, longest):
    """A word of shortest..longest letters drawn uniformly from letters."""
    length = int(torch.randint(shortest, longest + 1, (1,), generator=generator))
    return "".join(letters[i] for i in torch.randint(0, len(letters), (length,), generator=generator).tolist())


def distinct_words(generator, count, letters, shortest, longest):
    """count distinct drawn words, in the order drawn."""
    words = {}
    while len(words) < count:
        words.setdefault(drawn_word(generator, letters, shortest, longest))
    return list(words)


def merge_rows(vocab_size):
    """Rows a probe's padded merges keep: room for a mistake that makes up to twice the merges due."""
    return 2 * (vocab_size - 256) + 4


def timed_text(generator):
    """FREQUENT_WORDS words of 3-6 letters repeated 200 down to 100 times and RARE_WORDS words of 6-9 other letters
    once each, shuffled, one per line (about 20,000 characters). Drawn from torch's generator, so every Python gets
    the same text (the help topics differ)."""
    frequent = distinct_words(generator, FREQUENT_WORDS, FREQUENT_LETTERS, 3, 6)
    repeats = torch.linspace(*FREQUENT_REPEATS, FREQUENT_WORDS).long().tolist()
    words = [word for word, times in zip(frequent, repeats) for _ in range(times)]
    words += distinct_words(generator, RARE_WORDS, RARE_LETTERS, 6, 9)
    order = torch.randperm(len(words), generator=generator).tolist()
    return "\n".join(words[i] for i in order)


def trainer_probe(ref, text, vocab_size):
    """One train_bpe run: its padded merges; a run that raises (a planted mistake) stores none."""
    probe = dict(text=text, vocab_size=vocab_size)
    try:
        probe["merges"] = padded_merges(ref["train_bpe"](text, vocab_size), merge_rows(vocab_size))
    except Exception:  # noqa: BLE001 -- a mistake that crashes has no merges to recognise; the reference never does
        pass
    return probe


def prefix_counts(ref, text, merges):
    """LongTensor (rows, 4) of [k, a, b, count]: the pair counts of the text (each word weighted by its frequency)
    after each prefix merges[:k] of the reference's merges, k = 0 .. len(merges): what Task 1's check reads to tell
    what a wrong merge k joined (checkers/llm/_replay.py), without a trainer of its own in what students receive."""
    words = Counter(tuple(word.encode("utf-8", errors="surrogatepass")) for word in PRETOKENIZE.findall(text))
    rows = []
    for k in range(len(merges) + 1):
        counts = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                counts[pair] += count
        rows += [[k, a, b, count] for (a, b), count in sorted(counts.items())]
        if k < len(merges):
            merged = Counter()
            for word, count in words.items():
                merged[tuple(ref["merge_word"](list(word), merges[k], 256 + k))] += count
            words = merged
    return torch.tensor(rows, dtype=torch.long).reshape(-1, 4)


def trainer_fixture(ref, generator):
    """Task 1: train_bpe on each constructed probe (with the pair counts after each of its merges), and on the timed
    made-up text."""
    probes = {name: trainer_probe(ref, text, vocab_size) for name, (text, vocab_size) in TRAINER_PROBES.items()}
    for probe in probes.values():
        if "merges" in probe:
            probe["counts"] = prefix_counts(ref, probe["text"], unpadded(probe["merges"]))
    return dict(probes=probes, speed=trainer_probe(ref, timed_text(generator), 256 + TIMED_MERGES))


# ---- Task 2: BPETokenizer ----
SAMPLE = "hello héllo 😀 日本語  \n\n\t the cat's cat's\r\n  " * 3  # what the "learnt" merges are trained on
MERGE_LISTS = {"none": [], "(a, a)": [(97, 97)], "(b, c) then (a, b)": [(98, 99), (97, 98)],
               "(b, space)": [(98, 32)]}  # and "learnt": the reference's merges of SAMPLE to vocab_size 320
ENCODE_CASES = {  # name: (merge list, text)
    "é, no merges": ("none", "é"),  # ids are UTF-8 bytes, not code points
    "aaa": ("(a, a)", "aaa"),  # left to right, skipping past a merge: [aa, a]
    "aaa, no merges": ("none", "aaa"),  # the same word again, another tokenizer: no state shared between the two
    "abc": ("(b, c) then (a, b)", "abc"),  # the lowest rank first: (b, c) -> [a, bc]
    "b a": ("(b, space)", "b a"),  # b' ' never learnt across the words 'b', ' a'
    **{f"learnt: {text[:20]!r}": ("learnt", text) for text in (
        "", " ", "   ", "\n\n\n", "hello", "cat's 😀😀", "日本語 héllo", "a  b\t\tc \n", "😀", "x" * 50, SAMPLE,
        "\ud800", "a\udfffb", "\ud83d\ude00")},  # lone surrogates, and a pair of them (6 bytes, not the 4 of 😀)
}


def tokenizer_fixture(ref, generator):
    """Task 2: the reference's encode of each case, and the decode of split and invalid bytes and of every case."""
    try:
        learnt = ref["train_bpe"](SAMPLE, 320)
    except Exception:  # noqa: BLE001 -- a planted mistake's trainer may crash; its encode is still recognised
        learnt = []  # on the hand-made merges (the learnt cases' "weights" then differ: nothing stored for them)
    merge_lists = {**MERGE_LISTS, "learnt": learnt}
    tokenizers = {name: ref["BPETokenizer"](merges) for name, merges in merge_lists.items()}
    encode, decode = {}, {"é split over two ids": dict(merges="none", tokens=padded_ids([195, 169], 2), text="é"),
                          "a byte that is no UTF-8": dict(merges="none", tokens=padded_ids([255], 1), text="\ufffd")}
    for name, (merges, text) in ENCODE_CASES.items():
        case = encode[name] = dict(merges=merges, text=text)
        if merges == "learnt":  # tools/make_fixtures.py keeps a mistake's ids only where its merges are the same
            case["weights"] = dict(merges=padded_merges(learnt, len(learnt)))
        length = len(text.encode("utf-8", errors="surrogatepass")) + 4  # a token is at least one byte
        try:
            case["ids"] = padded_ids(tokenizers[merges].encode(text), length)
        except Exception:  # noqa: BLE001 -- a planted mistake that crashes has no ids to recognise
            continue
        decode[f"round trip of {name}"] = dict(merges=merges, tokens=case["ids"].clone(), text=text)
    return dict(merge_lists={name: padded_merges(merges, len(merges)) for name, merges in merge_lists.items()},
                learnt_on=SAMPLE, encode=encode, decode=decode)


# ---- Tasks 3-4: RMSNorm and SwiGLU ----
NORM_DIM, HIDDEN_DIM = 6, 10


def rows_of_many_scales(generator):
    """(2, 4, NORM_DIM) inputs whose rows' root mean squares run from 1e-3 to 10, each row off zero mean: where eps
    sits, and whether the mean is subtracted, both show."""
    scales = torch.tensor([1e-3, 1.0, 10.0, 0.3]).view(1, 4, 1)
    offsets = torch.randn(2, 4, 1, generator=generator)  # (2, 4, 1)
    return (torch.randn(2, 4, NORM_DIM, generator=generator) + offsets) * scales  # (2, 4, NORM_DIM)


def rms_norm_fixture(ref, generator):
    """Task 3: RMSNorm's initial weight; random weights on 3-D and 2-D inputs, and with eps = 0.1; the first case
    again with the default eps; the input's gradient on the 2-D case."""
    x = rows_of_many_scales(generator)
    rows = torch.randn(5, NORM_DIM, generator=generator) * 2 + 1
    cases = {}
    for name, inputs, eps in (("a 3-D input", x, 1e-6), ("a 2-D input", rows, 1e-6), ("the 3-D input again", x, 0.1)):
        norm = randomize(ref["RMSNorm"](NORM_DIM, eps=eps), generator)
        cases[name] = dict(x=inputs, eps=eps, weights=weights(rms_norm_slots(norm)), outputs=norm(inputs))
    initial = ref["RMSNorm"](NORM_DIM).weight.detach().clone()
    return dict(embed_dim=NORM_DIM, initial=initial, cases=cases, default_eps=default_eps_case(ref, cases),
                gradient=rms_gradient_case(ref, cases, generator))


def loaded(norm, weights):
    """norm with a case's weights copied in by role."""
    slots = rms_norm_slots(norm)
    with torch.no_grad():
        for role, value in weights.items():
            slots[role].copy_(value)
    return norm


def default_eps_case(ref, cases, name="a 3-D input"):
    """The case `name` (eps = 1e-6 given) with eps left to its default: its rows of root mean square 1e-3 tell 1e-6
    from 1e-5 (LayerNorm's default)."""
    norm = loaded(ref["RMSNorm"](NORM_DIM), cases[name]["weights"])
    return dict(case=name, outputs=norm(cases[name]["x"]))


def rms_gradient_case(ref, cases, generator, name="a 2-D input"):
    """The gradient of sum(outputs * upstream) with respect to the input of the case `name`, and that gradient
    with the root mean square held constant (a detached statistic), which the check names."""
    case = cases[name]
    norm = loaded(ref["RMSNorm"](NORM_DIM, eps=case["eps"]), case["weights"])
    x = case["x"].clone().requires_grad_(True)
    upstream = torch.randn(case["x"].shape, generator=generator)
    with torch.enable_grad():  # the builders run under no_grad (tools/make_fixtures.py)
        (norm(x) * upstream).sum().backward()
    weight = case["weights"]["weight"]
    rms = torch.sqrt(case["x"].pow(2).mean(dim=-1, keepdim=True) + case["eps"])  # (rows, 1)
    detached = upstream * weight / rms  # d/dx of x / rms * weight with rms constant
    return dict(case=name, upstream=upstream, x_grad=x.grad.detach(),
                mistakes=dict(x_grad={str(RMS_DETACHED): detached}))


def swiglu_fixture(ref, generator):
    """Task 4: SwiGLU with random weights on 3-D and 2-D inputs."""
    cases = {}
    for name, inputs in (("a 3-D input", torch.randn(2, 5, NORM_DIM, generator=generator) * 1.5),
                         ("a 2-D input", torch.randn(4, NORM_DIM, generator=generator))):
        ffn = randomize(ref["SwiGLU"](NORM_DIM, HIDDEN_DIM), generator)
        cases[name] = dict(x=inputs, weights=weights(swiglu_slots(ffn)), outputs=ffn(inputs))
    return dict(embed_dim=NORM_DIM, hidden_dim=HIDDEN_DIM, cases=cases)


# ---- Task 5: grouped-query attention ----
GQA_CONFIGS = {"2 query heads per key/value head": dict(embed_dim=16, num_heads=4, num_kv_heads=2, max_len=16),
               "multi-query (1 key/value head)": dict(embed_dim=16, num_heads=4, num_kv_heads=1, max_len=16),
               "multi-head (4 key/value heads)": dict(embed_dim=16, num_heads=4, num_kv_heads=4, max_len=16)}
GQA_PAST = 4  # cached positions before the last ones


def gqa_fixture(ref, generator):
    """Task 5: each grouping without a cache (outputs, keys, values) and on the last positions after a cache of
    GQA_PAST (outputs, and the whole cache it returns)."""
    x = torch.randn(2, 7, 16, generator=generator)  # (B, L, D)
    cases = {}
    for name, config in GQA_CONFIGS.items():
        layer = randomize(ref["GroupedQueryAttention"](**config), generator, scale=0.3)
        outputs, (keys, values) = layer(x)
        _, cache = layer(x[:, :GQA_PAST])
        continued, (all_keys, all_values) = layer(x[:, GQA_PAST:], cache=cache)
        cases[name] = dict(config=config, weights=weights(attention_slots(layer)), outputs=outputs, new_keys=keys,
                           new_values=values, continued=continued, continued_keys=all_keys,
                           continued_values=all_values)  # the whole cache: equal to keys and values when right
    return dict(x=x, past=GQA_PAST, cases=cases)


# ---- Task 6: tiled attention ----
TILED_RUNS = {  # name: (L, block_size, causal, scores near ±150)
    "L 37, block 8": (37, 8, False, False), "L 37, block 8, causal": (37, 8, True, False),
    "L 37, block 64, causal": (37, 64, True, False), "L 32, block 8, causal": (32, 8, True, False),
    "large scores": (37, 8, False, True), "large scores, causal": (37, 8, True, True),
}


def tiled_run(ref, generator, length, block_size, causal, large):
    """One tiled_attention run on (1, 2, L, 8) inputs; with large, rows of scores near +150 (even positions) and near
    -150 (odd ones), beyond what exp can take in float32 without a running max."""
    query, key, value = torch.randn(3, 1, 2, length, 8, generator=generator).unbind(0)  # (1, 2, L, 8) each
    run = dict(block_size=block_size, causal=causal)
    if large:
        signs = torch.where(torch.arange(length) % 2 == 0, 1.0, -1.0)  # (L,)
        query[..., 0] += 21 * signs
        key[..., 0] += 21
        run["signs"] = signs
    # the check's float32 inputs, kept in float64: the expected values are those inputs' exact attention
    query, key, value = (tensor.float().double() for tensor in (query, key, value))
    outputs = ref["tiled_attention"](query, key, value, block_size, causal)  # (1, 2, L, 8)
    return dict(run, query=query, key=key, value=value, outputs=outputs)


def tiled_fixture(ref, generator):
    """Task 6: tiled_attention with a partial last block, a block longer than L, whole blocks, and large scores."""
    return dict(runs={name: tiled_run(ref, generator, *spec) for name, spec in TILED_RUNS.items()})


# ---- Task 8: LoRA ----
# name: (in, out, rank, alpha, bias), the square one first (there a transposed B @ A fits); alpha / rank, rank / alpha,
# alpha, 1 / rank, alpha / √rank and 1 all differ in each of the first two, and alpha // rank differs from them all in
# the second (7 / 3 is no integer: 2.33 against 2); the last is bias-free, as the projections the notebook adapts are
LORA_CASES = {"square": (8, 8, 2, 6.0, True), "12 -> 10": (12, 10, 3, 7.0, True),
              "6 -> 4, no bias": (6, 4, 2, 3.0, False)}


def lora_case(ref, generator, in_features, out_features, rank, alpha, bias):
    """LoRALinear around a random nn.Linear (with a bias or none), with random A and B: outputs, and the merged
    layer's outputs."""
    base = randomize(nn.Linear(in_features, out_features, bias=bias), generator)
    layer = ref["LoRALinear"](base, rank, alpha)
    a = torch.randn(rank, in_features, generator=generator)  # (r, in)
    b = torch.randn(out_features, rank, generator=generator)  # (out, r)
    with torch.no_grad():
        layer.A.copy_(a), layer.B.copy_(b)
    x = torch.randn(3, 4, in_features, generator=generator)  # (3, 4, in)
    case = dict(rank=rank, alpha=alpha, x=x, outputs=layer(x),
                weights={"base.weight": base.weight.detach().clone(), "A": a, "B": b})
    if bias:
        case["weights"]["base.bias"] = base.bias.detach().clone()
    try:
        case["merged_outputs"] = layer.merge()(x)
    except Exception:  # noqa: BLE001 -- a planted merge that fails (a transposed update on a non-square layer)
        pass
    return case


def lora_fixture(ref, generator):
    """Task 8: LoRALinear on a square and a non-square layer, and on a bias-free one."""
    return dict(cases={name: lora_case(ref, generator, *spec) for name, spec in LORA_CASES.items()})


BUILDERS = {1: trainer_fixture, 2: tokenizer_fixture,  # {task: builder(reference namespace, generator) -> fixture}
            3: rms_norm_fixture, 4: swiglu_fixture, 5: gqa_fixture, 6: tiled_fixture, 8: lora_fixture}

