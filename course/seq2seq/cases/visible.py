"""The visible checks' own cases, rebuilt from checkers/seq2seq/fixtures/*.pt as recipes.

They run in the grader too, so a notebook that fools its own check cell (a monkeypatched checker, an edited check
cell) is still held to them; their expected values are recomputed from the reference like every other case's, not
read from the fixture.
"""
from checkers._core import load_fixture

from grading.cases.parts import called, module, recipe
from .hidden import ATTENTION, DECODER_BLOCK, LAYER_NORM, SEQ2SEQ, scripted

CHECK_TOLERANCE = dict(atol=1e-6, rtol=1e-6)
MODEL_TOLERANCE = dict(atol=1e-5, rtol=1e-5)


def layer_norm_cases():
    """Task 1: each fixture case with its eps, gradients."""
    fixture, cases = load_fixture("checkers.seq2seq", 1), []
    for name, case in fixture["cases"].items():
        built = module("LayerNorm", LAYER_NORM, case["weights"], embed_dim=fixture["embed_dim"], eps=case["eps"])
        cases.append(recipe(1, f"check: {name}", True, build=built, call=called(case["x"]), **CHECK_TOLERANCE))
    cases.append(recipe(1, "check: gradients", True, build=built, grad=True, call=called(case["x"]), **CHECK_TOLERANCE))
    return cases


def mask_cases():
    """Task 2: the causal masks and the padding masks of both pad ids."""
    fixture = load_fixture("checkers.seq2seq", 2)
    causal = [recipe(2, f"check: causal_mask({seq_len})", True, call=called(case["seq_len"]))
              for seq_len, case in fixture["causal"].items()]
    padding = [recipe(2, f"check: padding_mask, pad_id {pad_id}", True, obj=1, call=called(case["tokens"], pad_id))
               for pad_id, case in fixture["padding"].items()]
    return causal + padding


def attention_cases():
    """Task 3: every run of the check for 2 and 4 heads, with the attention weights; gradients."""
    fixture, cases = load_fixture("checkers.seq2seq", 3), []
    for num_heads, case in fixture["cases"].items():
        built = module("MultiheadAttention", ATTENTION, case["weights"], embed_dim=fixture["embed_dim"],
                       num_heads=num_heads)
        for name, run in case["runs"].items():
            kwargs = {key: run[key] for key in ("context", "mask") if key in run}
            cases.append(recipe(3, f"check: {num_heads} heads, {name}", True, build=built,
                                call=called(run["x"], return_attention=True, **kwargs), **CHECK_TOLERANCE))
    run = fixture["cases"][2]["runs"]["cross-attention"]
    built = module("MultiheadAttention", ATTENTION, fixture["cases"][2]["weights"], embed_dim=fixture["embed_dim"],
                   num_heads=2)
    cases.append(recipe(3, "check: gradients through x and context", True, build=built, grad=True,
                        call=called(run["x"], run["context"]), **CHECK_TOLERANCE))
    return cases


def decoder_cases():
    """Task 4: both activations, with both masks (and the attention weights) and without masks; gradients."""
    fixture, cases = load_fixture("checkers.seq2seq", 4), []
    sizes = dict(embed_dim=fixture["embed_dim"], num_heads=fixture["num_heads"],
                 feedforward_dim=fixture["feedforward_dim"])
    x, memory, masks = fixture["x"], fixture["memory"], (fixture["self_mask"], fixture["memory_mask"])
    for activation, case in fixture["cases"].items():
        built = module("DecoderBlock", DECODER_BLOCK, case["weights"], activation=f"nn.{activation}", **sizes)
        cases.append(recipe(4, f"check: nn.{activation}, both masks", True, build=built,
                            call=called(x, memory, *masks, return_attention=True), **CHECK_TOLERANCE))
        cases.append(recipe(4, f"check: nn.{activation}, no masks", True, build=built, call=called(x, memory),
                            **CHECK_TOLERANCE))
    cases.append(recipe(4, "check: gradients", True, build=built, grad=True, call=called(x, memory, *masks),
                        **CHECK_TOLERANCE))
    return cases


def model_cases():
    """Task 5: encode, decode, forward and forward_attention of each fixture model; gradients."""
    fixture, cases = load_fixture("checkers.seq2seq", 5), []
    for name, case in fixture["cases"].items():
        built = module("Seq2SeqTransformer", SEQ2SEQ, case["weights"], activation=f"nn.{case['activation']}",
                       **case["config"])
        source, target_input = case["source"], case["target_input"]
        cases += [recipe(5, f"check: {name}, encode", True, build=built, call=called(source, method="encode"),
                         **MODEL_TOLERANCE),
                  recipe(5, f"check: {name}, decode", True, build=built,
                         call=called(target_input, case["memory"], source, method="decode"), **MODEL_TOLERANCE),
                  recipe(5, f"check: {name}, forward", True, build=built, call=called(source, target_input),
                         **MODEL_TOLERANCE),
                  recipe(5, f"check: {name}, forward_attention", True, build=built,
                         call=called(source, target_input, method="forward_attention"), **MODEL_TOLERANCE)]
    cases.append(recipe(5, "check: gradients", True, build=built, grad=True, call=called(source, target_input),
                        **MODEL_TOLERANCE))
    return cases


def decoding_cases():
    """Task 6: greedy_decode on the check's scripted models, in the mode each case starts in."""
    cases = []
    for name, case in load_fixture("checkers.seq2seq", 6)["cases"].items():
        ids = (case["pad_id"], case["bos_id"], case["eos_id"])
        model = scripted(ids, "train" if case["training"] else "eval")
        cases.append(recipe(6, f"check: {name}", True,
                            call=called(model, case["source"], case["max_len"], case["bos_id"], case["eos_id"])))
    return cases


VISIBLE = {1: layer_norm_cases, 2: mask_cases, 3: attention_cases, 4: decoder_cases, 5: model_cases,
           6: decoding_cases}
