"""Models of the digits for the Task 4 tests: the reference ViT trained as the notebook trains it, and cheats that
classify the test digits without having learned digits from the training split (tools/measure_vit_memorisers.py
builds the memorisers and measures them all)."""
import functools

import torch
import torch.nn as nn

from course_lib import vit_defaults
from course_lib.digits import NUM_CLASSES, digit_splits
from tools.measure_vit_memorisers import memorised, nearest_neighbour_vit, trained

from .checks import reference


@functools.lru_cache(maxsize=None)
def trained_reference():
    """The reference ViT trained with the notebook's defaults at seed 0, once per test session (about 8 s idle)."""
    return trained(reference(), digit_splits(), 0)


@functools.lru_cache(maxsize=None)
def memorised_test_split():
    """The pinned ViT trained on the 360 test digits alone until it classifies all of them."""
    return memorised(reference(), digit_splits(), 0)


def images_in_weights(ref, splits=("test",)):
    """A pinned ViT holding the named splits' images in its feed-forward layer (no training): a nearest neighbour."""
    chosen = digit_splits()
    return nearest_neighbour_vit(ref, *(torch.cat([chosen[name][index] for name in splits]) for index in (0, 1)))


def one_hot_answers(images, table, labels, scale=30.0):
    """(B, NUM_CLASSES) logits: the label of each image's exact match in table (a lookup, not a classifier)."""
    match = (images.flatten(1)[:, None] == table.flatten(1)[None]).all(-1).float()  # (B, M)
    return match @ nn.functional.one_hot(labels, NUM_CLASSES).float() * scale  # (B, K)


def lookup_table(ref):
    """A VisionTransformer subclass with the test digits and their labels in buffers, which forward looks up."""
    class VisionTransformer(ref["VisionTransformer"]):
        def __init__(self, **config):
            super().__init__(**config)
            images, labels = digit_splits()["test"]
            self.register_buffer("table", images)
            self.register_buffer("answers", labels)

        def forward(self, images):
            return super().forward(images) * 0 + one_hot_answers(images, self.table, self.answers)

    torch.manual_seed(0)
    return VisionTransformer(**vit_defaults.MODEL).eval()


LEAKED = {}  # a global of the "notebook": the test digits and their labels


def label_reader(ref):
    """An untrained VisionTransformer whose forward reads each image's label from a global (LEAKED)."""
    LEAKED["images"], LEAKED["labels"] = digit_splits()["test"]

    class VisionTransformer(ref["VisionTransformer"]):
        def forward(self, images):
            return super().forward(images) * 0 + one_hot_answers(images, LEAKED["images"], LEAKED["labels"])

    torch.manual_seed(0)
    return VisionTransformer(**vit_defaults.MODEL).eval()
