"""The vit hidden grading cases (course/vit/cases/), scored in-process as the grader scores them.

The reference passes every task; every planted mistake of Tasks 1-3 and 5 (course/vit/mistakes.py's MUTANTS) scores 0
on its task; valid variants score full marks; what a probe receives holds no expected values; and Task 4 is judged by
the reference VisionTransformer loaded with the model's pinned weights: a trained reference earns it, a lookup in
forward, labels read from a global and the measured memorisers do not, and weights the reference cannot take are
refused with a reason.
"""
import re

import pytest
import torch

from checkers.vit import CheckFailure, check_task_1
from checkers.vit.patches import LOOPS
from course.mutant import Mutant
from course.vit.mistakes import MUTANTS
from course.reference import load_reference, reference_source
from course.registry import assignment
from grading.judge.expected import reference_namespace
from grading.judge.trained_models import trained_problem
from grading.recipes import run
from in_process_grading import graded_cases_of, verdict_of

from . import layers_variants, patch_loops
from .digit_models import (images_in_weights, label_reader, lookup_table, memorised_test_split, scoring_exactly,
                           trained_reference, with_row_cls_token)

VIT = assignment("vit")
REFERENCE = reference_namespace(VIT)
POINTS = VIT.points
DEFINITION_TASKS = VIT.definition_tasks


@pytest.fixture(scope="module")
def graded_cases():
    """(cases, expected, names, points, reference) as the grader builds them."""
    return graded_cases_of(VIT, REFERENCE)


def variant(edit):
    """The reference namespace after edit(source) -> source, with a `model` for check_task_4's argument."""
    return dict(load_reference(edit(reference_source(VIT))), model=None)


@pytest.mark.fast
def test_every_definition_task_has_hidden_cases(graded_cases):
    assert set(DEFINITION_TASKS) == {1, 2, 3, 5}
    for task in DEFINITION_TASKS:
        assert sum(not case["visible"] for case in graded_cases[0][task]) >= 5, task


@pytest.mark.fast
@pytest.mark.parametrize("task", DEFINITION_TASKS)
def test_reference_passes_hidden_tests(task, graded_cases):
    verdict = verdict_of(task, dict(graded_cases[4], model=None), graded_cases)
    assert verdict.score == POINTS[task], verdict.message


PLANTED = [mutant for mutant in MUTANTS if mutant.task in DEFINITION_TASKS]


# The full tier: the fast agreement matrix (tests/test_check_grade_agreement.py) asserts the same of each mistake
@pytest.mark.full
@pytest.mark.parametrize("planted", PLANTED, ids=lambda m: f"task{m.task}-{m.name}")
def test_hidden_tests_reject_every_planted_mistake(planted, graded_cases):
    verdict = verdict_of(planted.task, variant(planted.apply), graded_cases)
    assert verdict.score == 0 and verdict.message.startswith(f"Task {planted.task}"), verdict.message


SPLIT = "patches = images.reshape(batch_size, channels, rows, patch_size, cols, patch_size)  # (B, C, h, p, w, p)"
FLATTEN = "return patches.reshape(batch_size, rows * cols, channels * patch_size * patch_size)  # (B, N, C * p * p)"
ROLLED = "rollout = mixed if rollout is None else mixed @ rollout  # (B, T, T)"
# Mistakes that were once told a fix they did not need (issue 21; test_checks_advice.py): still worth 0.
WRONG_ADVICE = [
    Mutant(1, "patch_size read as the number of patches per side", (
        (SPLIT, "patches = images.reshape(batch_size, channels, patch_size, rows, patch_size, cols)"),
        (FLATTEN, "return patches.reshape(batch_size, patch_size * patch_size, channels * rows * cols)"))),
    Mutant(5, "layers multiplied element by element",
           ((ROLLED, ROLLED.replace("mixed @ rollout", "mixed * rollout")),)),
]


@pytest.mark.fast
@pytest.mark.parametrize("mistake", WRONG_ADVICE, ids=lambda m: f"task{m.task}-{m.name}")
def test_hidden_tests_reject_the_mistakes_once_wrongly_advised(mistake, graded_cases):
    verdict = verdict_of(mistake.task, variant(mistake.apply), graded_cases)
    assert verdict.score == 0 and verdict.message.startswith(f"Task {mistake.task}"), verdict.message


@pytest.mark.fast
def test_the_catalogue_covers_every_definition_task():
    """course/vit/mistakes.py plants mistakes of Tasks 1-3 and 5 (the vit-layers and vit-model helpers' part)."""
    assert {mutant.task for mutant in MUTANTS} >= set(DEFINITION_TASKS)


