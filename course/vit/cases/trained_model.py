"""Task 4: what the probe records of the trained ViT, how the grader rebuilds and evaluates it, and its data.

The probe receives no data for this task: it records the model's weights by role (checkers.vit._roles:vit_slots:
the patch embedding, every block, the final norm, the head) and the settings the weights
cannot tell (the heads of every attention module, the activation of every block). The grader loads them into the
reference VisionTransformer and classifies the course's 360 test digits (course_lib.vit' split) with the
reference forward, so the student's own forward plays no part: extra weights, a forward that looks the images up or
reads the labels from a global, score what the reference architecture does with the pinned weights alone. As in
check_task_4 (and with its thresholds, measured by course/vit/memorisers.py: see checkers/vit/trained.py),
the same weights re-drawn must fall to chance, the training digits keep TRAIN_FLOOR and the one-pixel-shifted test
digits SHIFT_FLOOR.
"""
import math

from checkers._trained import redrawn
from checkers.vit.trained import RESET_CEILING, SHIFT_FLOOR, TRAIN_FLOOR
from course_lib.device import cpu_threads
from course_lib.vit import (IMAGE_SIZE, IN_CHANNELS, NUM_CLASSES, classification_accuracy, digit_splits,
                            shifted_copies)  # counts in integers: 342 / 360 is exactly the 0.95 bar
from course_lib.vit import TARGET_ACCURACY  # one bar for the notebook, the check and the grade

from grading.judge.trained_models import InvalidModel, check_record, one_setting, shape
from grading.cases.parts import recipe

COLLAPSE_SEED = 1729
SLOTS = "checkers.vit._roles:vit_slots"
STACKS = {"blocks": ["attention"]}


def evaluation_data(spec):
    """The grader's data: the course's test digits {"images" (360, 1, 8, 8), "labels" (360,)} and its training
    digits {"train_images" (1257, 1, 8, 8), "train_labels" (1257,)}."""
    splits = digit_splits()
    (images, labels), (train_images, train_labels) = splits["test"], splits["train"]
    return {"images": images, "labels": labels, "train_images": train_images, "train_labels": train_labels}


def trained_case(task):
    """The one case of the training task: the model's weights and settings (no data goes to the probe)."""
    spec = {"assignment": "vit", "class_name": "VisionTransformer", "slots": SLOTS, "stacks": STACKS,
            "target": TARGET_ACCURACY, "defaults": "course_lib.vit:MODEL"}  # the sizes the judge allows
    return recipe(task, "hidden: accuracy on the course's test digits, their one-pixel shifts, and re-drawn", False,
                  trained=spec)


def patch_size_of(weights):
    """The patch side p from projection.weight (D, C * p * p) and the position embedding's N + 1 rows."""
    features = shape(weights, "patch_embedding.projection.weight")[1]
    patch_size = math.isqrt(features // IN_CHANNELS)
    if IN_CHANNELS * patch_size ** 2 != features or patch_size < 1 or IMAGE_SIZE % patch_size:
        raise InvalidModel(f"the projection takes {features} features, not C * p * p for a patch side p that "
                           f"divides {IMAGE_SIZE}")
    rows = math.prod(shape(weights, "patch_embedding.position_embedding")[:-1])
    if rows != (IMAGE_SIZE // patch_size) ** 2 + 1:
        raise InvalidModel(f"the position embedding has {rows} rows, patches of {patch_size} need "
                           f"{(IMAGE_SIZE // patch_size) ** 2 + 1}")
    return patch_size


def trained_config(weights, settings, spec):
    """Keywords of the reference VisionTransformer from the weights' shapes and the settings; raises InvalidModel."""
    check_record(weights, settings)
    num_classes, embed_dim = shape(weights, "head.weight")
    num_layers = len({role.split(".")[1] for role in weights if role.startswith("blocks.")})
    heads, activations = settings.get("num_heads"), settings.get("activation")
    if num_layers < 1 or not isinstance(heads, list) or len(heads) != num_layers \
            or not isinstance(activations, list) or len(activations) != num_layers:
        raise InvalidModel("the heads and activation were not recorded for every block")
    num_heads = one_setting(heads, "num_heads", lambda h: type(h) is int and 1 <= h <= embed_dim and
                            embed_dim % h == 0)
    one_setting(activations, "activation", lambda name: name == "GELU")  # PreNormBlock's default, as in Task 3
    if num_classes != NUM_CLASSES:
        raise InvalidModel(f"the head has {num_classes} outputs, the digits have {NUM_CLASSES} classes")
    config = dict(image_size=IMAGE_SIZE, patch_size=patch_size_of(weights), in_channels=IN_CHANNELS,
                  num_classes=num_classes, embed_dim=embed_dim, num_heads=num_heads,
                  feedforward_dim=shape(weights, "blocks.0.feedforward.in.weight")[0], num_layers=num_layers)
    return config


def trained_accuracy(task, model, data, reference):
    """Accuracy of the loaded reference ViT on the test digits; raises InvalidModel when the same architecture with
    re-drawn weights scores RESET_CEILING or more, the training digits less than TRAIN_FLOOR, or the one-pixel-shifted
    test digits less than SHIFT_FLOOR."""
    images, labels = data["images"], data["labels"]
    with cpu_threads(1):  # small matrices: one thread is faster, and graders run side by side
        clean = classification_accuracy(model, images, labels)
        if clean < data["target"]:
            return clean
        chance = classification_accuracy(redrawn(model, COLLAPSE_SEED), images, labels)
        fit = classification_accuracy(model, data["train_images"], data["train_labels"])
        moved = classification_accuracy(model, *shifted_copies(images, labels))
    if chance >= RESET_CEILING:
        raise InvalidModel(f"the same architecture with re-drawn weights still scores {chance:.0%}, so the "
                           "accuracy does not come from the trained weights")
    if fit < TRAIN_FLOOR:
        raise InvalidModel(f"it classifies {clean:.0%} of the test digits but {fit:.0%} of the training digits "
                           f"(honest models at least {TRAIN_FLOOR:.0%}): it was fitted to the test images")
    if moved < SHIFT_FLOOR:
        raise InvalidModel(f"it classifies {clean:.0%} of the test digits but {moved:.0%} once they move by one "
                           f"pixel (honest models keep at least {SHIFT_FLOOR:.0%}): it was fitted to the test images")
    return clean
