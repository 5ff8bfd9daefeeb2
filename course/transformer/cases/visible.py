"""The visible checks' own cases, rebuilt from checkers/fixtures/*.pt as recipes.

They run in the grader too, so a notebook that fools its own check cell (a monkeypatched checker,
an edited check cell) is still held to them; their expected values are recomputed from the
reference like every other case's, not read from the fixture.
"""
from checkers._core import load_fixture

from grading.cases.parts import called, module, recipe
from .facts import CLS_START, CLS_TOKEN, ENCODER, PE
from .hidden import ATTENTION, BLOCK, CLASSIFIER, LINFORMER_ATTENTION, LINFORMER_BLOCK, LINFORMER_CLASSIFIER

CHECK_ATOL = 1e-6
CLASSIFIER_ATOL = 1e-5  # the checkers allow a float32 `pe` table inside the classifiers


def attention_cases():
    """Task 1: every fixture case, the 0/1 float mask, large scores in float32, and gradients."""
    fixture, cases = load_fixture("checkers.transformer", 1), []
    for name in ("unbatched", "batched", "random_mask", "causal_mask", "padding_mask"):
        case = fixture[name]
        mask = () if "mask" not in case else (case["mask"],)
        cases.append(recipe(1, f"check: {name}", True, call=called(case["query"], case["key"], case["value"], *mask)))
    masked = fixture["random_mask"]
    cases.append(recipe(1, "check: random_mask given as 0/1 floats", True,
                        call=called(masked["query"], masked["key"], masked["value"], masked["mask"].double())))
    large = {key: fixture["large_logits"][key].float() for key in ("query", "key", "value")}
    cases.append(recipe(1, "check: large scores (float32)", True, atol=1e-3, rtol=1e-3,
                        call=called(large["query"], large["key"], large["value"])))
    batched = fixture["batched"]
    cases.append(recipe(1, "check: gradients", True, grad=True,
                        call=called(batched["query"], batched["key"], batched["value"])))
    return cases


def multihead_cases():
    """Task 2: 2 and 4 heads with each mask shape, the plain call, gradients and float32."""
    fixture, cases = load_fixture("checkers.transformer", 2), []
    embed_dim = fixture["embed_dim"]
    for heads, case in fixture["cases"].items():
        built = module("MultiheadAttention", ATTENTION, case["weights"], embed_dim=embed_dim, num_heads=heads)
        cases.append(recipe(2, f"check: {heads} heads, return_attention=False", True, build=built,
                            call=called(case["x"])))
        for mask_name, masked in case["masks"].items():
            mask = {} if masked["mask"] is None else {"mask": masked["mask"]}
            cases.append(recipe(2, f"check: {heads} heads, mask {mask_name}", True, build=built,
                                call=called(case["x"], return_attention=True, **mask)))
    cases.append(recipe(2, "check: gradients", True, build=built, grad=True, call=called(case["x"])))
    float32 = module("MultiheadAttention", ATTENTION, case["weights"], "float32", embed_dim=embed_dim,
                     num_heads=heads)
    cases.append(recipe(2, "check: float32 input", True, build=float32, atol=1e-4, rtol=1e-4,
                        call=called(case["x"].float())))
    return cases


def encoder_cases():
    """Task 3: ReLU and GELU blocks with and without the causal mask, dropout, gradients."""
    fixture, cases = load_fixture("checkers.transformer", 3), []
    sizes = dict(embed_dim=fixture["embed_dim"], num_heads=fixture["num_heads"],
                 feedforward_dim=fixture["feedforward_dim"])
    x, mask = fixture["x"], fixture["mask"]
    for activation, case in fixture["cases"].items():
        built = module("EncoderBlock", BLOCK, case["weights"], activation=f"nn.{activation}", **sizes)
        cases.append(recipe(3, f"check: nn.{activation}", True, build=built, call=called(x)))
        cases.append(recipe(3, f"check: nn.{activation}, return_attention=True", True, build=built,
                            call=called(x, return_attention=True)))
        cases.append(recipe(3, f"check: nn.{activation}, causal mask", True, build=built, call=called(x, mask=mask)))
    weights = fixture["cases"]["ReLU"]["weights"]
    dropout = module("EncoderBlock", BLOCK, weights, activation="nn.ReLU", dropout=0.5, **sizes)
    cases.append(recipe(3, "check: dropout=0.5 in eval mode", True, build=dropout, call=called(x)))
    training = dict(dropout, mode="train")
    cases.append(recipe(3, "check: dropout=0.5 in train mode", True, build=training, compare="differ",
                        call=called(x, repeat=2)))
    cases.append(recipe(3, "check: gradients", True, build=built, grad=True, call=called(x)))
    return cases


