"""Task 1: patchify, images (B, C, H, W) -> patches (B, N, C·p·p) in row-major order, each flattened channel first."""
import math
import re

import torch

from .._calls import fail_method, recorded_calls
from .._compare import expect_close, expect_finite, expect_tensor, matches
from .._core import (Diagnosis, CheckFailure, NotImplementedYet, check_function, expect_callable, load_fixture,
                    one_line, slug_of)
from ._order import explain_order, is_patchify, probe

# patchify moves numbers and computes none: float64 values must come out as they went in (1e-12 leaves room for an
# answer that multiplies by one)
ATOL, RTOL = 1e-12, 0.0
NO_VALUE_ERROR = Diagnosis(
    "no-value-error",
    "raise a ValueError naming the sizes when H or W is not a multiple of patch_size: test H % "
    "patch_size and W % patch_size before reshaping.")
SIZES_UNNAMED = Diagnosis(
    "sizes-unnamed",
    "the ValueError's message should name the sizes: the image's height and width and the patch size, "
    "e.g. f\"{height} x {width} images do not split into {patch_size} x {patch_size} patches\".")
SQUARE = Diagnosis(
    "square",
    "the images need not be square: read the height and the width separately from images.shape, H / p "
    "patch rows and W / p patch columns.")
FIXED_SIZE = Diagnosis(
    "fixed-size",
    "the same call runs on {size} images but raises on {double} ones too, so the patch grid is fixed to one "
    "image size: compute it from images.shape, H / p patch rows and W / p patch columns.")
FIXED_CHANNELS = Diagnosis(
    "fixed-channels",
    "the same images run with {channels} channel(s) but raise with {double} too, so the number of "
    "channels is fixed: read C from images.shape and flatten each patch as (C, p, p).")
FIXED_BATCH = Diagnosis(
    "fixed-batch",
    "the same call runs on a batch of {batch_size} but raises on {double} too, so the batch size is fixed: "
    "read B from images.shape and keep the batch axis whole.")
AXES_SWAPPED = Diagnosis(
    "axes-swapped",
    "the patch axis and the pixel axis are swapped, (B, C·p·p, N), the layout F.unfold returns: "
    "transpose(1, 2) to (B, N, C·p·p).")
PER_SIDE = Diagnosis(
    "per-side",
    "each patch is H / patch_size × W / patch_size pixels, so patch_size is read as the number of patches "
    "per side: it is the side of a patch in pixels, giving H / p patch rows and W / p patch columns.")
IN_PLACE = Diagnosis(
    "patches-in-place",
    "patchify modified its input `images` in place; build a new tensor instead (reshape, permute, unfold).")
NOT_CONTIGUOUS = Diagnosis(
    "not-contiguous",
    "`view` needs memory laid out in the tensor's own order, which a permuted, transposed or sliced "
    "tensor lacks: use reshape (or call .contiguous() first).")
NO_GRADIENT = Diagnosis(
    "no-gradient",
    "no gradient reaches the images: build the patches with torch operations on `images` (no .detach(), "
    ".numpy() or torch.tensor(...)), so that the patch embedding can be trained through them.")

ROWS_FROM_WIDTH = Diagnosis(
    "rows-from-width",
    "it is right on square images but not on {height} × {width} ones: the patch rows and columns are counted "
    "from the wrong sides; H / p patch rows come from the height and W / p patch columns from the width.")
ONE_SIDE_TESTED = Diagnosis(
    "one-side-tested",
    "it raises ValueError when {tested} is not a multiple of patch_size but not when only {other} is: test both "
    "sides, `if H % patch_size or W % patch_size`.")
BOTH_SIDES_NEEDED = Diagnosis(
    "both-sides-needed",
    "it raises ValueError only when both H and W are not multiples of patch_size, not when one side alone is: "
    "either side is enough, `if H % patch_size or W % patch_size` (or, not and).")
RESHAPED = Diagnosis(
    "reshaped",
    "the values are the right patches in the right order, but shaped {shape}{meaning}: reshape the result to "
    "(B, N, C·p·p), N = (H / p)·(W / p) patch tokens of C·p·p values each.")

LOOPS = Diagnosis(
    "loops",
    "it loops in Python over the patches; use reshape/permute (or einops) so the work does not grow with the "
    "number of patches.")
# Images of one patch size with 2 x 3 and 4 x 6 patches: a loop over the patches, their rows or their columns makes
# more torch calls on the second; a loop over the batch, the channels or the pixels of a patch does not.
COUNTED_SHAPES, COUNTED_PATCH = ((2, 3, 4, 6), (2, 3, 8, 12)), 2


