"""How the gpt assignment's fixtures are built: fixed random inputs and weights, run through the reference.

Read by tools/make_fixtures.py (`make fixtures`), which runs each builder on the reference namespace and on every
known mistake (course/gpt/mistakes.py). Instructor-side only: the fixtures ship, these builders do not.
"""
import torch
import torch.nn as nn

from checkers._weights import attention_slots
from checkers.gpt._roles import block_slots, gpt_slots
from checkers.gpt._scripted import FixedLogitsModel
from course.transformer.fixtures import randomize, weights

# Fixture entries holding outputs; a mistake's differing output is stored beside them under "mistakes".
OUTPUT_KEYS = ("outputs", "cos", "sin", "attention", "new_keys", "new_values",  # Tasks 1-3
               "continued", "logits", "frequencies", "draws", "tokens")  # Tasks 4-6, 8

# ---- Tasks 1-3: RoPE, causal self-attention, the KV cache ----
ROTARY_CASES = {  # name: (head_dim, max_len, base, x's shape (B, H, L, head_dim), offset)
    "positions 0 to 4": (8, 12, 10000.0, (2, 3, 5, 8), 0),
    "offset 3": (8, 12, 10000.0, (2, 3, 5, 8), 3),
    "offset 7, up to max_len": (8, 12, 10000.0, (1, 2, 5, 8), 7),
    "head_dim 4, base 500": (4, 12, 500.0, (1, 2, 6, 4), 2),
    "positions 2040 to 2043": (16, 2048, 10000.0, (1, 2, 4, 16), 2040),
}
ATTENTION_SIZES = dict(embed_dim=24, max_len=16)  # head_dim 12 or 6: √head_dim, head_dim / 2, √embed_dim all differ


