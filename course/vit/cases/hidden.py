"""Hidden cases of Tasks 1-3 and 5: other batch sizes, channels, image shapes, patch sizes, heads, depths, classes.

A notebook that special-cases the visible inputs (or is right only for them) fails these. Every input obeys the
task's pinned contract, so a correct answer in any formulation passes; the pinned error (patchify's ValueError when a
side is not a multiple of the patch) is a case too. Weights are random per role, drawn with the shapes of the
reference's modules; gradients by role catch a position embedding or [CLS] token that is not a learned parameter.
"""
import torch

from grading.cases.parts import called, counted, module, randn, random_weights, recipe
from .facts import CLS_TOKEN

SEED = 424242  # never a seed of the notebook, the checkers or make_fixtures
TOLERANCE = dict(atol=1e-6, rtol=1e-6)
EMBEDDING_SLOTS = "checkers.vit._roles:patch_embedding_slots"
VIT_SLOTS = "checkers.vit._roles:vit_slots"


def patch_cases(reference, generator):
    """Task 1: 1 to 4 channels, square and oblong images, patches of 1 to 5 and the whole image, gradients, float32,
    non-contiguous images, and the ValueError of a side that is not a multiple of the patch, its message naming that
    side and the patch."""
    cases = []
    for shape, patch_size in (((3, 1, 6, 6), 3), ((2, 4, 10, 5), 5), ((1, 2, 4, 8), 4), ((2, 3, 9, 6), 3),
                              ((4, 1, 2, 2), 1), ((1, 3, 12, 12), 12), ((2, 2, 8, 4), 2)):
        images = randn(generator, *shape)
        cases.append(recipe(1, f"hidden: images {shape}, patch {patch_size}", False,
                            call=called(images, patch_size), **TOLERANCE))
    images = randn(generator, 2, 3, 6, 9)
    return cases + [
        recipe(1, "hidden: patch_size by keyword", False, call=called(images, patch_size=3), **TOLERANCE),
        recipe(1, "hidden: gradients", False, grad=True, call=called(images, 3), **TOLERANCE),
        recipe(1, "hidden: float32 images", False, call=called(images.float(), 3), atol=1e-6, rtol=1e-6),
        recipe(1, "hidden: non-contiguous images (a batch transposed to (B, C, W, H))", False,
               call=called(images.transpose(-1, -2), 3), **TOLERANCE),  # as the check's: `view` cannot take them
        recipe(1, "hidden: height not a multiple of the patch", False,
               call=called(randn(generator, 1, 2, 7, 6), 3, raises=True, names=(7, 3))),
        recipe(1, "hidden: width not a multiple of the patch", False,
               call=called(randn(generator, 2, 1, 6, 10), 4, raises=True, names=(10, 4))),
        recipe(1, "hidden: no Python loop over the patches", False, call=called(randn(generator, 1, 2, 6, 3), 3),
               calls=counted("checkers.vit.patches:loop_problem", [randn(generator, 1, 2, 12, 9), 3]), **TOLERANCE)]


def embedding_cases(reference, generator):
    """Task 2: other image sizes, channels, patches and widths; a batch of one; gradients by role; float32."""
    cls, cases = reference["PatchEmbedding"], []
    for batch, config in ((2, dict(image_size=9, patch_size=3, in_channels=2, embed_dim=7)),
                          (3, dict(image_size=4, patch_size=1, in_channels=3, embed_dim=5)),
                          (1, dict(image_size=10, patch_size=5, in_channels=1, embed_dim=12)),
                          (2, dict(image_size=6, patch_size=6, in_channels=4, embed_dim=8))):
        weights = random_weights(cls, "PatchEmbedding", EMBEDDING_SLOTS, generator, **config)
        built = module("PatchEmbedding", EMBEDDING_SLOTS, weights, **config)
        images = randn(generator, batch, config["in_channels"], config["image_size"], config["image_size"])
        name = f"hidden: {config['image_size']}^2 images, {config['in_channels']} channels, patch " \
               f"{config['patch_size']}, embed_dim {config['embed_dim']}"
        cases += [recipe(2, name, False, build=built, call=called(images), **TOLERANCE),
                  recipe(2, f"{name}, gradients", False, build=built, grad=True, call=called(images), **TOLERANCE)]
    return cases + [
        recipe(2, "hidden: [CLS] is a learned parameter", False, build=built, facts=[CLS_TOKEN]),
        recipe(2, "hidden: float32, module built under float32", False, call=called(images.float()),
               build=module("PatchEmbedding", EMBEDDING_SLOTS, weights, "float32", native=True, **config),
               atol=1e-5, rtol=1e-5)]


