"""The vit assignment's images: scikit-learn's 8x8 handwritten digits, a fixed split, and one-pixel shifts.

The 1,797 digits ship inside scikit-learn's wheel (preinstalled in Colab), so nothing is downloaded. Pixels are
the dataset's 0..16 divided by 16, in [0, 1]. The notebook, the checkers and the grader all load the images and
the split from here, so they agree on which images are held out.
"""
import torch
from torch.utils.data import TensorDataset

from .calls import student_call

IMAGE_SIZE = 8
IN_CHANNELS = 1
NUM_CLASSES = 10
SPLIT_SEED = 0  # the course's one split: the test images are never the student's choice
TEST_SIZE = 360  # 20% of the 1,797 images: held out, scored by check_task_4 and the grader
VAL_SIZE = 180  # 10%: watched during training (the stop callback), never scored


def load_digits():
    """All 1,797 digits: images (1797, 1, 8, 8) float32 in [0, 1] and labels (1797,) int64 in 0..9."""
    from sklearn.datasets import load_digits as sklearn_digits  # imported here: only this assignment needs it

    digits = sklearn_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0  # (1797, 1, 8, 8)
    return images, torch.tensor(digits.target, dtype=torch.int64)


def split_indices(num_images, seed=SPLIT_SEED):
    """(train, val, test) index tensors of one random permutation fixed by seed."""
    order = torch.randperm(num_images, generator=torch.Generator().manual_seed(seed))
    test, val = order[:TEST_SIZE], order[TEST_SIZE:TEST_SIZE + VAL_SIZE]
    return order[TEST_SIZE + VAL_SIZE:], val, test


@student_call
def digit_splits():
    """{"train", "val", "test"} -> (images (N, 1, 8, 8), labels (N,)): 1,257 / 180 / 360 images."""
    images, labels = load_digits()
    train, val, test = split_indices(len(labels))
    return {name: (images[index], labels[index]) for name, index in zip(("train", "val", "test"), (train, val, test))}


@student_call
def digit_datasets():
    """(train, val, test) TensorDatasets of (image, label), for DataLoaders."""
    splits = digit_splits()
    return tuple(TensorDataset(*splits[name]) for name in ("train", "val", "test"))


def shift_images(images, rows, cols):
    """images (B, C, H, W) moved down by rows and right by cols pixels (negative: up/left), zeros shifted in."""
    shifted = torch.zeros_like(images)
    height, width = images.shape[-2:]
    source_rows = slice(max(0, -rows), height - max(0, rows))
    source_cols = slice(max(0, -cols), width - max(0, cols))
    target_rows = slice(max(0, rows), height - max(0, -rows))
    target_cols = slice(max(0, cols), width - max(0, -cols))
    shifted[..., target_rows, target_cols] = images[..., source_rows, source_cols]
    return shifted


ONE_PIXEL_SHIFTS = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right


@student_call
def shifted_copies(images, labels):
    """Every image moved one pixel up, down, left and right: (4B, C, H, W) images and (4B,) labels."""
    moved = torch.cat([shift_images(images, rows, cols) for rows, cols in ONE_PIXEL_SHIFTS])
    return moved, labels.repeat(len(ONE_PIXEL_SHIFTS))


@student_call
@torch.no_grad()
def classification_accuracy(model, images, labels, batch_size=512):
    """Fraction of images the model classifies right, in eval mode on the model's device (mode restored)."""
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters(), images).device
        correct = 0
        for start in range(0, len(labels), batch_size):
            logits = model(images[start:start + batch_size].to(device))  # (b, num_classes)
            correct += (logits.argmax(dim=-1).cpu() == labels[start:start + batch_size]).sum().item()
        return correct / len(labels)
    finally:
        model.train(was_training)


@student_call
def confusion_matrix(predicted, labels, num_classes=NUM_CLASSES):
    """(K, K) counts: row = true class, column = predicted class."""
    pairs = labels.long() * num_classes + predicted.long().cpu()  # (N,) one index per (true, predicted) cell
    return torch.bincount(pairs, minlength=num_classes * num_classes).reshape(num_classes, num_classes)
