"""Hidden cases: other seeds, shapes, masks, head counts and activations than the visible checks use.

A notebook that special-cases the visible inputs (or is right only for them) fails these. Every
input obeys the task's stated contract (e.g. each query may attend to at least one key), so a
correct answer in any formulation passes. Weights are random per role, drawn with the shapes of
the reference's modules.
"""
import torch

from grading.cases.parts import called, module, one_hot, randn, random_mask, random_weights, recipe
from .facts import CLS_TOKEN, ENCODER, MAX_LEN, PE

SEED = 424242  # never a seed of the notebook, the checkers or make_fixtures
TOLERANCE = dict(atol=1e-5, rtol=1e-5)
ROLES = "checkers.transformer._roles"  # the weight roles of each module the cases build
ATTENTION, BLOCK, CLASSIFIER = (f"{ROLES}:{name}" for name in ("attention_slots", "block_slots", "classifier_slots"))
LINFORMER_ATTENTION, LINFORMER_BLOCK, LINFORMER_CLASSIFIER = (
    f"{ROLES}:linformer_{name}" for name in ("attention_slots", "block_slots", "classifier_slots"))


def attention_cases(reference, generator):
    """Task 1: 4-D and 5-D batches, L_q != L_k != D_v, bool / 0-1 / broadcast masks, float32, gradients."""
    q4, k4, v4 = randn(generator, 2, 3, 5, 7), randn(generator, 2, 3, 9, 7), randn(generator, 2, 3, 9, 4)
    q5, k5, v5 = randn(generator, 2, 2, 2, 4, 6), randn(generator, 2, 2, 2, 3, 6), randn(generator, 2, 2, 2, 3, 5)
    q3, k3, v3 = randn(generator, 3, 6, 8), randn(generator, 3, 8, 8), randn(generator, 3, 8, 2)
    causal = torch.tril(torch.ones(6, 6, dtype=torch.bool))
    qc, kc, vc = randn(generator, 2, 4, 6, 6), randn(generator, 2, 4, 6, 6), randn(generator, 2, 4, 6, 3)
    big = [randn(generator, 3, 5, 32, scale=40).float(), randn(generator, 3, 7, 32, scale=40).float(),
           randn(generator, 3, 7, 6).float()]
    return [
        recipe(1, "hidden: 4-D batch, 5 queries, 9 keys, value width 4", False, call=called(q4, k4, v4)),
        recipe(1, "hidden: 5-D batch", False, call=called(q5, k5, v5)),
        recipe(1, "hidden: random bool mask (B, L_q, L_k)", False,
               call=called(q3, k3, v3, random_mask(generator, 3, 6, 8))),
        recipe(1, "hidden: 0/1 float mask broadcast over heads", False,
               call=called(q4, k4, v4, random_mask(generator, 2, 1, 5, 9).double())),
        recipe(1, "hidden: causal (L, L) mask broadcast over 2 batch axes", False, call=called(qc, kc, vc, causal)),
        recipe(1, "hidden: large scores (float32)", False, atol=1e-3, rtol=1e-3, call=called(*big)),
        recipe(1, "hidden: gradients with a mask", False, grad=True,
               call=called(q3, k3, v3, random_mask(generator, 3, 6, 8))),
    ]


def multihead_cases(reference, generator):
    """Task 2: 1, 3 and 8 heads, other widths and lengths, every mask shape, gradients, float32."""
    cls, cases = reference["MultiheadAttention"], []
    for embed_dim, heads, batch, length in ((12, 3, 3, 7), (16, 8, 2, 4), (6, 1, 2, 5)):
        weights = random_weights(cls, "MultiheadAttention", ATTENTION, generator, embed_dim=embed_dim,
                                 num_heads=heads)
        built = module("MultiheadAttention", ATTENTION, weights, embed_dim=embed_dim, num_heads=heads)
        x = randn(generator, batch, length, embed_dim)
        masks = {"none": None, "(L, L)": random_mask(generator, length, length),
                 "(B, L, L)": random_mask(generator, batch, length, length),
                 "(B, 1, L, L)": random_mask(generator, batch, 1, length, length),
                 "(B, H, L, L)": random_mask(generator, batch, heads, length, length)}
        for name, mask in masks.items():
            extra = {} if mask is None else {"mask": mask}
            cases.append(recipe(2, f"hidden: {heads} heads of width {embed_dim // heads}, mask {name}", False,
                                build=built, call=called(x, return_attention=True, **extra)))
        cases.append(recipe(2, f"hidden: {heads} heads, gradients", False, build=built, grad=True, call=called(x)))
    float32 = module("MultiheadAttention", ATTENTION, weights, "float32", embed_dim=embed_dim, num_heads=heads)
    cases.append(recipe(2, "hidden: float32", False, build=float32, atol=1e-4, rtol=1e-4, call=called(x.float())))
    return cases


