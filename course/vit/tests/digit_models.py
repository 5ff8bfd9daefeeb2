"""Models of the digits for the Task 4 tests: the reference ViT trained as the notebook trains it, and cheats that
classify the test digits without having learned digits from the training split (course/vit/memorisers.py
builds the memorisers and measures them all)."""
import copy
import functools

import torch
import torch.nn as nn

from course.vit.memorisers import memorised, nearest_neighbour_vit, trained
from course_lib import vit as vit_defaults
from course_lib.vit import NUM_CLASSES, digit_splits
from trained_cache import trained_once

from .checks import reference, source


def untrained():
    return reference()["VisionTransformer"](**vit_defaults.MODEL)


@functools.lru_cache(maxsize=None)
def trained_reference():
    """The reference ViT trained with the notebook's defaults at seed 0, once per test run (about 8 s idle)."""
    return trained_once("vit reference, seed 0", source(), untrained, trained, reference(), digit_splits(), 0)


@functools.lru_cache(maxsize=None)
def memorised_test_split():
    """The pinned ViT trained on the 360 test digits alone until it classifies all of them, once per test run."""
    return trained_once("vit memorised test split, seed 0", source(), untrained, memorised, reference(),
                        digit_splits(), 0)


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


def scoring_exactly(model, correct):
    """A copy of model that classifies exactly `correct` of the test digits: one class's head bias moved to the middle
    of the widest interval of shifts that give that count (so rounding in another batch cannot change a prediction).

    Returns:
        (the copy, the interval's width in logits).
    """
    images, labels = digit_splits()["test"]  # (360, 1, 8, 8), (360,)
    copied = copy.deepcopy(model).eval()
    with torch.no_grad():
        logits = copied(images).double()  # (360, K)
    best = (0.0, None, None)
    for chosen in range(NUM_CLASSES):
        others = logits.clone()
        others[:, chosen] = -float("inf")
        rival, runner_up = others.max(dim=-1)  # (360,): the best other class of each image
        cuts = (rival - logits[:, chosen]).sort().values  # the image is read as `chosen` once its shift exceeds this
        shifts, widths = (cuts[1:] + cuts[:-1]) / 2, cuts[1:] - cuts[:-1]  # (359,)
        predicted = torch.where(logits[None, :, chosen] + shifts[:, None] > rival, chosen, runner_up)  # (359, 360)
        counts = (predicted == labels).sum(dim=-1)  # (359,)
        widths = torch.where(counts == correct, widths, torch.zeros_like(widths))
        if widths.max() > best[0]:
            best = (widths.max().item(), chosen, shifts[widths.argmax()].item())
    width, chosen, shift = best
    assert chosen is not None, f"no head bias gives {correct} correct test digits"
    with torch.no_grad():
        copied.head.bias[chosen] += shift
    return copied, width


def with_row_cls_token(ns, model):
    """model's weights in a VisionTransformer whose PatchEmbedding keeps the [CLS] token as a row, shape (1, D)."""
    class RowClsEmbedding(ns["PatchEmbedding"]):
        def __init__(self, image_size, patch_size, in_channels, embed_dim):
            super().__init__(image_size, patch_size, in_channels, embed_dim)
            self.cls_token = nn.Parameter(self.cls_token.detach()[None])  # (1, D)

    class VisionTransformer(ns["VisionTransformer"]):
        def __init__(self, **config):
            super().__init__(**config)
            self.patch_embedding = RowClsEmbedding(config["image_size"], config["patch_size"], config["in_channels"],
                                                   config["embed_dim"])

    row = VisionTransformer(**vit_defaults.MODEL)
    state = dict(model.state_dict())
    state["patch_embedding.cls_token"] = state["patch_embedding.cls_token"][None]  # (D,) -> (1, D)
    row.load_state_dict(state)
    return row.eval()
