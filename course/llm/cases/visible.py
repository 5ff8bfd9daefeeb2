"""The visible checks' own cases, rebuilt from checkers/llm/fixtures/*.pt as recipes.

They run in the grader too, so a notebook that fools its own check cell (a monkeypatched checker, an edited check
cell) is still held to them; their expected values are recomputed from the reference like every other case's, not
read from the fixture. Task 1's speed is judged by the check's own rule, run in the probe (bpe_speed): a ratio of
two CPU times there, so no time is compared between machines.
"""
from checkers._core import load_fixture
from checkers.llm import gqa as gqa_check, lora as lora_check, tiled as tiled_check
from checkers.llm._bpe import unpadded

from grading.cases.parts import called, helper, instance, module, recipe, watch
from .facts import (ATTENTION_SLOTS, BASE_LAYER, BPE_SPEED, LORA_MERGE, LORA_SLOTS, LORA_START, MERGE_PAIRS, PARAMETERS,
                    RMS_SLOTS, SWIGLU_SLOTS)

CHECK_TOLERANCE = dict(atol=1e-6, rtol=1e-6)
SCORES = dict(name="checkers.llm.tiled:_Recorder", report="checkers.llm._facts:scores_seen",
              judge="checkers.llm._facts:scores_problem")  # what the Task 6 check watches: SDPA, any L × L tensor


def training_cases():
    """Task 1: the merges of every constructed text and of the timed one, then the check's speed rule on the timed one
    (after its merges, so a wrong merge is named first)."""
    fixture = load_fixture("checkers.llm", 1)
    probes = dict(fixture["probes"], **{"timed text": fixture["speed"]})
    cases = [recipe(1, f"check: {name}", True, call=called(probe["text"], probe["vocab_size"]), values=True)
             for name, probe in probes.items()]
    return cases + [recipe(1, "check: each merge a tuple", True, facts=[MERGE_PAIRS]),
                    recipe(1, "check: the timed text, its counts kept up to date", True, facts=[BPE_SPEED])]


def tokenizer_cases():
    """Task 2: every encode and decode of the check, each tokenizer built from its merges."""
    fixture, cases = load_fixture("checkers.llm", 2), []
    merges = {name: unpadded(table) for name, table in fixture["merge_lists"].items()}
    for name, case in fixture["encode"].items():
        cases.append(recipe(2, f"check: encode {name}", True, build=instance("BPETokenizer", merges[case["merges"]]),
                            call=called(case["text"], method="encode"), values=True))
    for name, case in fixture["decode"].items():
        cases.append(recipe(2, f"check: decode {name}", True, build=instance("BPETokenizer", merges[case["merges"]]),
                            call=called(unpadded(case["tokens"]), method="decode"), values=True))
    return cases


def rms_norm_cases():
    """Task 3: the initial weight and its one parameter, each fixed-weight case, the default eps, gradients."""
    fixture, cases = load_fixture("checkers.llm", 3), []
    embed_dim, loaded = fixture["embed_dim"], {}
    fresh = module("RMSNorm", embed_dim=embed_dim)
    cases += [recipe(3, "check: the weight starts at ones", True, build=fresh, attribute="weight", atol=0.0),
              recipe(3, "check: one parameter", True, build=fresh, facts=[PARAMETERS])]
    for name, case in fixture["cases"].items():
        loaded[name] = module("RMSNorm", RMS_SLOTS, case["weights"], embed_dim=embed_dim, eps=case["eps"])
        cases.append(recipe(3, f"check: {name}, eps {case['eps']:g}", True, build=loaded[name],
                            call=called(case["x"]), **CHECK_TOLERANCE))
    default = fixture["cases"][fixture["default_eps"]["case"]]
    cases.append(recipe(3, "check: eps left to its default", True, call=called(default["x"]), **CHECK_TOLERANCE,
                        build=module("RMSNorm", RMS_SLOTS, default["weights"], embed_dim=embed_dim)))
    gradient = fixture["gradient"]["case"]  # the check backpropagates another upstream: both compare gradients
    return cases + [recipe(3, "check: gradients", True, build=loaded[gradient], grad=True,
                           call=called(fixture["cases"][gradient]["x"]), **CHECK_TOLERANCE)]


