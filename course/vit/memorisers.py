"""Honest and memorised vit models on the clean and one-pixel-shifted test digits:
`python -m course.vit.memorisers [--quick]`.

Trains the reference VisionTransformer (course.reference) honestly (the notebook's defaults at seeds 0-4, and a few
variants a student might choose) and as memorisers (the pinned class trained on the 360 test images alone until it
classifies all of them; trained on train + test), and builds a nearest-neighbour table of the test images in a
ViT's own weights. For each it prints the accuracy on the test images, on their four one-pixel shifts
(course_lib.vit.shifted_copies), on the validation images, and with every weight re-drawn (checkers._trained.
redrawn), with the machine's load. check_task_4's and the grader's thresholds (checkers/vit/trained.py) come from
this table.
"""
import argparse
import os
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from checkers._trained import redrawn
from course.reference import reference_of
from course_lib import seed_everything, train
from course_lib import vit as vit_defaults
from course_lib.vit import classification_accuracy, digit_splits, shift_images, shifted_copies

VARIANTS = {  # name -> (model keywords changed, training keywords changed, shift augmentation)
    "dropout 0.1": (dict(dropout=0.1), {}, False),
    "embed 32": (dict(embed_dim=32), {}, False),
    "3 layers": (dict(num_layers=3), {}, False),
    "patch 4": (dict(patch_size=4), {}, False),
    "shift augmentation, 80 epochs": ({}, dict(num_epochs=80), True),
    "20 epochs": ({}, dict(num_epochs=20), False),
}


def shifted_batch_loss(model, images, labels):
    """Cross-entropy on the batch, each image moved by a random one-pixel shift (or left alone)."""
    moves = torch.randint(-1, 2, (2,)).tolist()
    return nn.functional.cross_entropy(model(shift_images(images, *moves)), labels)


def trained(ref, splits, seed, model_changes=(), train_changes=(), augment=False, data=("train",), until=None):
    """A reference ViT trained with the notebook's defaults (changed as asked) on the named splits."""
    seed_everything(seed)
    model = ref["VisionTransformer"](**{**vit_defaults.MODEL, **dict(model_changes)})
    images = torch.cat([splits[name][0] for name in data])  # (N, 1, 8, 8)
    labels = torch.cat([splits[name][1] for name in data])  # (N,)
    loader = DataLoader(TensorDataset(images, labels), batch_size=vit_defaults.BATCH_SIZE, shuffle=True)
    val_loader = DataLoader(TensorDataset(*splits["val"]), batch_size=512)
    callbacks = [until] if until else []
    settings = {**vit_defaults.TRAINING, **dict(train_changes)}
    train(model, loader, val_loader, **settings, callbacks=callbacks,
          batch_loss=shifted_batch_loss if augment else None)
    return model.eval()


def memorised(ref, splits, seed, augment=False):
    """The pinned ViT trained on the 360 test images alone until it classifies every one of them (and, augmented,
    their one-pixel shifts too)."""
    test_images, test_labels = splits["test"]
    goal = shifted_copies(test_images, test_labels) if augment else (test_images, test_labels)
    done = lambda history: classification_accuracy(model_box[0], *goal) == 1.0
    model_box = []
    seed_everything(seed)
    model = ref["VisionTransformer"](**vit_defaults.MODEL)
    model_box.append(model)
    loader = DataLoader(TensorDataset(test_images, test_labels), batch_size=vit_defaults.BATCH_SIZE, shuffle=True)
    train(model, loader, DataLoader(TensorDataset(*splits["val"]), batch_size=512),
          **{**vit_defaults.TRAINING, "num_epochs": 400}, callbacks=[done],
          batch_loss=shifted_batch_loss if augment else None)
    return model.eval()


