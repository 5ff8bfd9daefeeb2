"""Inside the grading sandbox the 360 test digits do not exist (issue 42): by the course's functions, by
scikit-learn's loader, by the installed file's path, or in any other file of the installation or the runtime.

Run as the probe runs (bubblewrap, an unprivileged uid) over a vit runtime with its stand-ins; needs root and
bubblewrap.
"""
import gzip
import hashlib
import json
from importlib.resources import files

import pytest
import torch

from course.vit.cases.scored_data import LEVELS, stand_in_digits
from course_lib.vit import digit_splits, load_digits, split_indices
from grading.sandbox.covers import covers
from sandboxed import files_holding, needs_bwrap, run_sandboxed, sandboxed_runtime

pytestmark = [pytest.mark.full, needs_bwrap]

INSTALLED = files("sklearn.datasets") / "data" / "digits.csv.gz"
ROUTES = '''import gzip, json
import torch
from course_lib.vit import digit_splits
from sklearn.datasets import load_digits
test = digit_splits()["test"][0]
rows = gzip.open("{path}", "rt").read().splitlines()
print(json.dumps({{"course_lib": test.reshape(len(test), -1).tolist(), "sklearn": load_digits().data.tolist(),
                  "path": rows}}))
'''


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    return sandboxed_runtime("vit", tmp_path_factory.mktemp("vit"))


def test_every_route_to_the_test_digits_finds_the_stand_ins(runtime, tmp_path):
    done = run_sandboxed(runtime, tmp_path, ["-c", ROUTES.format(path=INSTALLED)])
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    shown = stand_in_digits()[0].reshape(360, -1)
    _, _, test = split_indices(len(load_digits()[1]))
    assert torch.equal(torch.tensor(seen["course_lib"]), shown)
    assert torch.equal(torch.tensor(seen["sklearn"])[test] / LEVELS, shown)
    real = gzip.open(INSTALLED, "rt").read().splitlines()
    assert not {real[index] for index in test.tolist()} & set(seen["path"])
    assert len(seen["path"]) == len(real)


def test_no_file_in_the_sandbox_holds_the_test_digits(runtime, tmp_path):
    """The installed file's bytes, and the CSV lines of the first test digits, are nowhere in the sandbox."""
    real = gzip.open(INSTALLED, "rt").read().splitlines()
    _, _, test = split_indices(len(real))
    needles = [real[index].encode() for index in test[:3].tolist()]
    digest = hashlib.md5(INSTALLED.read_bytes()).hexdigest()
    (_, stand_in), = covers(runtime)
    control = hashlib.md5(open(stand_in, "rb").read()).hexdigest()  # found where the installed file was
    searched, found = files_holding(runtime, tmp_path, needles, [digest, control])
    assert searched > 10_000 and sorted(found) == sorted([str(INSTALLED), "/sandbox/runtime/covers/0/digits.csv.gz"])
    assert torch.equal(digit_splits()["test"][0], load_digits()[0][test])  # outside, the real digits