def swiglu_cases():
    """Task 4: the three bias-free projections, each fixed-weight case; gradients."""
    fixture, cases = load_fixture("checkers.llm", 4), []
    sizes = dict(embed_dim=fixture["embed_dim"], hidden_dim=fixture["hidden_dim"])
    cases.append(recipe(4, "check: three bias-free projections", True, build=module("SwiGLU", **sizes),
                        facts=[PARAMETERS]))
    for name, case in fixture["cases"].items():
        built = module("SwiGLU", SWIGLU_SLOTS, case["weights"], **sizes)
        cases.append(recipe(4, f"check: {name}", True, build=built, call=called(case["x"]), **CHECK_TOLERANCE))
    return cases + [recipe(4, "hidden: gradients of the check's input", False, build=built, grad=True,
                           call=called(case["x"]), **CHECK_TOLERANCE)]


def attention_cases():
    """Task 5: each grouping on the whole input, on its prefix, and its last positions after the prefix's cache."""
    fixture, cases = load_fixture("checkers.llm", 5), []
    x, past = fixture["x"], fixture["past"]
    tolerance = dict(atol=gqa_check.ATOL, rtol=gqa_check.RTOL)
    for name, case in fixture["cases"].items():
        built = module("GroupedQueryAttention", ATTENTION_SLOTS, case["weights"], **case["config"])
        cache = (case["new_keys"][:, :, :past], case["new_values"][:, :, :past])  # causal: the prefix's own cache
        cases += [recipe(5, f"check: {name}", True, build=built, call=called(x), **tolerance),
                  recipe(5, f"check: {name}, the first {past} positions", True, build=built,
                         call=called(x[:, :past]), **tolerance),
                  recipe(5, f"check: {name}, after a cache of {past}", True, build=built,
                         call=called(x[:, past:], cache=cache), **tolerance)]
    return cases


def tiled_cases():
    """Task 6: every run of the check on float32 inputs (the check's tolerance; scores near ±150 its larger one)."""
    fixture = load_fixture("checkers.llm", 6)
    cases = []
    for name, run in fixture["runs"].items():
        inputs = [run[part].float() for part in ("query", "key", "value")]
        atol = tiled_check.LARGE_ATOL if "signs" in run else tiled_check.ATOL
        length = inputs[0].size(-2)
        watched = dict(watch=watch(**SCORES, length=length)) if run["block_size"] < length else {}  # as the check
        cases.append(recipe(6, f"check: {name}", True, call=called(*inputs, run["block_size"], run["causal"]),
                            atol=atol, rtol=tiled_check.RTOL, **watched))
    return cases


def base_layer(weights):
    """The nn.Linear a case's LoRALinear adapts, built in the probe from the case's base weights."""
    return helper(BASE_LAYER, weight=weights["base.weight"], bias=weights.get("base.bias"))


def lora_cases():
    """Task 8: each layer's start (base frozen, A random, B zero), outputs and gradients with fixed A and B, merge()."""
    cases = []
    for name, case in load_fixture("checkers.llm", 8)["cases"].items():
        weights, settings = case["weights"], dict(rank=case["rank"], alpha=case["alpha"])
        start = module("LoRALinear", base=base_layer(weights), **settings)
        built = module("LoRALinear", LORA_SLOTS, {role: weights[role] for role in ("A", "B")},
                       base=base_layer(weights), **settings)
        tolerance = dict(atol=lora_check.ATOL, rtol=lora_check.RTOL)
        cases += [recipe(8, f"check: {name}, at the start", True, build=start, facts=[LORA_START]),
                  recipe(8, f"check: {name}, outputs", True, build=built, call=called(case["x"]), **tolerance),
                  recipe(8, f"hidden: {name}, gradients", False, build=built, grad=True, call=called(case["x"]),
                         **tolerance),  # the check asks only that A and B get non-zero gradients
                  recipe(8, f"check: {name}, merge()", True, build=built, facts=[LORA_MERGE])]
    return cases


VISIBLE = {1: training_cases, 2: tokenizer_cases, 3: rms_norm_cases, 4: swiglu_cases, 5: attention_cases,
           6: tiled_cases, 8: lora_cases}
