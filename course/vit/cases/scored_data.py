"""Task 4's scored data, hidden from the grading sandbox: the 360 test digits, replaced there by stand-ins.

The grader scores the trained ViT on the course's 360 test digits, which ship with scikit-learn. Inside the sandbox
that file is covered (grading/sandbox/covers.py) by one whose test rows hold stand-ins: training digits, each bent by
a small random affine map (turned, scaled, sheared and moved by under a pixel), with their labels. Every other row
is the original, so the training and validation splits, and so an honest training run, are what the student ran at
home; the judge still scores on the real test digits, outside the sandbox.

The stand-ins come in two sets drawn alike from disjoint training digits: `shown` (in the sandbox's test rows) and
`unseen` (never in the sandbox). A model trained on what the sandbox calls the test digits has fitted `shown`; an
honest one knows both sets equally well (both are bent training digits). The judge measures the gap
(`stand_in_flag`): the thresholds come from `python -m course.vit.stand_ins_study`.
"""
import gzip
import math
from functools import cache
from pathlib import Path

import torch
import torch.nn.functional as F

from course_lib.device import cpu_threads
from course_lib.vit import SPLIT_SEED, TEST_SIZE, load_digits, split_indices

STAND_IN_SEED = 20261207
LEVELS = 16  # the dataset stores each pixel as a count 0..16 (course_lib.vit divides by 16)
TURN, SCALE, SHEAR, MOVE = math.radians(10), 0.08, 0.10, 0.10  # the largest of each bend (MOVE: 0.1 of half the
# image, 0.4 pixel): the reference classifies about 92% of them, the test digits 97% (stand_ins_study)


def bend(images, generator):
    """Each image (N, 1, 8, 8) turned, scaled, sheared and moved at random (bilinear, zeros outside), on the
    dataset's 0..16 grid."""
    count = len(images)
    draw = lambda size: (torch.rand(count, generator=generator) * 2 - 1) * size  # (N,) uniform in [-size, size]
    turn, scale, shear = draw(TURN), 1 + draw(SCALE), draw(SHEAR)
    cos, sin = torch.cos(turn) * scale, torch.sin(turn) * scale
    theta = torch.stack([torch.stack([cos, -sin + shear, draw(MOVE)], dim=-1),
                         torch.stack([sin, cos, draw(MOVE)], dim=-1)], dim=1)  # (N, 2, 3)
    grid = F.affine_grid(theta, list(images.shape), align_corners=False)  # (N, 8, 8, 2)
    bent = F.grid_sample(images, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    return (bent * LEVELS).round().clamp(0, LEVELS) / LEVELS  # (N, 1, 8, 8)


@cache
def stand_in_sets():
    """{"shown": (images (360, 1, 8, 8), labels (360,)), "unseen": the same}: bent copies of two disjoint draws of
    the course's training digits."""
    images, labels = load_digits()
    train, _, _ = split_indices(len(labels), SPLIT_SEED)
    generator = torch.Generator().manual_seed(STAND_IN_SEED)
    sources = train[torch.randperm(len(train), generator=generator)[:2 * TEST_SIZE]]  # (720,) distinct digits
    with cpu_threads(1):
        bent = bend(images[sources], generator)
    halves = bent.split(TEST_SIZE), labels[sources].split(TEST_SIZE)
    return {name: (part, part_labels) for name, part, part_labels in zip(("shown", "unseen"), *halves)}


def stand_in_file(folder):
    """scikit-learn's digits.csv.gz with the test rows holding the shown stand-ins, written in folder; its path."""
    images, labels = load_digits()
    _, _, test = split_indices(len(labels), SPLIT_SEED)
    shown, shown_labels = stand_in_sets()["shown"]
    images, labels = images.clone(), labels.clone()
    images[test], labels[test] = shown, shown_labels
    counts = (images.reshape(len(labels), -1) * LEVELS).round().int()  # (1797, 64) back to 0..16
    rows = [",".join(map(str, row + [label])) for row, label in zip(counts.tolist(), labels.tolist())]
    path = Path(folder) / "digits.csv.gz"
    with gzip.open(path, "wt") as file:
        file.write("\n".join(rows) + "\n")
    return path


@torch.no_grad()
def fitted_share(model):
    """The share of (shown, unseen) stand-in pairs in which the shown image has the lower cross-entropy (ties count
    half): about 0.5 for a model that saw neither set, near 1 for one trained on the shown set. A rank statistic, so
    a few confident mistakes do not move it."""
    sets, losses = stand_in_sets(), {}
    was_training = model.training
    model.eval()
    try:
        with cpu_threads(1):
            for name, (images, labels) in sets.items():
                losses[name] = F.cross_entropy(model(images).float(), labels, reduction="none")  # (360,)
    finally:
        model.train(was_training)
    shown, unseen = losses["shown"][:, None], losses["unseen"][None, :]  # (360, 1), (1, 360)
    return ((shown < unseen).float().mean() + 0.5 * (shown == unseen).float().mean()).item()


STAND_IN_NOTE = ("In the grader's run the 360 test digits were stand-ins (training digits, each bent a little), so "
                 "that no notebook can train on the digits it is scored on: what the cells that use the test digits "
                 "printed there, your own Task 4 check's included, differs from your own run. Task 4's score comes "
                 "from your saved weights, measured on the real test digits.")


def stand_ins(folder):
    """[(scikit-learn's installed digits.csv.gz, its stand-in written in folder)]."""
    from importlib.resources import files
    return [(Path(str(files("sklearn.datasets") / "data" / "digits.csv.gz")), stand_in_file(folder))]


def stand_in_rows():
    """The shown stand-ins as a model receives them, for the probe to spot in training batches: (360, 1, 8, 8)
    images on the dataset's grid of 1/16."""
    return {"rows": stand_in_sets()["shown"][0], "scale": LEVELS}
