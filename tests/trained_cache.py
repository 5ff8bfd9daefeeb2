"""Models the tests train, trained once per test run and shared by every pytest-xdist worker through a file cache.

The root conftest.py points FOLDER at the run's pytest temporary folder (one per `pytest` run, shared by its
workers); outside pytest nothing is cached. An entry is keyed by what decides the weights: its label, the code of
the namespace the model's classes come from, the training code (course_lib/ and the training function's module)
and the torch version. Training is seeded, so a model loaded from the cache holds
the weights its own training would give.
"""
import fcntl
import hashlib
import inspect
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
FOLDER = None  # set by conftest.py for the run: <pytest's base temp of the run>/trained
TIER = None  # the running test's tier marker, set by conftest.py: a test of the fast tier may not train


def _key(label, source, train):
    """A hex digest of everything the trained weights depend on."""
    digest = hashlib.sha256(f"{label}\0{source}\0{torch.__version__}\0".encode())
    code = sorted((ROOT / "course_lib").rglob("*.py")) + [Path(inspect.getsourcefile(train))]
    for path in code:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:24]


def trained_once(label, source, build, train, *args):
    """The model train(*args) returns, trained by whichever worker asks first and loaded from the cache by the others.

    Args:
        label: what is trained, e.g. "<name> reference" (two trainings of one source need two labels).
        source: the code of the namespace whose classes build the model (its reference or a mutant of it).
        build: () -> the untrained model of this process's classes, which the cached weights fill.
        train: (*args) -> the trained model, a function of a module (its file is part of the key).
        args: what train needs beyond what the key holds (the namespace of source, the data).
    Returns:
        the trained model in eval mode.
    """
    if TIER == "fast":
        pytest.fail(f"a test of the fast tier trains a model ({label}): mark it `full` (docs/maintainers.md)",
                    pytrace=False)
    if FOLDER is None:
        return train(*args).eval()
    FOLDER.mkdir(parents=True, exist_ok=True)
    path = FOLDER / f"{_key(label, source, train)}.pt"
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second worker waits for the first's training instead of repeating it
        if not path.exists():
            model = train(*args)
            torch.save(model.state_dict(), path.with_suffix(".part"))
            path.with_suffix(".part").rename(path)
            return model.eval()
    model = build()
    model.load_state_dict(torch.load(path, weights_only=True))
    return model.eval()
