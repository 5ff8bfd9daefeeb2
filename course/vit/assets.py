"""The vit assignment's figure in assets/ (docs/students.md shows it; `make assets` renders it)."""
import math
import warnings

import matplotlib.pyplot as plt
import torch

from course import registry
from course.reference import reference_of
from course.vit import bench as bench_vit
from course_lib.vit import digit_splits
from tools.bench import training as bench_training
from tools.make_assets import example_cells


def rollout(train=True):
    """The notebook's Task 5 example, run on the reference ViT trained as Task 4 trains it (seed 0, CPU).

    The example's cells are read from the solutions notebook and run as they are, so the picture is the one a
    student sees. train=False draws it for the untrained model: the same layout, which is all a test compares.
    """
    ref = reference_of("vit")
    model = bench_vit.notebook_model(ref, seed=0, device="cpu")
    if train:
        bench_training.quiet_train(model, *bench_vit.notebook_loaders(), device="cpu", **bench_vit.defaults.TRAINING)
    test_images, test_labels = digit_splits()["test"]
    namespace = dict(ref, math=math, torch=torch, plt=plt, model=model, test_images=test_images,
                     test_labels=test_labels)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*non-interactive.*")  # the cell's plt.show() under Agg
        exec(compile(example_cells(registry.assignment("vit").source_notebook, "check_task_5"),
                     "<vit Task 5 example cells>", "exec"), namespace)
    return namespace["fig"]


# Figures drawn from a model trained when `make assets` runs: training's float sums differ between CPUs (the same seed
# trained a ViT here that erred on other test digits than the committed figure's), so tests compare them by layout.
TRAINED_FIGURES = {"vit_rollout.png"}


def figures(train=True):
    """{file name: matplotlib figure}: attention rollout of a trained model on test digits (trained here: slow; with
    train=False, of the untrained model, for a comparison of TRAINED_FIGURES' layout)."""
    return {"vit_rollout.png": rollout(train)}
