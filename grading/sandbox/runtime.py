"""The read-only folder every probe runs from: probe.py, recipes.py, provenance.py, the cases, the checks, checkers/,
course_lib/, and the stand-ins that cover the assignment's scored data (covers.py).

Only the student bundle (checkers, course_lib), the probe's own code, the cases' inputs and the stand-ins go in:
no reference, no expected value, no gradebook, no scored data. Built once per grading run.
"""
import compileall
import json
import os
import shutil

import torch

from ..folders import CODE_ROOT
from .covers import copy_covers

IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def prepare_runtime(folder, cases, checks, stand_ins=None):
    """Fill folder (emptied first) and make it readable by every probe user.

    Args:
        cases: {task: [recipe, ...]}, saved as cases.pt.
        checks: the assignment's check functions as the registry names them ("module:function"), for checks.json:
            the probe watches them for tampering.
        stand_ins: the assignment's scored data and what stands in for it in the sandbox (grading.cases.StandIns):
            its covers, and its rows as stand_in_rows.pt for the probe.
    """
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for package in ("checkers", "course_lib"):
        shutil.copytree(CODE_ROOT / package, folder / package, ignore=IGNORE)
    for module in ("probe/probe.py", "probe/provenance.py", "recipes.py"):  # plain modules there, run with `python -I`
        shutil.copy(CODE_ROOT / "grading" / module, folder)
    copy_covers(folder, stand_ins.covers if stand_ins else [])
    if stand_ins and stand_ins.rows:
        torch.save(stand_ins.rows, folder / "stand_in_rows.pt")
    # Compiled here: the probe cannot write bytecode to its read-only runtime, and compiling the checkers and course_lib
    # at every import cost each submission about 0.4 s of CPU
    compileall.compile_dir(folder, quiet=1)
    torch.save(cases, folder / "cases.pt")
    (folder / "checks.json").write_text(json.dumps(sorted(checks)))
    build_font_cache(folder / "mpl")
    for path, _, files in os.walk(folder):
        os.chmod(path, 0o755)
        for name in files:
            os.chmod(os.path.join(path, name), 0o644)
    return folder


def build_font_cache(folder):
    """Matplotlib's font list, written once here instead of built once per probe (seconds each): the grader's own,
    loaded when course_lib imported matplotlib (a Python of its own to build it took 0.35 s of CPU per assignment)."""
    from matplotlib import font_manager
    folder.mkdir()
    font_manager.json_dump(font_manager.fontManager, folder / f"fontlist-v{font_manager.FontManager.__version__}.json")
