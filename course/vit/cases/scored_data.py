"""Task 4's scored data, hidden from the grading sandbox: the 360 test digits, replaced there by stand-ins.

The grader scores the trained ViT on the course's 360 test digits, which ship with scikit-learn. Inside the sandbox
that file is covered (grading/sandbox/covers.py) by one whose test rows hold stand-ins: 360 of the course's training
digits, each with one pixel moved by one level of 16 (so none is a digit of the dataset, and the probe can tell them
from their sources), with their labels. Every other row is the original, so the training and validation splits, and
so an honest training run, are what the student ran at home; the judge still scores on the real test digits, outside
the sandbox.

Copies of training digits, not new digits: a notebook that trains on what the sandbox calls the test digits gains
only more steps over digits it trains on anyway. Bent copies (turned, scaled, sheared by a little) were tried first:
they are new examples, and ten passes over the training digits and two copies of them reached 95% of the real test
digits. Whether a model trained on the stand-ins cannot be told from its weights (ten passes that include the real
test digits fit them no better, by loss, than the validation digits: 51.5% of pairs, against 50% for an honest
model), so the probe watches the training batches instead (grading/probe/provenance.py: Sightings).
"""
import gzip
from functools import cache
from pathlib import Path

import torch

from course_lib.vit import SPLIT_SEED, TEST_SIZE, load_digits, split_indices

STAND_IN_SEED = 20261207
LEVELS = 16  # the dataset stores each pixel as a count 0..16 (course_lib.vit divides by 16)


@cache
def stand_in_digits():
    """(images (360, 1, 8, 8), labels (360,)): copies of 360 distinct training digits, each with one pixel, drawn at
    random, one level of 16 lighter or darker (darker where it is blank, lighter where it is full)."""
    images, labels = load_digits()
    train, _, _ = split_indices(len(labels), SPLIT_SEED)
    generator = torch.Generator().manual_seed(STAND_IN_SEED)
    sources = train[torch.randperm(len(train), generator=generator)[:TEST_SIZE]]  # (360,) distinct digits
    copies = (images[sources] * LEVELS).round().reshape(TEST_SIZE, -1)  # (360, 64) in 0..16
    pixels = torch.randint(copies.shape[1], (TEST_SIZE,), generator=generator)  # (360,) one pixel each
    step = torch.where(torch.rand(TEST_SIZE, generator=generator) < 0.5, -1.0, 1.0)  # (360,)
    moved = copies[torch.arange(TEST_SIZE), pixels] + step
    copies[torch.arange(TEST_SIZE), pixels] = torch.where((moved < 0) | (moved > LEVELS), moved - 2 * step, moved)
    return (copies / LEVELS).reshape(images[sources].shape), labels[sources]


def stand_in_file(folder):
    """scikit-learn's digits.csv.gz with the test rows holding the stand-ins, written in folder; its path."""
    images, labels = load_digits()
    _, _, test = split_indices(len(labels), SPLIT_SEED)
    shown, shown_labels = stand_in_digits()
    images, labels = images.clone(), labels.clone()
    images[test], labels[test] = shown, shown_labels
    counts = (images.reshape(len(labels), -1) * LEVELS).round().int()  # (1797, 64) back to 0..16
    rows = [",".join(map(str, row + [label])) for row, label in zip(counts.tolist(), labels.tolist())]
    path = Path(folder) / "digits.csv.gz"
    with gzip.open(path, "wt") as file:
        file.write("\n".join(rows) + "\n")
    return path


STAND_IN_NOTE = ("In the grader's run the 360 test digits were stand-ins (copies of training digits), so "
                 "that no notebook can train on the digits it is scored on: what the cells that use the test digits "
                 "printed there, your own Task 4 check's included, differs from your own run. Task 4's score comes "
                 "from your saved weights, measured on the real test digits.")


def stand_ins(folder):
    """[(scikit-learn's installed digits.csv.gz, its stand-in written in folder)]."""
    from importlib.resources import files
    return [(Path(str(files("sklearn.datasets") / "data" / "digits.csv.gz")), stand_in_file(folder))]


def stand_in_rows():
    """The stand-ins as a model receives them, for the probe to spot in training batches: (360, 1, 8, 8)
    images on the dataset's grid of 1/16."""
    return {"rows": stand_in_digits()[0], "scale": LEVELS}