def positional_cases():
    """Task 4: the long float32 table, the small float64 one, the buffer, and forward."""
    fixture = load_fixture("checkers.transformer", 4)
    long, small = fixture["long"], fixture["small"]
    long_module = module("PositionalEncoding", dtype="float32", embed_dim=long["embed_dim"], max_len=long["max_len"])
    small_module = module("PositionalEncoding", embed_dim=small["embed_dim"], max_len=small["max_len"])
    return [
        recipe(4, "check: pe of embed_dim 16, max_len 5000 (float32)", True, build=long_module, attribute="pe",
               rows=long["positions"], facts=[PE], atol=1e-5, row_atol=1e-6),
        recipe(4, "check: pe of embed_dim 6, max_len 50", True, build=small_module, attribute="pe", facts=[PE],
               atol=1e-5, row_atol=1e-6),
        recipe(4, "check: forward", True, build=small_module, call=called(small["x"])),
    ]


def classifier_cases():
    """Task 5: logits and attention maps with GELU (the default) and ReLU, structure, gradients."""
    fixture, cases = load_fixture("checkers.transformer", 5), []
    config, x = fixture["config"], fixture["x"]
    for activation, case in fixture["cases"].items():
        extra = {} if activation == "GELU" else {"activation": "nn.ReLU"}
        built = module("TransformerForSequenceClassification", CLASSIFIER, case["weights"], **config, **extra)
        facts = [CLS_TOKEN, ENCODER] + ([CLS_START] if activation == "GELU" else [])  # fresh models: once is enough
        cases.append(recipe(5, f"check: logits, nn.{activation}", True, build=built, facts=facts,
                            atol=CLASSIFIER_ATOL, rtol=CLASSIFIER_ATOL, call=called(x)))
        cases.append(recipe(5, f"check: forward_attention, nn.{activation}", True, build=built, atol=CLASSIFIER_ATOL,
                            rtol=CLASSIFIER_ATOL, call=called(x, method="forward_attention")))
    cases.append(recipe(5, "check: gradients", True, build=built, grad=True, atol=CLASSIFIER_ATOL,
                        rtol=CLASSIFIER_ATOL, call=called(x)))
    return cases


def linformer_cases():
    """Task 7: LinformerAttention, LinformerBlock and the classifier on the fixture's weights."""
    fixture = load_fixture("checkers.transformer", 7)
    attention, block, classifier = fixture["attention"], fixture["block"], fixture["classifier"]
    names = ("embed_dim", "num_heads", "sequence_length", "proj_dim")
    attention_module = module("LinformerAttention", LINFORMER_ATTENTION, attention["weights"],
                              **dict(zip(names, attention["args"])))
    block_names = ("embed_dim", "num_heads", "feedforward_dim", "sequence_length", "proj_dim")
    block_module = module("LinformerBlock", LINFORMER_BLOCK, block["weights"],
                          **dict(zip(block_names, block["args"])))
    model = module("LinformerForSequenceClassification", LINFORMER_CLASSIFIER, classifier["weights"],
                   **classifier["config"])
    tolerance = dict(atol=CLASSIFIER_ATOL, rtol=CLASSIFIER_ATOL)
    return [
        recipe(7, "check: LinformerAttention", True, build=attention_module, call=called(attention["x"],
               return_attention=True)),
        recipe(7, "check: LinformerAttention gradients", True, build=attention_module, grad=True,
               call=called(attention["x"])),
        recipe(7, "check: LinformerBlock", True, obj=1, build=block_module,
               call=called(block["x"], return_attention=True)),
        recipe(7, "check: Linformer classifier logits", True, obj=2, build=model, call=called(classifier["x"]),
               **tolerance),
        recipe(7, "check: Linformer classifier attention maps", True, obj=2, build=model,
               call=called(classifier["x"], method="forward_attention"), **tolerance),
    ]


VISIBLE = {1: attention_cases, 2: multihead_cases, 3: encoder_cases, 4: positional_cases, 5: classifier_cases,
           7: linformer_cases}
