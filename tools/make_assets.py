"""Render the figures docs/students.md shows into assets/ (`make assets`; the PNGs are generated, do not edit them).

Each assignment with figures there says which (course/<name>/assets.py: figures()).
Usage: python -m tools.make_assets [--out DIR] [--untrained]
--untrained draws the figures of trained models (each slice's TRAINED_FIGURES) from untrained ones: the layout is the
same, and the layout is all tests/test_packaging.py compares of them (training's float sums differ between CPUs).
"""
import json
import os
import sys
from pathlib import Path

# One instruction set for every CPU kernel, set before torch loads: a figure may come from a trained model, and
# 800 training steps turn the last bits in which AVX-512 and AVX2 kernels differ into another model (measured: the
# seed-0 run with oneDNN capped at AVX2 instead of AVX-512 got other test digits wrong). Pinned to AVX2, `make assets`
# and the stale-figure test draw the same picture on any x86 CPU that has AVX2.
os.environ.update(ATEN_CPU_CAPABILITY="avx2", ONEDNN_MAX_CPU_ISA="AVX2", MKL_CBWR="AVX2")

import matplotlib

matplotlib.use("Agg")

from course import registry
from course.slices import slice_of

ROOT = Path(__file__).resolve().parent.parent


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


def render(folder, train=True):
    """Write the figures to folder and return their paths (train=False: trained figures from untrained models)."""
    folder.mkdir(parents=True, exist_ok=True)
    figures = {}
    for assignment in registry.assignments():
        assets = slice_of(assignment.name).optional("assets")
        figures.update(assets.figures(train=train) if assets else {})
    paths = []
    for name, figure in figures.items():
        figure.savefig(folder / name, dpi=100, bbox_inches="tight", metadata={"Software": None})
        paths.append(folder / name)
    return paths


if __name__ == "__main__":
    out = Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else ROOT / "assets"
    for path in render(out, train="--untrained" not in sys.argv):
        print(f"wrote {path}")
