"""Task 4: the trained VisionTransformer, judged on the course's held-out test digits (course_lib.digits' split,
never the student's variables).

The 1,797 digits are public, so accuracy on the test images alone cannot tell learning from memorising. After the
target, the check asks two more things: that the accuracy lives in the weights (re-drawn at random they must fall
to chance), and that it survives moving every test image by one pixel (course_lib.digits.shifted_copies), which a
ViT that learned digits from the training images does about as well as it does, and one fitted to the 360 test
images does not. Thresholds measured with `python -m tools.measure_vit_memorisers` (reference ViT, 1 thread):

    (SHIFT_TABLE: see the end of this docstring, filled from the measured runs)
"""
import torch

from course_lib.digits import digit_splits, shifted_copies
from course_lib.vit_defaults import TARGET_ACCURACY  # one bar for the notebook, the check and the grade

from .._compare import expect_finite, expect_tensor
from .._core import check_function
from .._trained import expect_trained_model, model_device, redrawn
from ._roles import MissingPart, vision_transformer_slots

CLASS_NAME = "VisionTransformer"
SHIFT_FLOOR = 0.30  # accuracy on the 1,440 one-pixel-shifted test images (measured: see the docstring)
RESET_CEILING = 0.50  # re-drawn weights score about 1 image in 10
CHECK_SEED = 4848
NAME = "model"

NOT_FROM_WEIGHTS = ("with every weight re-drawn the model still classifies {accuracy:.0%} of the test digits, so its "
                    "answers do not come from what it learned: forward must compute the logits from the images with "
                    "the model's layers.")
MEMORISED = ("the model classifies {clean:.0%} of the test digits but only {moved:.0%} once they move by one pixel "
             "(a ViT trained on the training digits keeps at least {floor:.0%}): it looks fitted to the test images "
             "themselves. Train it on the training split only (digit_datasets()).")


def _logits(task, model, images):
    """model(images) without gradients: finite (B, 10) logits, on the CPU."""
    with torch.no_grad():
        logits = task.call(f"{NAME}(images)", model, images.to(model_device(model)))
    logits = expect_tensor(task, f"{NAME}(images)", logits)
    if tuple(logits.shape) != (len(images), 10):
        task.fail(f"{NAME}(images) returned shape {tuple(logits.shape)}, expected (batch_size, num_classes) = "
                  f"{(len(images), 10)}.")
    expect_finite(task, f"{NAME}(images)", logits)
    return logits.float().cpu()


def _accuracy(task, model, images, labels):
    """Fraction of images whose largest logit is their label."""
    return (_logits(task, model, images).argmax(dim=-1) == labels).float().mean().item()


def _expect_layout(task, model):
    """The pinned VisionTransformer of Task 3, whatever its sizes, with no parameter or buffer outside its roles."""
    if type(model).__name__ != CLASS_NAME:
        task.fail(f"expected the trained {CLASS_NAME} of Task 3, got a {type(model).__name__}.")
    try:
        pinned = {id(value) for value in vision_transformer_slots(model).values()}
    except MissingPart as missing:
        task.fail(f"the model should be the VisionTransformer of Task 3: {missing}.")
    other = next((name for name, value in model.named_parameters() if id(value) not in pinned), None)
    other = other or next((name for name, _ in model.named_buffers()), None)
    if other is not None:
        task.fail(f"the model holds a tensor outside the pinned VisionTransformer layout, `{other}`: the grade loads "
                  "only the pinned weights into the course's VisionTransformer, so the model must learn with those.")


@check_function(4)
def check_task_4(task, model):
    """Check the trained ViT: pinned layout, >= 95% on the test digits, from its weights, robust to 1-pixel shifts."""
    expect_trained_model(task, model, CLASS_NAME)
    _expect_layout(task, model)
    images, labels = digit_splits()["test"]  # (360, 1, 8, 8), (360,)
    caller_mode = model.training
    model.eval()
    try:
        accuracy = _accuracy(task, model, images, labels)
        if accuracy < TARGET_ACCURACY:
            task.fail(f"training has not reached the target: the model classifies {accuracy:.1%} of the "
                      f"{len(labels)} test digits and needs at least {TARGET_ACCURACY:.0%}. Train longer, or check "
                      "Tasks 1-3 if it never improves.")
        fresh = task.call(f"re-drawing the weights of a copy of {NAME}", redrawn, model, CHECK_SEED)
        chance = _accuracy(task, fresh.eval(), images, labels)
        if chance >= RESET_CEILING:
            task.fail(NOT_FROM_WEIGHTS.format(accuracy=chance))
        moved = _accuracy(task, model, *shifted_copies(images, labels))
        if moved < SHIFT_FLOOR:
            task.fail(MEMORISED.format(clean=accuracy, moved=moved, floor=SHIFT_FLOOR))
    finally:
        model.train(caller_mode)
    task.passed(f"the model classifies {accuracy:.1%} of the {len(labels)} test digits ({moved:.1%} once moved by "
                f"one pixel, {chance:.1%} with its weights re-drawn).")