def encoder_cases(reference, generator):
    """Task 3: another width, 3 heads, nn.Tanh and nn.GELU, (B, L, L) masks, dropout in both modes, gradients."""
    cls, cases = reference["EncoderBlock"], []
    sizes = dict(embed_dim=12, num_heads=3, feedforward_dim=20)
    x = randn(generator, 3, 6, 12)
    for activation in ("nn.Tanh", "nn.GELU"):
        weights = random_weights(cls, "EncoderBlock", BLOCK, generator, activation=activation, **sizes)
        built = module("EncoderBlock", BLOCK, weights, activation=activation, **sizes)
        mask = random_mask(generator, 3, 6, 6)
        cases += [recipe(3, f"hidden: {activation}", False, build=built, call=called(x, return_attention=True)),
                  recipe(3, f"hidden: {activation}, (B, L, L) mask", False, build=built,
                         call=called(x, mask=mask, return_attention=True)),
                  recipe(3, f"hidden: {activation}, gradients", False, build=built, grad=True, call=called(x))]
    dropout = module("EncoderBlock", BLOCK, weights, activation="nn.GELU", dropout=0.3, **sizes)
    cases.append(recipe(3, "hidden: dropout=0.3 in eval mode", False, build=dropout, call=called(x)))
    # Both sub-layers output zeros, so dropout on them changes nothing and the output is deterministic, unless
    # dropout acts on the residual sum instead.
    silent = dict(weights, **{role: torch.zeros_like(value) for role, value in weights.items()
                              if role.startswith(("attention.o_proj.", "feedforward.out."))})
    train_mode = module("EncoderBlock", BLOCK, silent, activation="nn.GELU", dropout=0.5, mode="train", **sizes)
    cases.append(recipe(3, "hidden: dropout=0.5 in train mode, sub-layers silenced", False, build=train_mode,
                        call=called(x)))
    # Only the feed-forward network silenced: dropout on the attention's output alone makes two passes differ.
    attention_only = dict(weights, **{role: torch.zeros_like(value) for role, value in weights.items()
                                      if role.startswith("feedforward.out.")})
    attention_dropout = module("EncoderBlock", BLOCK, attention_only, activation="nn.GELU", dropout=0.5, mode="train",
                               **sizes)
    cases.append(recipe(3, "hidden: dropout=0.5 in train mode, feed-forward silenced", False, build=attention_dropout,
                        compare="differ", call=called(x, repeat=2)))
    no_dropout = module("EncoderBlock", BLOCK, weights, activation="nn.GELU", dropout=0.0, mode="train", **sizes)
    cases.append(recipe(3, "hidden: dropout=0.0 in train mode", False, build=no_dropout, call=called(x)))
    return cases


def positional_cases(reference, generator):
    """Task 4: other widths and lengths, float32 and float64 tables, forward up to max_len, a float32-built module."""
    wide = module("PositionalEncoding", dtype="float32", embed_dim=32, max_len=1000)
    narrow = module("PositionalEncoding", embed_dim=10, max_len=300)
    short = module("PositionalEncoding", embed_dim=4, max_len=9)
    native = module("PositionalEncoding", dtype="float32", native=True, embed_dim=10, max_len=300)
    return [
        recipe(4, "hidden: pe of embed_dim 32, max_len 1000 (float32)", False, build=wide, attribute="pe",
               facts=[PE], atol=1e-5, row_atol=1e-6),
        recipe(4, "hidden: pe of embed_dim 10, max_len 300", False, build=narrow, attribute="pe", facts=[PE],
               atol=1e-5, row_atol=1e-6),
        recipe(4, "hidden: forward, L < max_len", False, build=narrow, call=called(randn(generator, 3, 17, 10)),
               **TOLERANCE),
        recipe(4, "hidden: forward, L = max_len", False, build=short, call=called(randn(generator, 2, 9, 4)),
               **TOLERANCE),
        recipe(4, "hidden: forward in float32, module built under float32", False, build=native,
               call=called(randn(generator, 3, 17, 10).float()), **TOLERANCE),
    ]


