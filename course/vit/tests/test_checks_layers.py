"""check_task_1 (patchify) and check_task_2 (PatchEmbedding) both ways: the reference and valid variants pass;
planted and unnamed mistakes fail, named where the evidence identifies them; a wrong patchify is blamed on Task 1;
bad input fails cleanly; a failure shows the caller's line only; every check stays within a second."""
import re

import einops
import pytest
import torch
import torch.nn as nn

import checkers.vit as checkers
from checkers._core import load_fixture
from checkers.vit import CheckFailure, NotImplementedYet, _order, _tokens
from course.mutant import Mutant
from course.vit.mistakes import MUTANTS
from . import patch_loops
from .checks import cpu_seconds, expect_named, raised, reference, variant
from .layers_variants import EMBEDDINGS, PATCHIFIES


OBJECTS = {1: "patchify", 2: "PatchEmbedding"}
PLANTED = [m for m in MUTANTS if m.task in OBJECTS]


def check(task):
    return getattr(checkers, f"check_task_{task}")


def expect_pass(capsys, task, obj):
    check(task)(obj)
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


def failure_of(task, obj):
    """The one-line message of the CheckFailure that check_task_<task>(obj) must raise."""
    with pytest.raises(CheckFailure) as failure:
        check(task)(obj)
    message = str(failure.value)
    assert message.startswith(f"Task {task}"), message
    assert "\n" not in message and "the check itself could not run" not in message, message
    return message


# ----- The reference and valid variants pass ----------------------------------------------------------------------

@pytest.mark.fast
@pytest.mark.parametrize("task", sorted(OBJECTS))
def test_reference_passes(task, capsys):
    expect_pass(capsys, task, reference()[OBJECTS[task]])


@pytest.mark.fast
@pytest.mark.parametrize("patchify", PATCHIFIES, ids=lambda f: f.__name__)
def test_task_1_accepts(patchify, capsys):
    expect_pass(capsys, 1, patchify)


@pytest.mark.fast
@pytest.mark.parametrize("cls", EMBEDDINGS, ids=lambda c: c.__name__)
def test_task_2_accepts(cls, capsys):
    expect_pass(capsys, 2, cls)


@pytest.mark.fast
@pytest.mark.parametrize("seed", [0, 1])
def test_task_2_does_not_depend_on_the_initial_values(seed, capsys):
    """The reference with its parameters drawn from other seeds, and scaled by 1000 after construction, passes."""
    base = reference()["PatchEmbedding"]

    def __init__(self, *args, **kwargs):
        torch.manual_seed(seed)
        base.__init__(self, *args, **kwargs)
        with torch.no_grad():
            for parameter in self.parameters():
                parameter.mul_(1000.0)
    expect_pass(capsys, 2, type("Rescaled", (base,), {"__init__": __init__}))


# ----- Planted mistakes: each fails, and is named when it has a diagnosis ------------------------------------------

@pytest.mark.fast
def test_the_mistakes_the_brief_names_are_planted_and_named():
    named = {m.name for m in PLANTED if m.diagnosis}
    assert {"reshaped straight to patches", "patches in column-major order", "channel last in a patch",
            "transposed patch", "[CLS] appended at the end", "position embedding of N rows, none for [CLS]",
            "[CLS] without its position (row 0 unused)", "no positions added", "sinusoidal table as a buffer",
            "sinusoidal table, a Parameter with requires_grad=False", "projection over the patch axis"} <= named
    for task in OBJECTS:
        assert sum(m.task == task for m in PLANTED) >= 8, task


@pytest.mark.fast
@pytest.mark.parametrize("mutant", PLANTED, ids=lambda m: f"task{m.task}-{m.name}")
def test_planted_mistake_fails_with_its_diagnosis(mutant):
    failure = raised(mutant.task, variant(mutant)[OBJECTS[mutant.task]])
    if mutant.diagnosis:
        expect_named(failure, mutant)


@pytest.mark.fast
def test_diagnoses_are_distinct_per_task():
    """Two mistakes sharing one sentence must be the same mistake seen through the same evidence."""
    named = [(m.task, m.diagnosis) for m in PLANTED if m.diagnosis]
    repeated = {pair for pair in named if named.count(pair) > 1}
    assert repeated <= {(1, _order.COLUMN_MAJOR), (1, checkers.patches.NO_VALUE_ERROR),
                        (2, checkers.embedding.FIXED_TABLE)}, repeated


def _without_fixture_mistakes(value):
    return all(_without_fixture_mistakes(item) for item in value.values()) and "mistakes" not in value \
        if isinstance(value, dict) else True