PERMUTE = "patches = patches.permute(0, 2, 4, 1, 3, 5)  # (B, h, w, C, p, p)"
VALID = [
    Mutant(1, "einops.rearrange", ((PERMUTE, "import einops; return einops.rearrange(images, 'b c (h p1) (w p2) "
                                             "-> b (h w) (c p1 p2)', p1=patch_size, p2=patch_size)"),)),
    Mutant(1, "unfold", ((PERMUTE, "return nn.functional.unfold(images, patch_size, stride=patch_size)"
                                   ".transpose(1, 2)"),)),
    Mutant(2, "[CLS] of shape (1, 1, D)", (("nn.Parameter(torch.randn(embed_dim) * 0.02)",
                                            "nn.Parameter(torch.randn(1, 1, embed_dim) * 0.02)"),)),
    Mutant(2, "[CLS] position added apart", (("return torch.cat([cls, patches], dim=1) + self.position_embedding",
                                              "patches = patches + self.position_embedding[:, 1:]\n"
                                              "        cls = cls + self.position_embedding[:, :1]\n"
                                              "        return torch.cat([cls, patches], dim=1)"),)),
    Mutant(5, "0.5 * A + 0.5 * I (its gradient off row-stochastic maps differs from the division's)", (
        ("mixed = mixed + torch.eye(", "mixed = 0.5 * mixed + 0.5 * torch.eye("),
        ("mixed = mixed / mixed.sum(dim=-1, keepdim=True)", "mixed = mixed"))),
    Mutant(5, "the product by einsum", (
        (ROLLED, "rollout = mixed if rollout is None else torch.einsum('bij,bjk->bik', mixed, rollout)"),)),
]


@pytest.mark.fast
@pytest.mark.parametrize("valid", VALID, ids=lambda m: f"task{m.task}-{m.name}")
def test_hidden_tests_accept_valid_variants(valid, graded_cases):
    verdict = verdict_of(valid.task, variant(valid.apply), graded_cases)
    assert verdict.score == POINTS[valid.task], verdict.message


@pytest.mark.fast
@pytest.mark.parametrize("patchify", layers_variants.PATCHIFIES, ids=lambda f: f.__name__)
def test_hidden_tests_accept_the_checks_patchify_variants(patchify, graded_cases):
    """The check's valid patchifies (einops, F.unfold, Tensor.unfold, reshape and permute, a loop over a patch's
    pixels) earn Task 1: none of them makes more torch calls for more patches."""
    verdict = verdict_of(1, {"patchify": patchify}, graded_cases)
    assert verdict.score == POINTS[1], verdict.message


def looping_patchifies():
    """The planted loop over the patches and the tests' loops over patches, rows or columns."""
    planted = next(mutant for mutant in MUTANTS if mutant.diagnosis == LOOPS)
    return [variant(planted.apply)["patchify"], *patch_loops.LOOPS]


@pytest.mark.fast
@pytest.mark.parametrize("patchify", looping_patchifies(), ids=lambda f: f.__name__)
def test_a_python_loop_over_the_patches_scores_0_for_the_check_s_reason(patchify, graded_cases):
    """Right values, but Task 1 says "without Python loops over patches": the check fails it and the grader pays
    nothing, with the same sentence (on its own image sizes: 2 and 12 patches)."""
    with pytest.raises(CheckFailure) as failure:
        check_task_1(patchify)
    assert str(failure.value).endswith(LOOPS)
    verdict = verdict_of(1, {"patchify": patchify}, graded_cases)
    assert verdict.score == 0
    found = re.fullmatch(r"Task 1: hidden: no Python loop over the patches: patchify made (\d+) torch calls for 2 "
                         r"patches and (\d+) for 12 patches: (.*)", verdict.message)
    assert found and int(found[1]) < int(found[2]) and found[3] == LOOPS, verdict.message


@pytest.mark.fast
def test_recipes_hold_no_expected_values(graded_cases):
    """What a probe receives: inputs and weights only; Task 4's digits stay in the grader."""
    cases, expected = graded_cases[0], graded_cases[1]
    text = repr(cases)
    assert "'labels'" not in text and "expected" not in text
    assert "images" not in cases[4][0]["trained"]
    assert expected[4][0]["images"].shape == (360, 1, 8, 8)


def judged(model, graded_cases):
    """The problem trained_problem finds with the model's Task 4 record (None: full marks); the notebook's
    VisionTransformer is the model's own class."""
    cases, expected, _, _, reference = graded_cases
    record = run(cases[4][0], [model], {"VisionTransformer": type(model)})
    return trained_problem(4, record, expected[4][0], reference)[0]