def loop_problem(counts, inputs):
    """What is wrong with a patchify whose number of torch calls grows with the number of patches (None: it does not).

    Args:
        counts: [{qualified name: number of calls}] of patchify on each of inputs (checkers._calls).
        inputs: the arguments of each call, [images (B, C, H, W), patch_size]; the grader's judge passes them too.
    """
    runs = sorted((images.size(-2) // patch_size * (images.size(-1) // patch_size), sum(seen.values()))
                  for (images, patch_size), seen in zip(inputs, counts))
    for (patches, calls), (more_patches, more_calls) in zip(runs, runs[1:]):
        if more_patches > patches and more_calls > calls:
            return (f"patchify made {calls} torch calls for {patches} patches and {more_calls} for {more_patches} "
                    f"patches: {LOOPS}")
    return None


def _expect_no_loops(task, patchify):
    """Fail when patchify makes more torch calls on images of more patches (a Python loop over them)."""
    counts, inputs = [], []
    for shape in COUNTED_SHAPES:
        images = torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape)
        with recorded_calls() as seen:
            task.call(describe(images, COUNTED_PATCH), patchify, images, COUNTED_PATCH)
        counts.append(seen)
        inputs.append([images, COUNTED_PATCH])
    problem = loop_problem(counts, inputs)
    if problem:
        fail_method(task, problem, LOOPS.slug)


def describe(images, patch_size):
    """'patchify(images of shape (2, 3, 4, 6), patch_size=2)', as the student would call it."""
    stored = "" if images.is_contiguous() else " on non-contiguous images (a transposed (B, C, W, H) tensor)"
    return f"patchify(images of shape {tuple(images.shape)}, patch_size={patch_size}){stored}"


