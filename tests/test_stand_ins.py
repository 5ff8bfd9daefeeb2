"""The machinery that hides an assignment's scored data from the grading sandbox, on toy data: the covers mounted over
installed files (grading/sandbox/covers.py), the probe's Sightings of stand-ins in training batches
(grading/probe/provenance.py) and the judge's flag from them (grading/judge/provenance_flags.py).

Each assignment's own stand-ins are tested in course/<name>/tests/test_scored_data.py; the sandbox run that shows the
real data is out of reach, in tests/test_redteam_scored_data.py.
"""
import importlib.util
import json

import pytest
import torch
import torch.nn as nn

from grading.cases import StandIns
from grading.judge.provenance_flags import MISSING, sightings_flag
from grading.sandbox.covers import copy_covers, cover_arguments, covers
from grading.sandbox.runtime import prepare_runtime
from grading.folders import CODE_ROOT

pytestmark = pytest.mark.fast


def provenance_module():
    """grading/probe/provenance.py as the probe imports it (a plain module beside probe.py)."""
    spec = importlib.util.spec_from_file_location("provenance_under_test", CODE_ROOT / "grading/probe/provenance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def installed(tmp_path):
    """A toy installation: a data file and a package folder, and stand-ins for both."""
    (tmp_path / "site" / "package").mkdir(parents=True)
    (tmp_path / "site" / "data.csv").write_text("real\n")
    (tmp_path / "site" / "package" / "topics.py").write_text("topics = {'real': 1}\n")
    (tmp_path / "stand-ins" / "package").mkdir(parents=True)
    (tmp_path / "stand-ins" / "data.csv").write_text("stand-in\n")
    (tmp_path / "stand-ins" / "package" / "topics.py").write_text("topics = {'stand-in': 1}\n")
    return [(tmp_path / "site" / "data.csv", tmp_path / "stand-ins" / "data.csv"),
            (tmp_path / "site" / "package", tmp_path / "stand-ins" / "package")]


def test_the_runtime_holds_each_stand_in_and_the_list_of_what_it_covers(tmp_path):
    pairs = installed(tmp_path)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    copy_covers(runtime, pairs)
    listed = covers(runtime)
    assert [installed for installed, _ in listed] == [str(pairs[0][0]), str(pairs[1][0])]
    assert open(listed[0][1]).read() == "stand-in\n"
    assert open(f"{listed[1][1]}/topics.py").read() == "topics = {'stand-in': 1}\n"
    assert covers(tmp_path) == []  # no covers.json: nothing is covered


def test_a_stand_in_covers_only_what_the_sandbox_mounts(tmp_path):
    pairs = installed(tmp_path)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    copy_covers(runtime, pairs)
    arguments = cover_arguments(runtime, [str(tmp_path / "site" / "package")])
    assert arguments == ["--ro-bind", covers(runtime)[1][1], str(pairs[1][0])]
    assert len(cover_arguments(runtime, [str(tmp_path / "site")])) == 6
    assert cover_arguments(runtime, [str(tmp_path / "sit")]) == []  # a prefix of the name is no folder above it


@pytest.mark.parametrize("pair", [("missing", "data.csv"), ("data.csv", "package")])
def test_a_stand_in_must_cover_something_of_its_own_kind(tmp_path, pair):
    installed(tmp_path)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    with pytest.raises(ValueError, match="cannot cover"):
        copy_covers(runtime, [(tmp_path / "site" / pair[0], tmp_path / "stand-ins" / pair[1])])


def test_prepare_runtime_writes_the_covers_and_the_rows_for_the_probe(tmp_path):
    rows = {"rows": torch.rand(3, 1, 2, 2), "scale": 16}
    runtime = prepare_runtime(tmp_path / "runtime", {}, [], StandIns(installed(tmp_path), "note", rows))
    assert len(json.loads((runtime / "covers.json").read_text())) == 2
    assert torch.equal(torch.load(runtime / "stand_in_rows.pt", weights_only=True)["rows"], rows["rows"])
    bare = prepare_runtime(tmp_path / "bare", {}, [], None)
    assert json.loads((bare / "covers.json").read_text()) == [] and not (bare / "stand_in_rows.pt").exists()


class Sightings:
    """A probe's Sightings of toy stand-ins (4 images of 1 x 2 x 2 on a grid of 1/16), and a model to train."""

    def __init__(self):
        provenance = provenance_module()
        self.rows = torch.randint(0, 17, (4, 1, 2, 2), generator=torch.Generator().manual_seed(0)).float() / 16
        self.sightings = provenance.Sightings(self.rows, 16)
        self.model = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def step(self, images):
        self.model(images).sum().backward()
        self.optimizer.step()

    def close(self):
        self.sightings.handle.remove()
        self.sightings.step_handle.remove()


@pytest.fixture
def watched():
    sightings = Sightings()
    yield sightings
    sightings.close()


def test_stand_ins_in_a_training_batch_followed_by_a_step_are_counted_once(watched):
    other = torch.full((3, 1, 2, 2), 0.5)
    watched.step(torch.cat([other, watched.rows[:2]]))
    watched.step(watched.rows[:3] + 1e-4)  # the same images on the grid
    assert watched.sightings.report() == {"hooked": True, "trained": 3, "total": 4}


def test_evaluating_on_stand_ins_is_not_training_on_them(watched):
    watched.model.eval()
    watched.step(watched.rows)  # eval mode
    watched.model.train()
    with torch.no_grad():
        watched.model(watched.rows)  # no gradients
    watched.model(watched.rows)  # a forward without a step, then a training batch without stand-ins
    watched.step(torch.zeros(2, 1, 2, 2))
    assert watched.sightings.report()["trained"] == 0


def test_a_removed_watch_is_reported(watched):
    watched.sightings.handle.remove()
    assert watched.sightings.report()["hooked"] is False


@pytest.mark.parametrize("stand_ins, words", [
    (None, ""), ({"hooked": True, "trained": 0, "total": 360}, ""),
    ({"hooked": True, "trained": 12, "total": 360}, "12 of the 360 stand-ins"),
    ({"hooked": False, "trained": 0, "total": 360}, "removed the grader's watch"),
    ({"hooked": True, "trained": -1, "total": 360}, MISSING), ("forged", MISSING)])
def test_the_judge_flags_training_on_stand_ins_and_a_removed_watch(stand_ins, words):
    record = {"provenance": {"hooked": True} if stand_ins is None else {"hooked": True, "stand_ins": stand_ins}}
    flag = sightings_flag(record)
    assert (flag == "") if not words else (words in flag), flag
    assert sightings_flag({}) == "" and sightings_flag({"provenance": "forged"}) == ""