@pytest.mark.fast
@pytest.mark.parametrize("task", sorted(OBJECTS))
def test_mistakes_are_named_by_construction_not_by_stored_outputs(task):
    """The fixtures hold no known mistake's output: every diagnosis above came from probing the student's answer."""
    assert _without_fixture_mistakes(load_fixture("checkers.vit", task))


# ----- A wrong patchify is named first, in Task 2 -------------------------------------------------------------------

ORDER_MISTAKES = [m for m in PLANTED if m.task == 1 and m.diagnosis and m.diagnosis.split(":")[0] in
                  {sentence.split(":")[0] for sentence in (_order.STRAIGHT, _order.COLUMN_MAJOR, _order.CHANNEL_LAST,
                                                           _order.TRANSPOSED, _order.STRIDED, _order.MIXED,
                                                           _order.INNER_ORDER)}]


@pytest.mark.fast
@pytest.mark.parametrize("mutant", [m for m in PLANTED if m.task == 1], ids=lambda m: m.name)
def test_task_2_blames_a_wrong_patchify_on_task_1(mutant, capsys):
    """A PatchEmbedding right but for its patchify fails with 'fix Task 1 first' whenever it fails; the patch-order
    mistakes always make it fail."""
    embedding = variant(mutant)["PatchEmbedding"]
    if mutant not in ORDER_MISTAKES:
        try:
            check(2)(embedding)
        except CheckFailure as failure:
            assert "does not pass check_task_1" in str(failure) and "fix Task 1 first" in str(failure), str(failure)
        return
    message = failure_of(2, embedding)
    assert "does not pass check_task_1" in message and "fix Task 1 first" in message, message


@pytest.mark.fast
def test_order_mistakes_found():
    assert len(ORDER_MISTAKES) >= 7


@pytest.mark.fast
def test_task_2_blames_a_patchify_stub_on_task_1():
    stub = variant(lambda source: source.replace("    batch_size, channels, height, width = images.shape\n",
                                                 "    raise NotImplementedError()\n", 1))
    message = failure_of(2, stub["PatchEmbedding"])
    assert "does not pass check_task_1" in message and "fix Task 1 first" in message, message


@pytest.mark.fast
def test_a_right_patchify_is_not_blamed():
    hard_coded = next(m for m in PLANTED if m.name == "patch size 2 written in")
    assert "check_task_1" not in failure_of(2, variant(hard_coded)["PatchEmbedding"])


# ----- Mistakes no planted mistake describes still fail, by a property where one applies ----------------------------

def patchify_doubled(images, patch_size):
    return 2 * reference()["patchify"](images, patch_size)


def patchify_overlapping(images, patch_size):
    reference()["patchify"](images, patch_size)  # its ValueError
    return torch.nn.functional.unfold(images, patch_size, stride=1).transpose(1, 2)  # (B, L, C·p·p), L > N


def patchify_batch_swapped(images, patch_size):
    return reference()["patchify"](images.flip(0), patch_size)


def patchify_no_numbers(images, patch_size):
    if images.size(-1) % patch_size or images.size(-2) % patch_size:
        raise ValueError("images must be divisible into patches")
    return reference()["patchify"](images, patch_size)