def patches_of(task, patchify, images, patch_size):
    """patchify(images, patch_size), checked to leave images alone and to be a (B, N, C·p·p) tensor of their dtype."""
    (batch_size, channels), (height, width) = images.shape[:2], images.shape[2:]
    before, what = images.detach().clone(), describe(images, patch_size)
    try:
        result = task.call(what, patchify, images, patch_size)
    except CheckFailure as failure:
        if "view size is not compatible" in str(failure):
            task.fail(f"{what} raised RuntimeError from `view`: {NOT_CONTIGUOUS}", NOT_CONTIGUOUS.slug)
        raise
    if not torch.equal(before, images.detach()):
        task.fail(IN_PLACE)
    num_patches = (height // patch_size) * (width // patch_size)
    shape = (batch_size, num_patches, channels * patch_size * patch_size)
    if isinstance(result, torch.Tensor) and tuple(result.shape) != shape:
        _explain_shape(task, patchify, tuple(images.shape), patch_size, tuple(result.shape), what)
    return expect_tensor(task, what, result, shape, images.dtype)


def _explain_shape(task, patchify, images_shape, patch_size, got_shape, what):
    """Fail naming the layout of a wrong-shaped output when patchify of images holding their pixels' indices shows
    it (patches transposed, or blocks of H / p x W / p pixels); otherwise stating the sizes expected."""
    batch_size, channels, height, width = images_shape
    num_patches, size = (height // patch_size) * (width // patch_size), channels * patch_size * patch_size
    found = f"{what} has shape {got_shape}, expected {(batch_size, num_patches, size)} = (B, N, C·p·p)"
    regrouped = _regrouped(patchify, images_shape, patch_size, got_shape)
    if regrouped:
        task.fail(f"{found}: {regrouped}", RESHAPED.slug)
    index = probe(patchify, images_shape, patch_size)
    if index is not None:
        if is_patchify(index.transpose(1, 2), images_shape, (patch_size, patch_size)):
            task.fail(f"{found}: {AXES_SWAPPED}", AXES_SWAPPED.slug)
        if is_patchify(index, images_shape, (height // patch_size, width // patch_size)):
            task.fail(f"{found}: {PER_SIDE}", PER_SIDE.slug)
    task.fail(f"{found}, for N = (H / p)·(W / p) = ({height} / {patch_size})·({width} / {patch_size}) = "
              f"{num_patches} patches of C·p·p = {size} values.")


def _regrouped(patchify, images_shape, patch_size, got_shape):
    """RESHAPED filled in when patchify's output, read in memory order as (B, N, C·p·p), is right: the grid not
    flattened, (B, H / p, W / p, C·p·p), the channels as tokens, (B, C·N, p·p), or another grouping."""
    batch_size, channels, height, width = images_shape
    rows, cols, area = height // patch_size, width // patch_size, patch_size * patch_size
    images = torch.arange(math.prod(images_shape), dtype=torch.float64).reshape(images_shape)
    try:
        with torch.no_grad():
            got = patchify(images, patch_size).reshape(batch_size, rows * cols, channels * area)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    if not torch.equal(got.round(), got) or not is_patchify(got.long(), images_shape, (patch_size, patch_size)):
        return None
    meanings = {(batch_size, rows, cols, channels * area): " = (B, H / p, W / p, C·p·p), the patch grid not flattened",
                (batch_size, channels * rows * cols, area): " = (B, C·N, p·p), each channel of a patch a token of its "
                                                            "own"}
    return RESHAPED.format(shape=got_shape, meaning=meanings.get(tuple(got_shape), ""))


def _square_only(patchify, shape, patch_size):
    """ROWS_FROM_WIDTH filled in when patchify is right on square images of the shorter side and on the transposed
    shape's squares but wrong on this non-square one (rows and columns counted from the wrong sides)."""
    batch_size, channels, height, width = shape
    side = min(height, width)
    if height == width or side % patch_size:
        return None
    square = probe(patchify, (batch_size, channels, side, side), patch_size)
    if square is None or not is_patchify(square, (batch_size, channels, side, side), (patch_size, patch_size)):
        return None
    return ROWS_FROM_WIDTH.format(height=height, width=width)


def _runs(patchify, shape, patch_size):
    """Whether patchify of images of this shape returns a tensor of the right shape (a probe: never raises)."""
    batch_size, channels, height, width = shape
    expected = (batch_size, (height // patch_size) * (width // patch_size), channels * patch_size * patch_size)
    try:
        with torch.no_grad():
            result = patchify(torch.rand(shape, dtype=torch.float64), patch_size)
    except Exception:  # noqa: BLE001 -- only a probe
        return False
    return isinstance(result, torch.Tensor) and tuple(result.shape) == expected


def _what_is_fixed(patchify, shape, patch_size, passed):
    """A sentence naming the one size that makes patchify raise, found by changing one size at a time to one of an
    earlier case that ran: the image a square (its corner), the height and width (fixed when twice that size raises
    too, which any grid computed from the shape handles), the channels and the batch (likewise)."""
    batch_size, channels, height, width = shape
    side = min(height, width)
    if height != width and _runs(patchify, (batch_size, channels, side, side), patch_size):
        return SQUARE
    for other_batch, other_channels, other_height, other_width in passed:
        if (other_height, other_width) != (height, width) and \
                _runs(patchify, (batch_size, channels, other_height, other_width), patch_size) and \
                not _runs(patchify, (batch_size, channels, 2 * other_height, 2 * other_width), patch_size):
            return FIXED_SIZE.format(size=f"{other_height} × {other_width}", double=f"{2 * other_height} × "
                                                                                   f"{2 * other_width}")
        if other_channels != channels and _runs(patchify, (batch_size, other_channels, height, width), patch_size) \
                and not _runs(patchify, (batch_size, 2 * other_channels, height, width), patch_size):
            return FIXED_CHANNELS.format(channels=other_channels, double=2 * other_channels)
        if other_batch != batch_size and _runs(patchify, (other_batch, channels, height, width), patch_size) and \
                not _runs(patchify, (2 * other_batch, channels, height, width), patch_size):
            return FIXED_BATCH.format(batch_size=other_batch, double=2 * other_batch)
    return None


def _expect_case(task, patchify, case, passed):
    """The case's patches; passed: the image shapes of the cases before it, all of which ran."""
    images, patch_size = case["images"], case["patch_size"]
    try:
        got = patches_of(task, patchify, images, patch_size)
    except NotImplementedYet:
        raise
    except CheckFailure as failure:
        fixed = " raised " in str(failure) and _what_is_fixed(patchify, tuple(images.shape), patch_size, passed)
        if fixed:
            task.fail(f"{str(failure).split(': ', 1)[1].rstrip('.')}; {fixed}", slug_of(fixed))
        raise
    what = describe(images, patch_size)
    if not matches(got, case["patches"], ATOL, RTOL):
        expect_finite(task, what, got)
        square = _square_only(patchify, tuple(images.shape), patch_size)
        if square:
            task.fail(f"{what} is wrong: {square}", square.slug)
        explain_order(task, patchify, tuple(images.shape), patch_size, what)
    expect_close(task, what, got, case["patches"], ATOL, RTOL)


def _expect_value_error(task, patchify, shape, patch_size):
    """A ValueError whose message holds the patch size and every size it does not divide."""
    images = torch.zeros(shape)
    what = describe(images, patch_size)
    try:
        result = patchify(images, patch_size)
    except ValueError as error:
        numbers = set(re.findall(r"\d+", str(error)))
        needed = {str(patch_size)} | {str(size) for size in shape[-2:] if size % patch_size}
        if not needed <= numbers:
            task.fail(f"{what} raised ValueError({one_line(error, 100)!r}): {SIZES_UNNAMED}", SIZES_UNNAMED.slug)
        return
    except Exception as error:  # noqa: BLE001 -- the student's error, named below
        sides = _sides_tested(patchify, shape[1], patch_size)
        task.fail(f"{what} raised {type(error).__name__} ({one_line(error, 100)}): {sides or NO_VALUE_ERROR}",
                  (sides or NO_VALUE_ERROR).slug)
    sides = _sides_tested(patchify, shape[1], patch_size)
    task.fail(f"{what} returned {type(result).__name__} instead of raising: {sides or NO_VALUE_ERROR}",
              (sides or NO_VALUE_ERROR).slug)


def _sides_tested(patchify, channels, patch_size):
    """Which bad sides make patchify raise ValueError: ONE_SIDE_TESTED when only one side's, BOTH_SIDES_NEEDED when
    only both at once; None otherwise (none, or every one)."""
    if patch_size < 2:
        return None
    good, bad = 2 * patch_size, 2 * patch_size + 1
    raised = {}
    for name, (height, width) in {"H": (bad, good), "W": (good, bad), "both": (bad, bad)}.items():
        try:
            patchify(torch.zeros(1, channels, height, width), patch_size)
            raised[name] = False
        except ValueError:
            raised[name] = True
        except Exception:  # noqa: BLE001 -- only a probe: any other error is no ValueError
            raised[name] = False
    if raised["both"] and raised["H"] != raised["W"]:
        tested = "H" if raised["H"] else "W"
        return ONE_SIDE_TESTED.format(tested=tested, other="W" if tested == "H" else "H")
    if raised["both"] and not raised["H"] and not raised["W"]:
        return BOTH_SIDES_NEEDED
    return None


def _expect_non_contiguous(task, patchify, case):
    """The same images stored column by column (a transposed view) give the same patches."""
    images, patch_size = case["images"], case["patch_size"]
    strided = images.transpose(-2, -1).contiguous().transpose(-2, -1)  # (B, C, H, W), not contiguous
    got = patches_of(task, patchify, strided, patch_size)
    expect_close(task, describe(strided, patch_size), got, case["patches"], ATOL, RTOL)


def _expect_gradients(task, patchify, case):
    """Gradients reach the images: each pixel sits in one patch, so d(sum of the patches)/d(pixel) is 1."""
    images = case["images"].clone().requires_grad_(True)
    total = patches_of(task, patchify, images, case["patch_size"]).sum()
    if not total.requires_grad:
        task.fail(NO_GRADIENT)
    task.call("backward through patchify", total.backward)
    if images.grad is None:
        task.fail(NO_GRADIENT)
    expect_close(task, "the gradient of the sum of the patches with respect to the images (each pixel in one patch)",
                 images.grad, torch.ones_like(images), ATOL, RTOL)


@check_function(1)
def check_task_1(task, patchify):
    """Check patchify(images, patch_size): values on 1 to 3 channels, square and non-square images, patches of 1, 2, 4
    pixels and of the whole image, the ValueError, the input untouched, gradients, non-contiguous and float32 input."""
    expect_callable(task, patchify, "patchify")
    fixture = load_fixture(__package__, 1)
    passed = []
    for case in fixture["cases"].values():
        _expect_case(task, patchify, case, passed)
        passed.append(tuple(case["images"].shape))
    for shape, patch_size in fixture["not_divisible"]:
        _expect_value_error(task, patchify, shape, patch_size)
    case = next(case for case in fixture["cases"].values() if case["images"].size(1) > 1)
    _expect_non_contiguous(task, patchify, case)
    _expect_gradients(task, patchify, case)
    single = patches_of(task, patchify, case["images"].float(), case["patch_size"])
    expect_close(task, f"{describe(case['images'], case['patch_size'])} on float32 images", single,
                 case["patches"].float(), ATOL, RTOL)
    _expect_no_loops(task, patchify)  # last: a patchify failing only this gives right values (MethodFailure)
    task.passed("patches in row-major order, each flattened channel first (C, p, p), on every shape tried; the "
                "ValueError naming the sizes; the images untouched; gradients, non-contiguous and float32 images.")