@pytest.mark.full
def test_a_trained_reference_model_earns_task_4(graded_cases):
    assert judged(trained_reference(), graded_cases) is None


@pytest.mark.fast
@pytest.mark.parametrize("cheat", [lookup_table, label_reader], ids=["lookup table", "labels read from a global"])
def test_task_4_is_judged_on_the_reference_not_on_the_model_s_own_forward(cheat, graded_cases):
    """A forward that looks the digits up, or reads their labels from a global, earns nothing: the grader runs the
    reference architecture with the pinned (untrained) weights alone."""
    problem = judged(cheat(graded_cases[4]), graded_cases)
    assert problem and problem.startswith("accuracy ") and "with your weights" in problem, problem


@pytest.mark.full
@pytest.mark.parametrize("make, words", [
    (lambda ns: memorised_test_split(), "of the training digits"),
    (images_in_weights, "of the training digits"),
    # a table of all 1,617 stored digits is a feed-forward layer 1617 wide: the size rule refuses it before the shift
    # floor (which the check's tests still exercise on it) is reached
    (lambda ns: images_in_weights(ns, ("train", "test")),
     "feedforward_dim = 1617 is above 512, 4 x the task's default"),
], ids=["trained on the test split", "test digits in the weights", "train and test digits in the weights"])
def test_memorisers_are_refused_with_the_reason(make, words, graded_cases):
    problem = judged(make(graded_cases[4]), graded_cases)
    assert problem and "cannot be judged" in problem and words in problem, problem


@pytest.mark.full
def test_trained_weights_that_do_not_fit_the_reference_are_not_judged(graded_cases):
    """Settings the reference cannot build, another activation or other sizes score 0 and say why."""
    cases, expected, _, _, reference = graded_cases
    record = run(cases[4][0], [trained_reference()], {"VisionTransformer": type(trained_reference())})
    judge = lambda changed: trained_problem(4, dict(record, **changed), expected[4][0], reference)[0]
    assert "not valid" in judge({"config": dict(record["config"], num_heads=[5, 5])})
    assert "not valid" in judge({"config": dict(record["config"], activation=["ReLU", "ReLU"])})
    assert "disagree" in judge({"config": dict(record["config"], num_heads=[4, 8])})
    weights = dict(record["weights"])
    weights["patch_embedding.position_embedding"] = weights["patch_embedding.position_embedding"][:, :-1]
    assert "rows" in judge({"weights": weights})
    weights = dict(record["weights"], **{"head.weight": record["weights"]["head.weight"][:7],
                                         "head.bias": record["weights"]["head.bias"][:7]})
    assert "the digits have 10 classes" in judge({"weights": weights})


@pytest.mark.fast
def test_a_model_of_other_sizes_is_rebuilt_with_them(graded_cases):
    """Sizes the student chose (here patch 4, embed 32, 3 heads, 1 block) are read from the weights and settings."""
    torch.manual_seed(0)
    model = graded_cases[4]["VisionTransformer"](image_size=8, patch_size=4, in_channels=1, num_classes=10,
                                                 embed_dim=24, num_heads=3, feedforward_dim=40, num_layers=1)
    cases, expected, _, _, reference = graded_cases
    record = run(cases[4][0], [model], {"VisionTransformer": type(model)})
    problem = trained_problem(4, record, expected[4][0], reference)[0]
    assert problem.startswith("accuracy ") and "at least 95%" in problem, problem  # judged, untrained: below target


@pytest.mark.full
def test_exactly_342_of_360_earns_task_4_and_341_does_not(graded_cases):
    """The grade counts in integers as check_task_4 does: 342 / 360 reaches the 95% bar (a float32 mean would not)."""
    exact, _ = scoring_exactly(trained_reference(), 342)
    below, _ = scoring_exactly(trained_reference(), 341)
    assert judged(exact, graded_cases) is None
    problem = judged(below, graded_cases)
    assert problem and problem.startswith("accuracy 94.7%") and "at least 95%" in problem, problem


@pytest.mark.full
def test_a_row_cls_token_is_loaded_into_the_reference_s_vector(graded_cases):
    """[CLS] of shape (1, D), accepted by Tasks 2-4, is recorded as it is and reshaped to the reference's (D,) when
    the grader loads it: the trained model earns Task 4."""
    model = with_row_cls_token(graded_cases[4], trained_reference())
    cases = graded_cases[0]
    record = run(cases[4][0], [model], {"VisionTransformer": type(model)})
    assert tuple(record["weights"]["patch_embedding.cls_token"].shape) == (1, model.patch_embedding.cls_token.numel())
    assert judged(model, graded_cases) is None
