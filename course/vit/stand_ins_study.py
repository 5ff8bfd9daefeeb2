"""Honest and test-trained ViTs on the test digits and on the sandbox's stand-ins: `python -m course.vit.stand_ins_study
[--quick]`.

Trains the reference VisionTransformer with the notebook's defaults (seeds 0-2, and 10 and 20 passes instead of 60),
and the same with the shown stand-ins added to the training digits (what a notebook that trains on the sandbox's
"test digits" does). For each it prints the accuracy on the real test digits, on the shown and the unseen stand-ins
(course/vit/cases/scored_data.py), and the share of (shown, unseen) pairs in which the shown image has the
lower loss (fitted_share), which stand_in_flag thresholds, with the machine's load.
"""
import argparse
import os

import torch

from course.reference import reference_of
from course.vit.cases.scored_data import fitted_share, stand_in_sets
from course.vit.memorisers import trained
from course_lib.vit import classification_accuracy, digit_splits


def row(name, model, splits, seed):
    """One line of the table."""
    sets = stand_in_sets()
    test = classification_accuracy(model, *splits["test"])
    shown, unseen = (classification_accuracy(model, *sets[key]) for key in ("shown", "unseen"))
    print(f"| {name:34s} | {seed} | {test:6.1%} | {shown:6.1%} | {unseen:6.1%} | {fitted_share(model):6.3f} | "
          f"{os.getloadavg()[0]:4.1f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="seed 0 only")
    args = parser.parse_args()
    ref, splits = reference_of("vit"), dict(digit_splits())
    splits["shown"] = stand_in_sets()["shown"]
    torch.set_num_threads(1)
    print("| model | seed | test | shown | unseen | fitted share | load |\n" + "|---" * 7 + "|")
    for seed in (0,) if args.quick else range(3):
        for epochs in (60, 20, 10):
            changes = {} if epochs == 60 else {"num_epochs": epochs}
            row(f"honest, {epochs} passes", trained(ref, splits, seed, train_changes=changes), splits, seed)
            row(f"shown stand-ins added, {epochs} passes",
                trained(ref, splits, seed, train_changes=changes, data=("train", "shown")), splits, seed)


if __name__ == "__main__":
    main()
