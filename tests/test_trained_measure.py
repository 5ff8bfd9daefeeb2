"""Two parts of a trained task's spec (grading/recipes.py: run_trained; grading/judge/trained_models.py) for a model
judged by a measure to keep low on data made with the notebook's own plain data (a language model's bits per byte on
text cut by the notebook's tokenizer merges): "notebook_data", read in the probe by functions of the public checkers
package and handed to the cases package's trained_accuracy as `notebook`, and "bound" with "measure", the most the
measure may be, instead of a "target" accuracy."""
import sys
import types

import pytest
import torch.nn as nn

from grading.judge import trained_models as judge
from grading.recipes import run_trained

pytestmark = pytest.mark.fast

MODULE = "checkers.trained_measure_example"


@pytest.fixture
def readers(monkeypatch):
    """A module of the public checkers package with the functions a spec names (made for this test)."""
    module = types.ModuleType(MODULE)
    module.slots = lambda model: {"weight": model.weight}
    module.pairs = lambda namespace: [list(pair) for pair in namespace["pairs"]]
    module.broken = lambda namespace: namespace["missing"]
    monkeypatch.setitem(sys.modules, MODULE, module)
    return {"class_name": "Linear", "slots": f"{MODULE}:slots",
            "notebook_data": {"pairs": f"{MODULE}:pairs", "broken": f"{MODULE}:broken"}}


def test_the_probe_records_the_notebook_data_a_spec_names(readers):
    record = run_trained(None, nn.Linear(2, 3), readers, {"Linear": nn.Linear, "pairs": [(1, 2), (3, 4)]})
    assert record["notebook_data"] == {"pairs": [[1, 2], [3, 4]], "broken": None}  # a failing reader: None
    assert "notebook_data" not in run_trained(None, nn.Linear(2, 3), dict(readers, notebook_data={}),
                                              {"Linear": nn.Linear})


def spec(**measure):
    return dict({"assignment": "example", "class_name": "Linear"}, **measure)


RECORD = {"facts": {"module": True, "instance": True}, "weights": {}, "config": {}, "notebook_data": {"pairs": []}}


@pytest.mark.parametrize("value, problem", [(1.5, None), (2.0, None), (2.5, "bits per byte 2.500"),
                                            (float("nan"), "bits per byte nan")])
def test_a_bound_is_the_most_the_measure_may_be(value, problem, monkeypatch):
    monkeypatch.setattr(judge, "reference_accuracy", lambda *args: (value, ""))
    got, _, _ = judge.trained_problem(7, RECORD, spec(bound=2.0, measure="bits per byte"), {})
    if problem is None:
        assert got is None
    else:
        assert got.startswith(problem) and got.endswith("at most 2 is needed") and "with your weights" in got, got


@pytest.mark.parametrize("value, passes", [(0.95, True), (0.85, False)])
def test_a_target_is_still_the_least_accuracy(value, passes, monkeypatch):
    monkeypatch.setattr(judge, "reference_accuracy", lambda *args: (value, ""))
    got, _, _ = judge.trained_problem(7, RECORD, spec(target=0.9), {})
    assert (got is None) == passes and (passes or got.startswith("accuracy 85.0%")), got


class Cases:
    """A cases package whose trained_accuracy says what it was given."""

    def __init__(self):
        self.seen = []

    def trained_accuracy(self, task, model, data, reference, **keywords):
        self.seen.append(keywords)
        return 1.0


@pytest.mark.parametrize("recorded, given", [({"pairs": [[1, 2]]}, {"pairs": [[1, 2]]}), ("forged", {}),
                                             (None, {})])
def test_the_notebook_data_reaches_trained_accuracy_as_a_dict(recorded, given, monkeypatch):
    cases = Cases()
    monkeypatch.setattr(judge, "cases_of", lambda name: cases)
    monkeypatch.setattr(judge, "reference_model", lambda *args: None)
    judge.reference_accuracy(7, {}, dict(RECORD, notebook_data=recorded), spec(notebook_data={"pairs": "x:y"}))
    judge.reference_accuracy(7, {}, RECORD, spec())
    assert cases.seen == [{"notebook": given}, {}]


class FlaggingCases(Cases):
    """A cases package whose stand_in_flag says the model fits the stand-ins, or refuses the notebook's data."""

    def __init__(self, flag):
        super().__init__()
        self.flag = flag

    def stand_in_flag(self, model, reference, **keywords):
        if self.flag is None:
            raise judge.InvalidModel("merges that are not valid")
        return self.flag


@pytest.mark.parametrize("value, passes", [(0.95, True), (0.85, False)])
def test_a_model_fitted_to_the_stand_ins_is_flagged_whatever_it_scores(value, passes, monkeypatch):
    cases = FlaggingCases("it fits the stand-ins")
    cases.trained_accuracy = lambda *args, **keywords: value
    monkeypatch.setattr(judge, "cases_of", lambda name: cases)
    monkeypatch.setattr(judge, "reference_model", lambda *args: None)
    got, flag, note = judge.trained_problem(7, RECORD, spec(target=0.9), {})
    assert (got is None) == passes and flag.endswith("it fits the stand-ins") and note == "it fits the stand-ins"


def test_a_stand_in_flag_that_cannot_be_measured_leaves_the_score_to_say_why(monkeypatch):
    cases = FlaggingCases(None)
    monkeypatch.setattr(judge, "cases_of", lambda name: cases)
    monkeypatch.setattr(judge, "reference_model", lambda *args: None)
    assert judge.reference_accuracy(7, {}, RECORD, spec()) == (1.0, "")


def test_reasons_to_look_are_joined_and_empty_ones_dropped():
    assert judge.joined("", "a", "", "b") == "a; b" and judge.joined("", "") == ""
