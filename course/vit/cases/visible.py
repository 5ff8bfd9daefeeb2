"""The visible checks' own cases, rebuilt from checkers/vit/fixtures/*.pt as recipes.

They run in the grader too, so a notebook that fools its own check cell (a monkeypatched checker, an edited check
cell) is still held to them; their expected values are recomputed from the reference like every other case's, not
read from the fixture.
"""
import torch

from checkers._core import load_fixture

from grading.cases.parts import called, module, recipe
from .hidden import EMBEDDING_SLOTS, VIT_SLOTS

CHECK_TOLERANCE = dict(atol=1e-6, rtol=1e-6)


def patch_cases():
    """Task 1: every fixture shape, the sizes that must raise ValueError, gradients."""
    fixture = load_fixture("checkers.vit", 1)
    cases = [recipe(1, f"check: {name}", True, call=called(case["images"], case["patch_size"]), **CHECK_TOLERANCE)
             for name, case in fixture["cases"].items()]
    cases += [recipe(1, f"check: images {tuple(shape)}, patch {patch_size}: ValueError", True,
                     call=called(torch.zeros(shape), patch_size, raises=True))
              for shape, patch_size in fixture["not_divisible"]]
    case = next(iter(fixture["cases"].values()))
    return cases + [recipe(1, "check: gradients", True, grad=True, call=called(case["images"], case["patch_size"]),
                           **CHECK_TOLERANCE)]


def embedding_cases():
    """Task 2: each fixture embedding's tokens and gradients by role."""
    cases = []
    for name, case in load_fixture("checkers.vit", 2)["cases"].items():
        built = module("PatchEmbedding", EMBEDDING_SLOTS, case["weights"], **case["config"])
        cases += [recipe(2, f"check: {name}", True, build=built, call=called(case["images"]), **CHECK_TOLERANCE),
                  recipe(2, f"check: {name}, gradients", True, build=built, grad=True, call=called(case["images"]),
                         **CHECK_TOLERANCE)]
    return cases


def model_cases():
    """Task 3: the fixture model's logits, attention maps and gradients."""
    fixture = load_fixture("checkers.vit", 3)
    built, images = module("VisionTransformer", VIT_SLOTS, fixture["weights"], **fixture["config"]), fixture["images"]
    return [recipe(3, "check: logits", True, build=built, call=called(images), **CHECK_TOLERANCE),
            recipe(3, "check: forward_attention", True, build=built, call=called(images, method="forward_attention"),
                   **CHECK_TOLERANCE),
            recipe(3, "check: gradients", True, build=built, grad=True, call=called(images), **CHECK_TOLERANCE)]


def rollout_cases():
    """Task 5: every fixture stack of attention maps."""
    return [recipe(5, f"check: {name}", True, call=called(case["maps"]), **CHECK_TOLERANCE)
            for name, case in load_fixture("checkers.vit", 5)["cases"].items()]


VISIBLE = {1: patch_cases, 2: embedding_cases, 3: model_cases, 5: rollout_cases}
