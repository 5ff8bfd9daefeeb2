"""A recipe's "calls" for the seq2seq LayerNorm task: the probe records the torch functions a call makes
(checkers._calls.recorded_calls, course-wide: tests/test_calls.py) and the judge applies the check's own function."""
import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.fast

X = torch.arange(48, dtype=torch.float64).reshape(2, 3, 8)


# ----- A recipe's "calls": the probe records them, the judge applies the check's own function -------------------

def by_hand(x):
    centred = x - x.mean(-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5)


def fused(x):
    return F.layer_norm(x, x.shape[-1:])


def test_the_probe_records_and_the_judge_judges_the_calls():
    from checkers.seq2seq.layer_norm import BY_HAND
    from grading.cases.parts import called, counted, recipe
    from grading.judge.compare import compare_case
    from grading.recipes import run
    case = recipe(1, "by hand", False, call=called(X), calls=counted("checkers.seq2seq.layer_norm:torch_norm_problem",
                                                                     [X[0]]))
    expected = run(case, [by_hand])
    assert [sum(counts.values()) for counts in expected["calls"]] == [7, 7]  # mean, sub, pow, mean, add, sqrt, div
    assert compare_case(case, expected, expected) is None
    got = run(case, [fused])
    assert got["calls"] == [{"Tensor.shape": 1, "torch.nn.functional.layer_norm": 1}] * 2
    assert compare_case(case, got, expected) == \
        f"LayerNorm.forward called torch.nn.functional.layer_norm: {BY_HAND}"
    with pytest.raises(ValueError):  # a record without the calls its recipe asked for is malformed, never a pass
        compare_case(case, {key: value for key, value in got.items() if key != "calls"}, expected)
