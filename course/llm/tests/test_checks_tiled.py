"""check_task_6 (tiled_attention) both ways: the reference and a query-block variant pass, planted mistakes fail
(with their names where the evidence identifies them), bad input is answered cleanly, within a second; the fixture's
outputs are scaled_dot_product_attention's."""
import math

import pytest
import torch
import torch.nn.functional as F

from checkers._core import load_fixture
from checkers.llm import CheckFailure, NotImplementedYet, check_task_6
from course.llm.mistakes import MUTANTS
from .attention_variants import TILED_VARIANTS
from .checks import cpu_seconds, expect_named, reference, variant

TASK_6 = [mutant for mutant in MUTANTS if mutant.task == 6]


def test_reference_passes(capsys):
    check_task_6(reference()["tiled_attention"])
    assert capsys.readouterr().out.startswith("✓ Task 6 passed")


@pytest.mark.parametrize("mutant", TASK_6, ids=lambda m: m.name)
def test_planted_mistake_fails(mutant):
    with pytest.raises(CheckFailure, match="^Task 6: ") as failure:
        check_task_6(variant(mutant)["tiled_attention"])
    if mutant.diagnosis:
        expect_named(failure.value, mutant)
    else:
        assert failure.value.diagnosis is None, str(failure.value)


def query_blocks(query, key, value, block_size, causal):
    """FlashAttention's loop nest: query blocks outside, key blocks inside, skipping key blocks after the queries."""
    seq_len, head_dim = query.shape[-2:]
    out = torch.empty_like(query)
    for q_start in range(0, seq_len, block_size):
        q = query[..., q_start:q_start + block_size, :]
        rows = torch.arange(q_start, q_start + q.size(-2))
        m = torch.full(q.shape[:-1] + (1,), -math.inf, dtype=q.dtype)
        total, acc = torch.zeros_like(m), torch.zeros_like(q)
        for k_start in range(0, (q_start + q.size(-2)) if causal else seq_len, block_size):
            k_end = min(k_start + block_size, seq_len)
            scores = q @ key[..., k_start:k_end, :].transpose(-2, -1) * head_dim ** -0.5
            if causal:
                scores = scores.masked_fill(torch.arange(k_start, k_end)[None, :] > rows[:, None], -math.inf)
            new = torch.maximum(m, scores.amax(-1, keepdim=True))
            p, c = torch.exp(scores - new), torch.exp(m - new)
            total, acc, m = total * c + p.sum(-1, keepdim=True), acc * c + p @ value[..., k_start:k_end, :], new
        out[..., q_start:q_start + block_size, :] = acc / total
    return out


@pytest.mark.parametrize("answer", [query_blocks] + TILED_VARIANTS, ids=lambda f: f.__name__)
def test_another_formulation_passes(answer, capsys):
    check_task_6(answer)
    assert capsys.readouterr().out.startswith("✓ Task 6 passed")


BAD = {
    "None": (None, "got None instead of `tiled_attention`"),
    "returns None": (lambda query, key, value, block_size, causal: None, "is None"),
    "wrong shape": (lambda query, key, value, block_size, causal: query[..., :1], "shape"),
    "raises": (lambda query, key, value, block_size, causal: query.foo, "raised AttributeError"),
}


@pytest.mark.parametrize("kind", BAD)
def test_bad_input_fails_cleanly(kind):
    student, words = BAD[kind]
    with pytest.raises(CheckFailure, match="^Task 6: ") as failure:
        check_task_6(student)
    assert words in str(failure.value), str(failure.value)


def test_not_implemented_is_reported_as_such():
    def tiled_attention(query, key, value, block_size, causal):
        raise NotImplementedError()
    with pytest.raises(NotImplementedYet, match="^Task 6 is not implemented yet"):
        check_task_6(tiled_attention)


def test_check_takes_under_a_second():
    assert cpu_seconds(lambda: check_task_6(reference()["tiled_attention"]), runs=3) <= 1.0


def test_fixture_outputs_follow_sdpa():
    for name, run in load_fixture("checkers.llm", 6)["runs"].items():
        expected = F.scaled_dot_product_attention(run["query"], run["key"], run["value"], is_causal=run["causal"])
        assert torch.allclose(run["outputs"], expected, atol=1e-10), name