def patchify_one_channel(images, patch_size):
    """Written for one channel: fails on the first 3-channel images, which are also the first non-square ones."""
    reference()["patchify"](images, patch_size)  # its ValueError
    batch_size, _, height, width = images.shape
    blocks = images.reshape(batch_size, 1, height // patch_size, patch_size, width // patch_size, patch_size)
    return blocks.permute(0, 2, 4, 1, 3, 5).reshape(batch_size, -1, patch_size * patch_size)  # (B, N, p·p)


@pytest.mark.fast
def test_only_a_square_only_answer_is_told_about_square_images():
    message = failure_of(1, patchify_one_channel)
    assert "(2, 3, 4, 6)" in message and "raised RuntimeError" in message, message
    assert checkers.patches.SQUARE not in message, message


def embedding_with_activation():
    base = reference()["PatchEmbedding"]

    def forward(self, images):
        tokens = base.forward(self, images)  # (B, N + 1, D)
        return torch.cat([tokens[:, :1], torch.relu(tokens[:, 1:] - self.position_embedding[:, 1:])
                          + self.position_embedding[:, 1:]], dim=1)
    return type("ReluPatches", (base,), {"forward": forward})


def embedding_without_cls():
    base = reference()["PatchEmbedding"]
    return type("NoCls", (base,), {"forward": lambda self, images: base.forward(self, images)[:, 1:]})


def patchify_flat_view(images, patch_size):
    """Flattens each image with view first: fine on contiguous images only."""
    return reference()["patchify"](images.view(images.size(0), -1).view(images.shape), patch_size)


UNNAMED = [
    (1, patchify_flat_view, "on non-contiguous images (a transposed (B, C, W, H) tensor) raised RuntimeError from "
                            "`view`: " + checkers.patches.NOT_CONTIGUOUS),
    (1, patchify_doubled, "differs from the expected values"),
    (1, patchify_overlapping, "has shape (2, 49, 4), expected (2, 16, 4)"),
    (1, patchify_batch_swapped, _order.BATCH_MIXED),
    (1, patchify_no_numbers, checkers.patches.SIZES_UNNAMED),
    (2, embedding_with_activation(), _tokens.PATCH_TOKENS),
    (2, embedding_without_cls(), "output has shape (3, 16, 6), expected (3, 17, 6)"),
]


@pytest.mark.fast
@pytest.mark.parametrize("task, obj, words", UNNAMED, ids=lambda value: getattr(value, "__name__", None))
def test_unnamed_mistake_fails(task, obj, words):
    message = failure_of(task, obj)
    assert words in message, message


@pytest.mark.fast
@pytest.mark.parametrize("patchify", [variant(next(m for m in PLANTED if m.diagnosis == checkers.patches.LOOPS))
                                      ["patchify"], *patch_loops.LOOPS], ids=lambda f: f.__name__)
def test_task_1_rejects_a_python_loop_over_the_patches(patchify):
    """Task 1 says "without Python loops over patches": a patchify whose torch calls grow from 6 patches to 24 (a
    loop over the patches, their rows or their columns) fails saying so, though its values are right."""
    message = failure_of(1, patchify)
    found = re.fullmatch(r"Task 1: patchify made (\d+) torch calls for 6 patches and (\d+) for 24 patches: (.*)",
                         message)
    assert found and int(found[1]) < int(found[2]) and found[3] == checkers.patches.LOOPS, message


@pytest.mark.fast
@pytest.mark.parametrize("mutant", [m for m in PLANTED if m.task == 2 and m.diagnosis], ids=lambda m: m.name)
def test_task_2_does_not_blame_a_patchify_that_only_loops(mutant):
    """A PatchEmbedding mistake on a looping patchify is named as on the reference's: that patchify fails Task 1 for
    its method, but its values are right, so Task 2 does not send the student back to Task 1 for them."""
    loop = next(m for m in PLANTED if m.diagnosis == checkers.patches.LOOPS)
    both = Mutant(2, f"{mutant.name}, patches by a loop", loop.edits + mutant.edits)
    assert failure_of(2, variant(both)["PatchEmbedding"]) == failure_of(2, variant(mutant)["PatchEmbedding"])


@pytest.mark.fast
def test_task_1_accepts_a_loop_over_the_pixels_of_a_patch(capsys):
    """A loop whose length is the patch's p x p pixels, not the number of patches, is not what the text rules out."""
    from .layers_variants import patchify_pixel_offsets
    expect_pass(capsys, 1, patchify_pixel_offsets)


# ----- Bad input ----------------------------------------------------------------------------------------------------

def _not_implemented(*args, **kwargs):
    raise NotImplementedError()


def _nan_patchify(images, patch_size):
    return torch.full_like(reference()["patchify"](images, patch_size), float("nan"))


BROKEN_FUNCTIONS = {
    "None": (None, "got None"),
    "a class": (nn.Linear, "got the class Linear"),
    "an object": (object(), "expected the function `patchify`"),
    "returns NaN": (_nan_patchify, "NaN"),
    "returns None": (lambda images, patch_size: None, "is None"),
    "raises NotImplementedError": (_not_implemented, None),
}


@pytest.mark.fast
@pytest.mark.parametrize("kind", BROKEN_FUNCTIONS)
def test_task_1_broken_input(kind):
    obj, words = BROKEN_FUNCTIONS[kind]
    _expect_broken(1, obj, words)


def _nan(self, images):
    return torch.full_like(reference()["PatchEmbedding"].forward(self, images), float("nan"))


BROKEN_CLASSES = {
    "None": (lambda base: None, "got None"),
    "instance instead of the class": (lambda base: base(8, 2, 1, 6), "an object of class"),
    "class not an nn.Module": (lambda base: type(base.__name__, (), {}), "not an nn.Module"),
    "function": (lambda base: (lambda *args, **kwargs: None), "the function"),
    "forward returns NaN": (lambda base: type("Broken", (base,), {"forward": _nan}), "NaN"),
    "forward returns None": (lambda base: type("Broken", (base,), {"forward": lambda self, images: None}), "None"),
    "forward raises NotImplementedError": (lambda base: type("Broken", (base,), {"forward": _not_implemented}), None),
    "__init__ creates no layers": (lambda base: type("Broken", (base,), {  # the notebook's stub: forward unwritten too
        "__init__": lambda self, *a, **k: nn.Module.__init__(self), "forward": _not_implemented}), None),
}


@pytest.mark.fast
@pytest.mark.parametrize("kind", BROKEN_CLASSES)
def test_task_2_broken_input(kind):
    make, words = BROKEN_CLASSES[kind]
    _expect_broken(2, make(reference()["PatchEmbedding"]), words)


def _expect_broken(task, obj, words):
    with pytest.raises(CheckFailure) as failure:
        check(task)(obj)
    message = str(failure.value)
    assert "\n" not in message and "the check itself could not run" not in message, message
    if words is None:
        assert isinstance(failure.value, NotImplementedYet), message
        assert message.startswith(f"Task {task} is not implemented yet"), message
    else:
        assert not isinstance(failure.value, NotImplementedYet) and message.startswith(f"Task {task}"), message
        assert words in message, message


# ----- A failure shows the caller's line, none of the checkers' frames ----------------------------------------------

@pytest.mark.fast
@pytest.mark.parametrize("task", sorted(OBJECTS))
def test_failure_renders_only_the_callers_line(task):
    wrong = variant(next(m for m in PLANTED if m.task == task and m.diagnosis))[OBJECTS[task]]
    try:
        check(task)(wrong)  # the caller's line
    except CheckFailure as failure:
        lines = failure._render_traceback_()
    text = "\n".join(lines)
    assert "check(task)(wrong)  # the caller's line" in text, text
    assert "checkers/" not in text and "_core" not in text and len(lines) == 4, text


# ----- The fixtures agree with an independent route (einops) --------------------------------------------------------

def rearranged(images, patch_size):
    return einops.rearrange(images, "b c (h p1) (w p2) -> b (h w) (c p1 p2)", p1=patch_size, p2=patch_size)


@pytest.mark.fast
def test_task_1_fixture_is_einops_rearrange():
    fixture = load_fixture("checkers.vit", 1)
    for case in fixture["cases"].values():
        assert torch.equal(case["patches"], rearranged(case["images"], case["patch_size"]))
    for shape, patch_size in fixture["not_divisible"]:
        assert shape[-1] % patch_size or shape[-2] % patch_size


@pytest.mark.fast
def test_task_2_fixture_is_cls_then_projected_patches_plus_positions():
    for case in load_fixture("checkers.vit", 2)["cases"].values():
        weights, patch_size = case["weights"], case["config"]["patch_size"]
        projected = rearranged(case["images"], patch_size) @ weights["projection.weight"].T + \
            weights["projection.bias"]  # (B, N, D)
        cls = weights["cls_token"].reshape(1, 1, -1).expand(projected.size(0), 1, -1)  # (B, 1, D)
        tokens = torch.cat([cls, projected], dim=1) + weights["position_embedding"]  # (B, N + 1, D)
        torch.testing.assert_close(case["projected"], projected, rtol=0, atol=1e-12)
        torch.testing.assert_close(case["tokens"], tokens, rtol=0, atol=1e-12)


# ----- Speed --------------------------------------------------------------------------------------------------------

def _failing(task, obj):
    def run():
        with pytest.raises(CheckFailure):
            check(task)(obj)
    return run


@pytest.mark.full
@pytest.mark.parametrize("task", sorted(OBJECTS))
def test_checks_take_under_a_second(task):
    obj = reference()[OBJECTS[task]]
    assert cpu_seconds(lambda: check(task)(obj)) <= 1.0


@pytest.mark.full
@pytest.mark.parametrize("patchify", PATCHIFIES, ids=lambda f: f.__name__)
def test_every_valid_patchify_takes_under_a_second(patchify):
    assert cpu_seconds(lambda: check(1)(patchify)) <= 1.0


@pytest.mark.full
@pytest.mark.parametrize("patchify", patch_loops.LOOPS, ids=lambda f: f.__name__)
def test_rejecting_a_python_loop_takes_under_a_second(patchify):
    assert cpu_seconds(_failing(1, patchify), runs=3) <= 1.0


@pytest.mark.full
@pytest.mark.parametrize("mutant", PLANTED, ids=lambda m: f"task{m.task}-{m.name}")
def test_diagnosing_a_planted_mistake_takes_under_a_second(mutant):
    obj = variant(mutant)[OBJECTS[mutant.task]]
    assert cpu_seconds(_failing(mutant.task, obj), runs=3) <= 1.0
