"""The visible checks' own cases, rebuilt from checkers/gpt/fixtures/*.pt as recipes.

They run in the grader too, so a notebook that fools its own check cell (a monkeypatched checker, an edited check
cell) is still held to them; their expected values are recomputed from the reference like every other case's, not
read from the fixture.
"""
from checkers._core import load_fixture

from grading.cases.parts import called, module, recipe
from .facts import MAX_LEN
from .hidden import ATTENTION, BLOCK, GPT_SLOTS, rotary_check, seeded, standin

CHECK_TOLERANCE = dict(atol=1e-6, rtol=1e-6)
FAR_TOLERANCE = dict(atol=rotary_check.FAR_ATOL, rtol=rotary_check.FAR_RTOL)  # angles far from 0 (float32 angles)


def rotary_cases():
    """Task 1: every fixture case at its offset, the tables cos and sin, gradients."""
    fixture, cases = load_fixture("checkers.gpt", 1), []
    for name, case in fixture["cases"].items():
        built = module("RotaryEmbedding", **case["config"])
        tolerance = FAR_TOLERANCE if name == rotary_check.FAR else CHECK_TOLERANCE  # the check's own rule
        cases.append(recipe(1, f"check: {name}", True, build=built, call=called(case["x"], offset=case["offset"]),
                            **tolerance))
    cases.append(recipe(1, "check: gradients", True, build=built, grad=True,  # the last case's inputs and tolerance
                        call=called(case["x"], offset=case["offset"]), **tolerance))
    tables = module("RotaryEmbedding", **fixture["tables"]["config"])
    return cases + [recipe(1, f"check: the table `{name}`", True, build=tables, attribute=name, **CHECK_TOLERANCE)
                    for name in ("cos", "sin")]


def attention_cases():
    """Task 2: 2 and 4 heads without a cache, with and without the attention weights, and rope=False."""
    fixture, cases = load_fixture("checkers.gpt", 2), []
    sizes, x = dict(embed_dim=fixture["embed_dim"], max_len=fixture["max_len"]), fixture["x"]
    for num_heads, case in fixture["cases"].items():
        built = module("CausalSelfAttention", ATTENTION, case["weights"], num_heads=num_heads, **sizes)
        plain = module("CausalSelfAttention", ATTENTION, case["weights"], num_heads=num_heads, rope=False, **sizes)
        cases += [recipe(2, f"check: {num_heads} heads", True, build=built, call=called(x), **CHECK_TOLERANCE),
                  recipe(2, f"check: {num_heads} heads, attention weights", True, build=built,
                         call=called(x, return_attention=True), **CHECK_TOLERANCE),
                  recipe(2, f"check: {num_heads} heads, rope=False", True, build=plain,
                         call=called(x, return_attention=True), **CHECK_TOLERANCE)]
    return cases


def cache_cases():
    """Task 3: the fixture layer continued from caches of its own first positions: several new tokens, and one."""
    fixture = load_fixture("checkers.gpt", 3)
    built = module("CausalSelfAttention", ATTENTION, fixture["weights"], embed_dim=fixture["embed_dim"],
                   num_heads=fixture["num_heads"], max_len=fixture["max_len"])
    x, keys, values = fixture["x"], fixture["new_keys"], fixture["new_values"]  # causal: a prefix's cache is a slice
    runs = [(past, x.size(1) - past) for past in (1, 4)] + [(3, 1), (x.size(1) - 1, 1)]
    return [recipe(3, f"check: {past} cached, {step} new", True, build=built, **CHECK_TOLERANCE,
                   call=called(x[:, past:past + step], cache=(keys[:, :, :past], values[:, :, :past]),
                               return_attention=True)) for past, step in runs]


def block_cases():
    """Task 4: both activations on the fixture batch, and its last positions after the prefix's cache; gradients."""
    fixture, cases = load_fixture("checkers.gpt", 4), []
    sizes = {key: fixture[key] for key in ("embed_dim", "num_heads", "feedforward_dim", "max_len")}
    x, prefix = fixture["x"], fixture["prefix"]
    for activation, case in fixture["cases"].items():
        built = module("GPTBlock", BLOCK, case["weights"], activation=f"nn.{activation}", **sizes)
        cache = (case["keys"][:, :, :prefix], case["values"][:, :, :prefix])  # causal: the prefix's own cache
        cases += [recipe(4, f"check: nn.{activation}", True, build=built, call=called(x), **CHECK_TOLERANCE),
                  recipe(4, f"check: nn.{activation}, after a cache of {prefix}", True, build=built,
                         call=called(x[:, prefix:], cache=cache), **CHECK_TOLERANCE)]
    cases.append(recipe(4, "check: gradients", True, build=built, grad=True, call=called(x), **CHECK_TOLERANCE))
    return cases


def model_cases():
    """Task 5: the fixture model's logits and caches, of the whole batch and of its prefix; max_len; gradients."""
    fixture = load_fixture("checkers.gpt", 5)
    built = module("GPT", GPT_SLOTS, fixture["weights"], **fixture["config"])
    tokens, prefix = fixture["tokens"], fixture["prefix"]
    return [recipe(5, "check: logits and cache", True, build=built, call=called(tokens), **CHECK_TOLERANCE),
            recipe(5, f"check: the first {prefix} tokens", True, build=built, call=called(tokens[:, :prefix]),
                   **CHECK_TOLERANCE),
            recipe(5, "check: max_len is kept", True, build=built, facts=[MAX_LEN]),
            recipe(5, "check: gradients", True, build=built, grad=True, call=called(tokens), **CHECK_TOLERANCE)]


def sampling_cases():
    """Task 6: each setting's draws from the fixture's first row (its frequency seed) and from every row (its draw
    seed), compared draw by draw, with what each call drew from the generator."""
    fixture, cases = load_fixture("checkers.gpt", 6), []
    logits = fixture["logits"]  # (B, V)
    rows = logits[:1].expand(fixture["frequency_draws"], -1).contiguous()  # (N, V)
    for name, case in fixture["cases"].items():
        setting = case["setting"]
        cases += [recipe(6, f"check: {name}, {len(rows)} draws", True,
                         call=called(rows, **setting, generator=seeded(fixture["frequency_seed"]))),
                  recipe(6, f"check: {name}, seeded draws", True,
                         call=called(logits, **setting, generator=seeded(fixture["draw_seed"])))]
    return cases + [recipe(6, "check: temperature 0 (greedy)", True, call=called(logits, temperature=0.0))]


def generation_cases():
    """Task 8: every setting on the fixture's bigram stand-in, with and without the cache, and how generate drove it."""
    fixture, cases = load_fixture("checkers.gpt", 8), []
    for name, case in fixture["cases"].items():
        for use_cache in (True, False):
            model = standin(fixture["table"], fixture["max_len"])
            call = called(model, fixture["prompt"], fixture["new_tokens"], **case["setting"], use_cache=use_cache,
                          generator=seeded(fixture["seed"]))
            cases.append(recipe(8, f"check: {name}, use_cache={use_cache}", True, call=call))
    return cases


VISIBLE = {1: rotary_cases, 2: attention_cases, 3: cache_cases, 4: block_cases, 5: model_cases, 6: sampling_cases,
           8: generation_cases}
