"""check_task_6 (tiled_attention) both ways: the reference and the valid variants (TILED_VARIANTS) pass, planted
mistakes fail (with their names where the evidence identifies them), bad input is answered cleanly, within a second;
the fixture's outputs are scaled_dot_product_attention's."""

import pytest
import torch
import torch.nn.functional as F

from checkers._core import load_fixture
from checkers.llm import CheckFailure, NotImplementedYet, check_task_6
from course.llm.mistakes import MUTANTS
from .attention_variants import TILED_VARIANTS
from .checks import cpu_seconds, expect_named, reference, variant


TASK_6 = [mutant for mutant in MUTANTS if mutant.task == 6]


@pytest.mark.fast
def test_reference_passes(capsys):
    check_task_6(reference()["tiled_attention"])
    assert capsys.readouterr().out.startswith("✓ Task 6 passed")


@pytest.mark.fast
@pytest.mark.parametrize("mutant", TASK_6, ids=lambda m: m.name)
def test_planted_mistake_fails(mutant):
    with pytest.raises(CheckFailure, match="^Task 6: ") as failure:
        check_task_6(variant(mutant)["tiled_attention"])
    if mutant.diagnosis:
        expect_named(failure.value, mutant)
    else:
        assert failure.value.diagnosis is None, str(failure.value)


@pytest.mark.fast
@pytest.mark.parametrize("answer", TILED_VARIANTS, ids=lambda f: f.__name__)
def test_another_formulation_passes(answer, capsys):
    check_task_6(answer)
    assert capsys.readouterr().out.startswith("✓ Task 6 passed")


BAD = {
    "None": (None, "got None instead of `tiled_attention`"),
    "returns None": (lambda query, key, value, block_size, causal: None, "is None"),
    "wrong shape": (lambda query, key, value, block_size, causal: query[..., :1], "shape"),
    "raises": (lambda query, key, value, block_size, causal: query.foo, "raised AttributeError"),
}


@pytest.mark.fast
@pytest.mark.parametrize("kind", BAD)
def test_bad_input_fails_cleanly(kind):
    student, words = BAD[kind]
    with pytest.raises(CheckFailure, match="^Task 6: ") as failure:
        check_task_6(student)
    assert words in str(failure.value), str(failure.value)


@pytest.mark.fast
def test_not_implemented_is_reported_as_such():
    def tiled_attention(query, key, value, block_size, causal):
        raise NotImplementedError()
    with pytest.raises(NotImplementedYet, match="^Task 6 is not implemented yet"):
        check_task_6(tiled_attention)


@pytest.mark.full
def test_check_takes_under_a_second():
    assert cpu_seconds(lambda: check_task_6(reference()["tiled_attention"]), runs=3) <= 1.0


@pytest.mark.fast
def test_fixture_outputs_follow_sdpa():
    for name, run in load_fixture("checkers.llm", 6)["runs"].items():
        expected = F.scaled_dot_product_attention(run["query"], run["key"], run["value"], is_causal=run["causal"])
        assert torch.allclose(run["outputs"], expected, atol=1e-10), name