def nearest_neighbour_vit(ref, images, labels, sharpness=200.0, floor=0.9):
    """A ViT of the pinned class whose weights hold the given images (no training): one patch of the whole image,
    copied to [CLS] by attention, matched against every image by the feed-forward layer (one hidden unit per image,
    firing above cosine `floor`), whose label it writes into the [CLS] token for the head to read."""
    model = ref["VisionTransformer"](image_size=8, patch_size=8, in_channels=1, num_classes=10, embed_dim=74,
                                     num_heads=1, feedforward_dim=len(labels), num_layers=1).eval()
    return _wire_neighbours(model, images, labels, sharpness, floor)


@torch.no_grad()
def _wire_neighbours(model, images, labels, sharpness, floor):
    for parameter in model.parameters():
        parameter.zero_()
    embedding, block = model.patch_embedding, model.blocks[0]
    embedding.projection.weight[:64] = torch.eye(64)  # the patch (the whole image) into features 0..63
    block.norm1.weight.fill_(1.0), block.norm2.weight.fill_(1.0), model.final_norm.weight.fill_(1.0)
    block.attention.v_proj.weight[:64, :64] = torch.eye(64) * 10.0  # [CLS] (zero) reads the image: uniform attention
    block.attention.o_proj.weight[:64, :64] = torch.eye(64)
    seen = []
    hook = block.norm2.register_forward_hook(lambda module, inputs, output: seen.append(output[:, 0]))
    model(images)
    hook.remove()
    templates = seen[0] / seen[0].shape[-1]  # (360, 74): a LayerNorm output has norm sqrt(74), so t . z = cosine
    hidden, output = block.feedforward[0], block.feedforward[2]
    hidden.weight.copy_(templates * sharpness)  # one unit per test image
    hidden.bias.fill_(-sharpness * floor)  # only images at cosine > floor vote
    output.weight[64 + labels, torch.arange(len(labels))] = 1.0  # each unit votes for its image's label
    model.head.weight[:, 64:74] = torch.eye(10) * 10.0
    return model


def row(name, model, splits, seed):
    """One line of the table: test, shifted, validation, training and re-drawn accuracy."""
    test, val = splits["test"], splits["val"]
    fit = classification_accuracy(model, *splits["train"])
    start = time.perf_counter()
    shifted = classification_accuracy(model, *shifted_copies(*test))
    seconds = time.perf_counter() - start
    chance = classification_accuracy(redrawn(model, 4242), *test)
    print(f"| {name:32s} | {seed!s:4s} | {classification_accuracy(model, *test):6.1%} | {shifted:6.1%} | "
          f"{classification_accuracy(model, *val):6.1%} | {fit:6.1%} | {chance:6.1%} | {seconds:5.2f} | "
          f"{os.getloadavg()[0]:4.1f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="seed 0 only, no variants")
    args = parser.parse_args()
    ref, splits = reference_of("vit"), digit_splits()
    torch.set_num_threads(1)
    print("| model | seed | test | shifted | val | train | re-drawn | shifted s | load |\n" + "|---" * 9 + "|")
    for floor in (0.9, 0.7, 0.5):
        row(f"test images in weights, cos > {floor}", nearest_neighbour_vit(ref, *splits["test"], floor=floor),
            splits, "-")
    every = [torch.cat(pair) for pair in zip(splits["train"], splits["test"])]
    row("train + test images in weights, cos > 0.9", nearest_neighbour_vit(ref, *every), splits, "-")
    for seed in (0,) if args.quick else range(5):
        row("honest, defaults", trained(ref, splits, seed), splits, seed)
    for seed in (0,) if args.quick else (0, 1):
        row("memoriser: test only, to 100%", memorised(ref, splits, seed), splits, seed)
    row("memoriser: test + shifts, to 100%", memorised(ref, splits, 0, augment=True), splits, 0)
    row("memoriser: train + test", trained(ref, splits, 0, data=("train", "test")), splits, 0)
    for name, (model_changes, train_changes, augment) in ({} if args.quick else VARIANTS).items():
        row(f"honest, {name}", trained(ref, splits, 0, model_changes, train_changes, augment), splits, 0)


if __name__ == "__main__":
    main()