def natural(weights, generator):
    """Every LayerNorm's scale near 1 and shift near 0, as training keeps them."""
    return {role: (1.0 if role.endswith("weight") else 0.0) + randn(generator, *value.shape, scale=0.2)
            if "norm" in role else value for role, value in weights.items()}


VIT_CONFIGS = (  # other sizes than the visible check's, each with its own batch
    (2, dict(image_size=6, patch_size=3, in_channels=3, num_classes=4, embed_dim=12, num_heads=3, feedforward_dim=20,
             num_layers=3)),
    (3, dict(image_size=8, patch_size=4, in_channels=1, num_classes=7, embed_dim=8, num_heads=1, feedforward_dim=16,
             num_layers=1)),
    (1, dict(image_size=10, patch_size=2, in_channels=2, num_classes=3, embed_dim=16, num_heads=4, feedforward_dim=12,
             num_layers=2)),
)


def model_cases(reference, generator):
    """Task 3: three other configurations (logits, attention maps, gradients by role), dropout in eval and train."""
    cls, cases = reference["VisionTransformer"], []
    for batch, config in VIT_CONFIGS:
        weights = natural(random_weights(cls, "VisionTransformer", VIT_SLOTS, generator, scale=0.4, **config),
                          generator)
        built = module("VisionTransformer", VIT_SLOTS, weights, **config)
        images = randn(generator, batch, config["in_channels"], config["image_size"], config["image_size"])
        name = f"hidden: {config['num_layers']} blocks of {config['num_heads']} heads, {config['image_size']}^2 " \
               f"images of {config['in_channels']} channels, patch {config['patch_size']}, " \
               f"{config['num_classes']} classes"
        cases += [recipe(3, name, False, build=built, call=called(images), **TOLERANCE),
                  recipe(3, f"{name}, forward_attention", False, build=built,
                         call=called(images, method="forward_attention"), **TOLERANCE),
                  recipe(3, f"{name}, gradients", False, build=built, grad=True, call=called(images), **TOLERANCE)]
    return cases + [
        recipe(3, "hidden: dropout=0.3 in eval mode", False, call=called(images), **TOLERANCE,
               build=module("VisionTransformer", VIT_SLOTS, weights, **dict(config, dropout=0.3))),
        recipe(3, "hidden: dropout=0.5 in train mode", False, compare="differ", call=called(images, repeat=2),
               build=module("VisionTransformer", VIT_SLOTS, weights, mode="train", **dict(config, dropout=0.5)))]


def attention_maps(generator, layers, batch, heads, tokens, scale=2.0):
    """A list of (B, H, T, T) attention weights, each row a softmax of random scores."""
    return [torch.softmax(randn(generator, batch, heads, tokens, tokens, scale=scale), dim=-1) for _ in range(layers)]


def rollout_cases(reference, generator):
    """Task 5: 1 to 4 layers, 1 to 5 heads, 2 to 17 tokens, sharp, flat and one-hot attention, float32, gradients."""
    cases = []
    for layers, batch, heads, tokens, scale in ((1, 2, 3, 5, 2.0), (2, 1, 1, 2, 1.0), (3, 3, 2, 10, 4.0),
                                                (4, 2, 5, 17, 2.0), (2, 2, 4, 7, 0.1)):
        maps = attention_maps(generator, layers, batch, heads, tokens, scale)
        cases.append(recipe(5, f"hidden: {layers} layers of {heads} heads over {tokens} tokens, batch {batch}",
                            False, call=called(maps), **TOLERANCE))
    one_hot = [torch.eye(6, dtype=torch.float64)[torch.randint(6, (2, 2, 6), generator=generator)] for _ in range(3)]
    return cases + [
        recipe(5, "hidden: hard (one-hot) attention, 3 layers", False, call=called(one_hot), **TOLERANCE),
        recipe(5, "hidden: float32 maps", False, call=called([m.float() for m in maps]), atol=1e-6, rtol=1e-5),
        recipe(5, "hidden: gradients to every map", False, grad=True, call=called(maps), grad_rows_sum_to_1=True,
               **TOLERANCE)]


HIDDEN = {1: patch_cases, 2: embedding_cases, 3: model_cases, 5: rollout_cases}


def hidden_cases(task, reference):
    """The hidden cases of one task, drawn from a seed of their own."""
    generator = torch.Generator().manual_seed(SEED + task)
    return HIDDEN[task](reference, generator)
