"""How the vit assignment's fixtures are built: fixed random inputs and weights, run through the reference.

Read by tools/make_fixtures.py (`make fixtures ASSIGNMENT=vit`), which runs each builder on the reference namespace.
Instructor-side only: the fixtures ship, these builders do not.
"""
import torch

from checkers.vit._roles import patch_embedding_slots, vit_slots
from course.transformer.fixtures import randomize, weights

# Fixture entries holding outputs; a mistake's differing output is stored beside them under "mistakes". Tasks 1 and
# 2 name their mistakes by construction (checkers/vit/patches.py, embedding.py), so their outputs are not listed.
OUTPUT_KEYS = ("logits", "attention",  # Task 3
               "rollout")  # Task 5

# ---- Tasks 1-2: patchify, PatchEmbedding ----
PATCH_CASES = {  # name: (images' shape (B, C, H, W), patch_size)
    "1 channel, 8 x 8, patch 2": ((2, 1, 8, 8), 2),
    "3 channels, 4 x 6, patch 2": ((2, 3, 4, 6), 2),
    "2 channels, 6 x 4, patch 2": ((1, 2, 6, 4), 2),
    "2 channels, 3 x 5, patch 1": ((1, 2, 3, 5), 1),
    "3 channels, 8 x 12, patch 4": ((2, 3, 8, 12), 4),
    "3 channels, 4 x 4, patch 4 = H = W": ((2, 3, 4, 4), 4),
}
NOT_DIVISIBLE = [((1, 1, 8, 8), 3), ((1, 2, 8, 6), 4), ((1, 2, 6, 8), 4)]  # (images' shape, patch_size)
EMBEDDING_CASES = {  # name: (batch_size, PatchEmbedding's arguments); C·p·p, N and D all differ within a case
    "8 x 8 images, 1 channel, patch 2": (3, dict(image_size=8, patch_size=2, in_channels=1, embed_dim=6)),
    "6 x 6 images, 3 channels, patch 3": (2, dict(image_size=6, patch_size=3, in_channels=3, embed_dim=5)),
}


def patches_fixture(ref, generator):
    """Task 1: patchify on 1 to 3 channels, square and non-square images, patches of 1, 2, 4 and the whole image;
    the (shape, patch_size) pairs that must raise ValueError."""
    cases = {}
    for name, (shape, patch_size) in PATCH_CASES.items():
        images = torch.randn(shape, generator=generator)  # (B, C, H, W)
        cases[name] = dict(images=images, patch_size=patch_size, patches=ref["patchify"](images, patch_size))
    return dict(cases=cases, not_divisible=NOT_DIVISIBLE)


def embedding_fixture(ref, generator):
    """Task 2: PatchEmbedding with random weights (every role) on random images: its tokens, and the projected
    patches projection(patchify(images)) the checker builds the known mistakes' outputs from."""
    cases = {}
    for name, (batch_size, config) in EMBEDDING_CASES.items():
        embedding = randomize(ref["PatchEmbedding"](**config), generator)
        size, channels = config["image_size"], config["in_channels"]
        images = torch.randn(batch_size, channels, size, size, generator=generator)  # (B, C, H, W)
        projected = embedding.projection(ref["patchify"](images, config["patch_size"]))  # (B, N, D)
        cases[name] = dict(config=config, images=images, weights=weights(patch_embedding_slots(embedding)),
                           tokens=embedding(images), projected=projected)
    return dict(cases=cases)


# ---- Tasks 3, 5: VisionTransformer, attention_rollout (the vit-model helper's block) ----

# N = 9 patches, T = 10 tokens, three blocks: their order shows; in_channels unlike patch_size: the two swapped fail
MODEL_SIZES = dict(image_size=6, patch_size=2, in_channels=3, num_classes=5, embed_dim=8, num_heads=2,
                   feedforward_dim=16, num_layers=3)


def model_fixture(ref, generator):
    """Task 3: VisionTransformer with random weights (every role) on random images: the embedded tokens and each
    block's output (hidden, (L + 1, B, N + 1, D)), the logits, and forward_attention's maps (L, B, H, T, T)."""
    images = torch.rand(3, MODEL_SIZES["in_channels"], MODEL_SIZES["image_size"], MODEL_SIZES["image_size"],
                        generator=generator)  # (B, C, H, W), pixels in [0, 1] as the digits'
    model = randomize(ref["VisionTransformer"](**MODEL_SIZES), generator).eval()
    hidden = [model.patch_embedding(images)]  # (B, N + 1, D)
    for block in model.blocks:
        hidden.append(block(hidden[-1]))  # (B, N + 1, D)
    return dict(config=MODEL_SIZES, images=images, weights=weights(vit_slots(model)), hidden=torch.stack(hidden),
                logits=model(images), attention=torch.stack(list(model.forward_attention(images))))


def uniform(batch_size, num_heads, seq_len):
    """Every query attends to every token equally: (B, H, T, T) of 1 / T."""
    return torch.full((batch_size, num_heads, seq_len, seq_len), 1.0 / seq_len)


def one_hot(batch_size, num_heads, seq_len, token):
    """Every query attends to `token` only: (B, H, T, T), column `token` all ones."""
    maps = torch.zeros(batch_size, num_heads, seq_len, seq_len)
    maps[..., token] = 1.0
    return maps


def hand_built_stacks():
    """Stacks of maps whose rollout has a closed form (course/vit/tests/test_checks_rollout.py derives each one)."""
    two_heads = torch.cat([one_hot(1, 1, 4, 2), uniform(1, 1, 4)], dim=1)  # (1, 2, 4, 4): the heads differ
    return {"one layer whose two heads differ (one attends to token 2, one uniformly)": [two_heads],
            "two layers attending to token 1, then to token 3 (the order matters)": [one_hot(1, 2, 4, 1),
                                                                                   one_hot(1, 2, 4, 3)],
            "three layers of uniform attention": [uniform(1, 2, 5)] * 3}


def random_maps(generator, num_layers, batch_size=2, num_heads=3, seq_len=5):
    """num_layers random row-stochastic (B, H, T, T) maps: softmax of random scores."""
    return [torch.softmax(torch.randn(batch_size, num_heads, seq_len, seq_len, generator=generator) * 2, dim=-1)
            for _ in range(num_layers)]


def rollout_fixture(ref, generator):
    """Task 5: attention_rollout on hand-built stacks with known rollouts, then on random maps (B = 2, H = 3,
    T = 5) of 3 layers and of 1 layer; `random` names the case the dtype and gradient checks reuse."""
    stacks = dict(hand_built_stacks())
    stacks["random maps, batch of 2, 3 heads, 3 layers"] = random_maps(generator, 3)
    stacks["random maps, batch of 2, 3 heads, 1 layer"] = random_maps(generator, 1)
    cases = {name: dict(maps=[attention.clone() for attention in maps],
                        rollout=ref["attention_rollout"]([attention.clone() for attention in maps]))
             for name, maps in stacks.items()}
    return dict(cases=cases, random="random maps, batch of 2, 3 heads, 3 layers")


BUILDERS = {1: patches_fixture, 2: embedding_fixture,  # {task: builder(reference namespace, generator) -> fixture}
            3: model_fixture, 5: rollout_fixture}