def classifier_cases(reference, generator):
    """Task 5: 3 layers of 3 heads, 4 classes, a batch of one, attention maps, structure, gradients."""
    cls = reference["TransformerForSequenceClassification"]
    config = dict(input_dim=7, embed_dim=12, num_classes=4, num_heads=3, feedforward_dim=24, num_layers=3, max_len=40)
    weights = random_weights(cls, "TransformerForSequenceClassification", CLASSIFIER, generator, **config)
    built = module("TransformerForSequenceClassification", CLASSIFIER, weights, **config)
    native = module("TransformerForSequenceClassification", CLASSIFIER, weights, "float32", native=True, **config)
    training = module("TransformerForSequenceClassification", CLASSIFIER, weights, mode="train", dropout=0.5,
                      **config)
    x = one_hot(generator, 3, 9, 7)
    return [
        recipe(5, "hidden: dropout=0.5 in train mode", False, build=training, compare="differ",
               call=called(x, repeat=2)),
        recipe(5, "hidden: logits in float32, model built under float32", False, build=native, call=called(x.float()),
               atol=1e-4, rtol=1e-4),
        recipe(5, "hidden: logits, 3 layers, 4 classes", False, build=built, facts=[CLS_TOKEN, ENCODER, MAX_LEN],
               call=called(x), **TOLERANCE),
        recipe(5, "hidden: logits of a batch of one", False, build=built, call=called(x[1:2]), **TOLERANCE),
        recipe(5, "hidden: forward_attention", False, build=built, call=called(x, method="forward_attention"),
               **TOLERANCE),
        recipe(5, "hidden: gradients", False, build=built, grad=True, call=called(x), **TOLERANCE),
    ]


def linformer_cases(reference, generator):
    """Task 7: 4 and 1 heads, other lengths and projection sizes, gradients, the classifier."""
    attention_sizes = dict(embed_dim=12, num_heads=4, sequence_length=9, proj_dim=4)
    attention = module("LinformerAttention", LINFORMER_ATTENTION, random_weights(
        reference["LinformerAttention"], "LinformerAttention", LINFORMER_ATTENTION, generator, **attention_sizes),
        **attention_sizes)
    block_sizes = dict(embed_dim=6, num_heads=1, feedforward_dim=10, sequence_length=5, proj_dim=2)
    block = module("LinformerBlock", LINFORMER_BLOCK, random_weights(
        reference["LinformerBlock"], "LinformerBlock", LINFORMER_BLOCK, generator, **block_sizes), **block_sizes)
    config = dict(input_dim=6, embed_dim=8, num_classes=2, num_heads=2, feedforward_dim=16, num_layers=2,
                  sequence_length=8, proj_dim=3, max_len=16)
    model = module("LinformerForSequenceClassification", LINFORMER_CLASSIFIER, random_weights(
        reference["LinformerForSequenceClassification"], "LinformerForSequenceClassification",
        LINFORMER_CLASSIFIER, generator, **config), **config)
    x, y, tokens = randn(generator, 2, 9, 12), randn(generator, 3, 5, 6), one_hot(generator, 2, 7, 6)
    # The feed-forward network outputs zeros, so only dropout on the attention's output makes two passes differ.
    silent = dict(block["weights"], **{role: torch.zeros_like(value) for role, value in block["weights"].items()
                                       if role.startswith("feedforward.out.")})
    dropping = module("LinformerBlock", LINFORMER_BLOCK, silent, dropout=0.5, mode="train", **block_sizes)
    return [
        recipe(7, "hidden: LinformerAttention, 4 heads", False, build=attention,
               call=called(x, return_attention=True), **TOLERANCE),
        recipe(7, "hidden: LinformerAttention, gradients", False, build=attention, grad=True, call=called(x),
               **TOLERANCE),
        recipe(7, "hidden: LinformerBlock, 1 head", False, obj=1, build=block, call=called(y, return_attention=True),
               **TOLERANCE),
        recipe(7, "hidden: LinformerBlock, dropout=0.5 in train mode, feed-forward silenced", False, obj=1,
               build=dropping, compare="differ", call=called(y, repeat=2)),
        recipe(7, "hidden: Linformer classifier logits", False, obj=2, build=model, call=called(tokens), **TOLERANCE),
        recipe(7, "hidden: Linformer classifier gradients", False, obj=2, build=model, grad=True,
               call=called(tokens), **TOLERANCE),
    ]


HIDDEN = {1: attention_cases, 2: multihead_cases, 3: encoder_cases, 4: positional_cases, 5: classifier_cases,
          7: linformer_cases}


def hidden_cases(task, reference):
    """The hidden cases of one task, drawn from a seed of their own."""
    generator = torch.Generator().manual_seed(SEED + task)
    return HIDDEN[task](reference, generator)
