"""Render the figures docs/students.md shows into assets/ (`make assets`; the PNGs are generated, do not edit them).

Usage: python -m tools.make_assets [--out DIR]
"""
import json
import math
import os
import sys
import warnings
from pathlib import Path

# One instruction set for every CPU kernel, set before torch loads: vit_rollout.png comes from a trained model, and
# 800 training steps turn the last bits in which AVX-512 and AVX2 kernels differ into another model (measured: the
# seed-0 run with oneDNN capped at AVX2 instead of AVX-512 got other test digits wrong). Pinned to AVX2, `make assets`
# and the stale-figure test draw the same picture on any x86 CPU that has AVX2.
os.environ.update(ATEN_CPU_CAPABILITY="avx2", ONEDNN_MAX_CPU_ISA="AVX2", MKL_CBWR="AVX2")

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from course import registry
from course_lib import defaults, plot_lr_schedule, plot_positional_encoding
from course_lib.digits import digit_splits
from course.reference import reference_of
from course.vit import bench as bench_vit
from tools.bench import training as bench_training

ROOT = Path(__file__).resolve().parent.parent
STEPS_PER_EPOCH = defaults.TRAIN_SIZE // defaults.BATCH_SIZE  # DataLoader(drop_last=True)


def example_cells(notebook, grade_id):
    """The source of the code cells after the cell whose nbgrader grade_id is grade_id, up to the first that draws a
    figure (plt.subplots), joined: a task's example, its helpers included."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    (start,) = [index for index, cell in enumerate(cells)
                if cell["metadata"].get("nbgrader", {}).get("grade_id") == grade_id]
    sources = []
    for cell in (cell for cell in cells[start + 1:] if cell["cell_type"] == "code"):
        sources.append("".join(cell["source"]))
        if "plt.subplots(" in sources[-1]:
            return "\n\n".join(sources)
    raise ValueError(f"no code cell after {grade_id} draws a figure")


def vit_rollout():
    """The vit notebook's Task 5 example, run on the reference ViT trained as Task 4 trains it (seed 0, CPU).

    The example's cells are read from the solutions notebook and run as they are, so the picture is the one a
    student sees.
    """
    ref = reference_of("vit")
    model = bench_vit.notebook_model(ref, seed=0, device="cpu")
    bench_training.quiet_train(model, *bench_vit.notebook_loaders(), device="cpu", **bench_vit.defaults.TRAINING)
    test_images, test_labels = digit_splits()["test"]
    namespace = dict(ref, math=math, torch=torch, plt=plt, model=model, test_images=test_images,
                     test_labels=test_labels)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*non-interactive.*")  # the cell's plt.show() under Agg
        exec(compile(example_cells(registry.assignment("vit").source_notebook, "check_task_5"),
                     "<vit Task 5 example cells>", "exec"), namespace)
    return namespace["fig"]


def render(folder):
    """Write the figures to folder and return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    pe = reference_of("transformer")["PositionalEncoding"](embed_dim=64, max_len=128).pe[0]
    training = defaults.TRAINING
    figures = {
        "positional_encoding.png": plot_positional_encoding(pe),
        "lr_schedule.png": plot_lr_schedule(training["lr"], training["warmup_steps"],
                                            training["num_epochs"] * STEPS_PER_EPOCH),
        "vit_rollout.png": vit_rollout(),
    }
    paths = []
    for name, figure in figures.items():
        figure.savefig(folder / name, dpi=100, bbox_inches="tight", metadata={"Software": None})
        paths.append(folder / name)
    return paths


if __name__ == "__main__":
    out = Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else ROOT / "assets"
    for path in render(out):
        print(f"wrote {path}")