def interleaving(head_dim):
    """The permutation P that takes the half-split layout to interleaved pairs: (P x)[2i], (P x)[2i + 1] = x[i],
    x[i + head_dim / 2]."""
    half = torch.arange(head_dim // 2)
    return torch.stack([half, half + head_dim // 2], dim=-1).flatten()  # (head_dim,)


def rotary_case(ref, generator, head_dim, max_len, base, shape, offset):
    """One RotaryEmbedding run, with the runs that would name a mistake: the next positions (positions from 1),
    the half-split layout P^-1 rope(P x), the clockwise rotation J rope(J x) (J negates the odd features)."""
    rotary = ref["RotaryEmbedding"](head_dim, max_len=max_len, base=base)
    x = torch.randn(shape, generator=generator)  # (B, H, L, head_dim)
    order, flip = interleaving(head_dim), torch.tensor([1.0, -1.0]).repeat(head_dim // 2)  # (head_dim,) each
    halves = torch.empty_like(x)
    halves[..., order] = rotary(x[..., order], offset=offset)  # (B, H, L, head_dim)
    case = dict(config=dict(head_dim=head_dim, max_len=max_len, base=base), x=x, offset=offset,
                outputs=rotary(x, offset=offset), halves=halves, clockwise=flip * rotary(flip * x, offset=offset))
    if offset + shape[2] < max_len:
        case["next"] = rotary(x, offset=offset + 1)  # (B, H, L, head_dim)
    return case


def rotary_fixture(ref, generator):
    """Task 1: RotaryEmbedding at positions from 0, at offsets, with another head_dim and base, and near 2048
    (where an angle computed in float32 is off by ~1e-4 rad); the tables cos and sin of the first configuration."""
    cases = {name: rotary_case(ref, generator, *spec) for name, spec in ROTARY_CASES.items()}
    rotary = ref["RotaryEmbedding"](8, max_len=12)
    return dict(cases=cases, tables=dict(config=dict(head_dim=8, max_len=12), cos=rotary.cos, sin=rotary.sin))


def attention_fixture(ref, generator):
    """Task 2: CausalSelfAttention with 2 and 4 heads, no cache: outputs, attention, the (keys, values) it returns,
    and the same weights with rope=False."""
    x = torch.randn(2, 6, ATTENTION_SIZES["embed_dim"], generator=generator)  # (B, L, D)
    cases = {}
    for num_heads in (2, 4):
        layer = randomize(ref["CausalSelfAttention"](num_heads=num_heads, **ATTENTION_SIZES), generator, scale=0.3)
        outputs, (keys, values), attention = layer(x, return_attention=True)
        plain = ref["CausalSelfAttention"](num_heads=num_heads, **ATTENTION_SIZES, rope=False)
        for role, slot in attention_slots(plain).items():
            slot.copy_(attention_slots(layer)[role])
        unrotated, _, unrotated_attention = plain(x, return_attention=True)
        cases[num_heads] = dict(weights=weights(attention_slots(layer)), outputs=outputs, attention=attention,
                                new_keys=keys, new_values=values,
                                rope_false=dict(outputs=unrotated, attention=unrotated_attention))
    return dict(**ATTENTION_SIZES, x=x, cases=cases)


def cache_fixture(ref, generator):
    """Task 3: CausalSelfAttention (2 heads) continued from caches of 1 and 4 positions, several new tokens at once,
    and token by token from a 3-position prefix; each run's outputs, attention and new cache."""
    x = torch.randn(2, 7, ATTENTION_SIZES["embed_dim"], generator=generator)  # (B, L, D)
    layer = randomize(ref["CausalSelfAttention"](num_heads=2, **ATTENTION_SIZES), generator, scale=0.3)
    outputs, (keys, values) = layer(x)
    runs = {}
    for past in (1, 4):
        _, cache = layer(x[:, :past])
        rest, (new_keys, new_values), attention = layer(x[:, past:], cache=cache, return_attention=True)
        runs[f"{past} cached, {x.size(1) - past} new"] = dict(past=past, step=x.size(1) - past, outputs=rest,
                                                            attention=attention, new_keys=new_keys,
                                                            new_values=new_values)
    _, cache = layer(x[:, :3])
    steps = []
    for position in range(3, x.size(1)):
        out, cache, attention = layer(x[:, position:position + 1], cache=cache, return_attention=True)
        steps.append(out)
    runs["3 cached, then 1 at a time"] = dict(past=3, step=1, outputs=torch.cat(steps, dim=1), attention=attention,
                                              new_keys=cache[0], new_values=cache[1])
    return dict(**ATTENTION_SIZES, num_heads=2, x=x, weights=weights(attention_slots(layer)), outputs=outputs,
                new_keys=keys, new_values=values, runs=runs)


# ---- Tasks 4-6, 8: the block, the model, sampling, generation ----

BLOCK_SIZES = dict(embed_dim=8, num_heads=2, feedforward_dim=16, max_len=16)
MODEL_SIZES = dict(vocab_size=11, embed_dim=8, num_heads=2, feedforward_dim=16, num_layers=2, max_len=24)


def block_fixture(ref, generator):
    """Task 4: GPTBlock with GELU and ReLU on one batch, its cache, and the last positions run on a prefix's cache."""
    x = torch.randn(2, 5, BLOCK_SIZES["embed_dim"], generator=generator) * 2 + 0.5  # (B, L, D), rows off zero mean
    prefix = 3
    cases = {}
    for activation in (nn.GELU, nn.ReLU):
        block = randomize(ref["GPTBlock"](**BLOCK_SIZES, activation=activation), generator).eval()
        outputs, (keys, values) = block(x)
        _, prefix_cache = block(x[:, :prefix])
        continued, _ = block(x[:, prefix:], cache=prefix_cache)
        cases[activation.__name__] = dict(weights=weights(block_slots(block)), outputs=outputs, keys=keys,
                                          values=values, continued=continued)
    return dict(**BLOCK_SIZES, x=x, prefix=prefix, cases=cases)


def model_fixture(ref, generator):
    """Task 5: GPT on a batch of tokens: logits, per-block caches, and the last positions run on a prefix's cache."""
    tokens = torch.randint(MODEL_SIZES["vocab_size"], (2, 6), generator=generator)  # (B, L)
    prefix = 4
    model = randomize(ref["GPT"](**MODEL_SIZES), generator).eval()
    logits, cache = model(tokens)
    _, prefix_cache = model(tokens[:, :prefix])
    continued, _ = model(tokens[:, prefix:], cache=prefix_cache)
    return dict(config=MODEL_SIZES, tokens=tokens, prefix=prefix, weights=weights(gpt_slots(model)), logits=logits,
                keys=[keys for keys, _ in cache], continued=continued)


def kept_probabilities(logits, temperature, top_k):
    """softmax(logits / temperature) over the logits >= the k-th largest: the builder's own route, not the answer's."""
    scaled = logits / temperature  # (B, V)
    if top_k is not None and top_k < scaled.size(-1):
        kth = scaled.sort(dim=-1, descending=True).values[:, top_k - 1:top_k]  # (B, 1)
        scaled = torch.where(scaled >= kth, scaled, torch.full_like(scaled, -torch.inf))  # (B, V)
    return scaled.softmax(dim=-1)  # (B, V)


SAMPLING_SETTINGS = {"temperature 1": dict(temperature=1.0, top_k=None),
                     "temperature 0.5": dict(temperature=0.5, top_k=None),
                     "temperature 2": dict(temperature=2.0, top_k=None),
                     "top_k 3": dict(temperature=1.0, top_k=3),
                     "top_k 2, temperature 2": dict(temperature=2.0, top_k=2),
                     "top_k 4, temperature 0.5": dict(temperature=0.5, top_k=4),  # both far from their defaults
                     "top_k = vocab_size": dict(temperature=1.0, top_k=6),
                     "top_k > vocab_size": dict(temperature=1.0, top_k=9)}


def sampling_fixture(ref, generator):
    """Task 6: sample_next_token on fixed logits without ties: each setting's probabilities, the frequencies of
    FREQUENCY_DRAWS draws from row 0 and exact draws from a seeded generator (their seeds stored)."""
    logits = torch.randn(3, 6, generator=generator) * 1.5  # (B, V), no ties
    draws_count, cases = 4000, {}
    for name, setting in SAMPLING_SETTINGS.items():
        rows = logits[:1].repeat(draws_count, 1)  # (N, V)
        counted = ref["sample_next_token"](rows, **setting, generator=torch.Generator().manual_seed(5))  # (N, 1)
        frequencies = torch.bincount(counted.flatten(), minlength=6).to(logits.dtype) / draws_count  # (V,)
        seeded = torch.Generator().manual_seed(9)
        draws = torch.cat([ref["sample_next_token"](logits, **setting, generator=seeded) for _ in range(8)], 1)
        cases[name] = dict(setting=setting, probabilities=kept_probabilities(logits, **setting),
                           frequencies=frequencies, draws=draws)  # draws: (B, 8)
    return dict(logits=logits, frequency_draws=draws_count, frequency_seed=5, draw_seed=9, draw_calls=8, cases=cases)


GENERATION_SETTINGS = {"temperature 1": dict(temperature=1.0, top_k=None),
                       "temperature 0.7": dict(temperature=0.7, top_k=None),
                       "temperature 1.5, top_k 3": dict(temperature=1.5, top_k=3),
                       "greedy": dict(temperature=0.0, top_k=None)}


def generation_fixture(ref, generator):
    """Task 8: generate on a fixed-logits bigram stand-in with seeded generators, with and without the cache."""
    vocab_size, max_len, new_tokens = 7, 12, 6
    table = torch.randn(vocab_size, vocab_size, generator=generator) * 1.5  # (V, V), no ties in a row
    prompt = torch.randint(vocab_size, (3, 4), generator=generator)  # (B, P)
    cases = {}
    for name, setting in GENERATION_SETTINGS.items():
        model = FixedLogitsModel(table, max_len).eval()
        tokens = ref["generate"](model, prompt, new_tokens, **setting, generator=torch.Generator().manual_seed(3))
        cases[name] = dict(setting=setting, tokens=tokens)  # (B, P + new_tokens)
    return dict(table=table, prompt=prompt, max_len=max_len, new_tokens=new_tokens, seed=3, cases=cases)

BUILDERS = {1: rotary_fixture, 2: attention_fixture, 3: cache_fixture,  # {task: builder(reference namespace, generator)
            4: block_fixture, 5: model_fixture, 6: sampling_fixture, 8: generation_fixture}  # -> fixture}
