"""Three parts of a recipe (grading/recipes.py, grading/cases/parts.py) for answers that are not modules of tensors:
an object of a class that is no nn.Module ("instance"), a result of plain data compared exactly ("values"), and a
context the call runs inside whose report a judge reads in the grader ("watch"), each recorded by the probe's code and
compared by the grader's (grading/judge/compare.py), forged records included."""
import sys
import types

import pytest
import torch
from torch.overrides import TorchFunctionMode

from grading.cases.parts import called, instance, recipe, watch
from grading.judge.compare import compare_case
from grading.recipes import decode, run, values

pytestmark = pytest.mark.fast


class Pairs:
    """A class that is no nn.Module: its method returns plain data."""

    def __init__(self, pairs):
        self.pairs = pairs

    def joined(self, text):
        return [tuple(pair) for pair in self.pairs] + [text, len(text)]


class ListPairs(Pairs):
    """The same data as lists instead of tuples: a valid alternative."""

    def joined(self, text):
        return [list(pair) for pair in self.pairs] + [text, len(text)]


class Sneaky(str):
    """A str whose == says yes to anything: recorded as its type's name, never as a value."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class SneakyPairs(Pairs):
    def joined(self, text):
        return [tuple(pair) for pair in self.pairs] + [Sneaky(text), len(text)]


class OffByOne(Pairs):
    def joined(self, text):
        return [tuple(pair) for pair in self.pairs] + [text, len(text) + 1]


CASE = recipe(1, "plain data", False, build=instance("Pairs", [(1, 2), (3, 4)]), call=called("ab", method="joined"),
              values=True)


def judged(cls):
    expected, got = run(CASE, [Pairs]), run(CASE, [cls])
    return compare_case(CASE, got, expected)


def test_an_instance_is_built_with_its_arguments_and_its_plain_result_recorded():
    record = run(CASE, [Pairs])
    assert record["values"] == [[1, 2], [3, 4], "ab", 2] and record["structure"].startswith("seq(")


def test_lists_for_tuples_pass_and_other_values_or_subclasses_fail():
    assert judged(Pairs) is None and judged(ListPairs) is None
    assert judged(OffByOne) == "the result differs from the reference"
    assert judged(SneakyPairs) is not None  # its structure names its type already
    assert values(SneakyPairs([]).joined("ab"))[0] == {"type": "Sneaky"}


def test_values_of_other_objects_are_their_type_names_and_long_lists_are_cut():
    assert values([1.5, True, None, torch.zeros(2)]) == [1.5, True, {"type": "NoneType"}, "tensor"]
    assert values(list(range(100_001)))[-1] == "..."


def test_a_forged_record_without_values_fails():
    expected, got = run(CASE, [Pairs]), run(CASE, [Pairs])
    del got["values"]
    assert compare_case(CASE, got, expected) == "the result differs from the reference"


class Watch(TorchFunctionMode):
    """Notes whether torch.exp was called."""

    def __init__(self, limit):
        super().__init__()
        self.limit, self.seen = limit, False

    def __torch_function__(self, func, types_=(), args=(), kwargs=None):
        self.seen = self.seen or func is torch.exp
        return func(*args, **(kwargs or {}))


@pytest.fixture
def watched_module(monkeypatch):
    """A module of the public checkers package holding the watch, its report and its judge (made for this test)."""
    module = types.ModuleType("checkers.recipe_watch_example")
    module.Watch = Watch
    module.report = lambda watch: {"exp": watch.seen, "limit": watch.limit}
    module.judge = lambda seen: None if seen == {"exp": False, "limit": 3} else "exp was called"
    monkeypatch.setitem(sys.modules, module.__name__, module)
    names = {key: f"{module.__name__}:{value}" for key, value in (("name", "Watch"), ("report", "report"),
                                                                  ("judge", "judge"))}
    return recipe(1, "watched", False, call=called(torch.ones(3)), watch=watch(**names, limit=3))


def test_a_watch_reports_what_the_call_did_and_its_judge_decides(watched_module):
    plain, through_exp = (lambda x: x * 2.718281828459045), (lambda x: torch.exp(x))
    expected = run(watched_module, [plain])
    assert expected["watched"] == {"exp": False, "limit": 3}
    assert compare_case(watched_module, run(watched_module, [plain]), expected) is None
    assert compare_case(watched_module, run(watched_module, [through_exp]), expected) == "exp was called"
    forged = dict(run(watched_module, [plain]))
    del forged["watched"]
    assert compare_case(watched_module, forged, expected) == "exp was called"


def test_a_watch_comes_from_the_checkers_package_only():
    case = recipe(1, "elsewhere", False, call=called(torch.ones(3)), watch=watch("os:getcwd", "os:getcwd", "os:getcwd"))
    with pytest.raises(ValueError, match="checkers package"):
        run(case, [lambda x: x])


@pytest.mark.parametrize("text", ["nn.", "nn.functional", "nn.relu is lower case", "nn.Linear(4, 4)", "nn.__class__",
                                  "nn. ReLU"])
def test_text_that_starts_with_nn_dot_but_names_no_module_class_stays_text(text):
    assert decode(text) == text


def test_the_name_of_a_module_class_stands_for_the_class():
    assert decode("nn.ReLU") is torch.nn.ReLU and decode("nn.Tanh") is torch.nn.Tanh
