"""Render the README's figures into assets/ (run by `make assets`; the PNGs are generated, do not edit them).

Usage: python -m tools.make_assets [--out DIR]
"""
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from course_lib import defaults, plot_lr_schedule, plot_positional_encoding  # noqa: E402
from course.reference import reference_of  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
STEPS_PER_EPOCH = defaults.TRAIN_SIZE // defaults.BATCH_SIZE  # DataLoader(drop_last=True)


def render(folder):
    """Write the figures to folder and return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    pe = reference_of("transformer")["PositionalEncoding"](embed_dim=64, max_len=128).pe[0]
    training = defaults.TRAINING
    figures = {
        "positional_encoding.png": plot_positional_encoding(pe),
        "lr_schedule.png": plot_lr_schedule(training["lr"], training["warmup_steps"],
                                            training["num_epochs"] * STEPS_PER_EPOCH),
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
