"""check_task_5 (GroupedQueryAttention) both ways: the reference and an SDPA-with-enable_gqa layer pass, planted
mistakes fail with their names, bad input is answered cleanly, within a second; the fixture's outputs are
scaled_dot_product_attention's with the keys and values repeated by repeat_interleave."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from checkers._core import load_fixture
from checkers.llm import CheckFailure, check_task_5
from course.llm.mistakes import MUTANTS
from .attention_variants import GQA_VARIANTS
from .checks import cpu_seconds, expect_named, reference, variant


TASK_5 = [mutant for mutant in MUTANTS if mutant.task == 5]


@pytest.mark.fast
def test_reference_passes(capsys):
    check_task_5(reference()["GroupedQueryAttention"])
    assert capsys.readouterr().out.startswith("✓ Task 5 passed")


@pytest.mark.fast
@pytest.mark.parametrize("mutant", TASK_5, ids=lambda m: m.name)
def test_planted_mistake_fails_with_its_name(mutant):
    with pytest.raises(CheckFailure, match="^Task 5: ") as failure:
        check_task_5(variant(mutant)["GroupedQueryAttention"])
    expect_named(failure.value, mutant)


@pytest.mark.fast
@pytest.mark.parametrize("layer", GQA_VARIANTS, ids=lambda c: c.__name__)
def test_another_formulation_passes(layer, capsys):
    check_task_5(layer)
    assert capsys.readouterr().out.startswith("✓ Task 5 passed")


class _ReturnsOut(nn.Module):
    def __init__(self, embed_dim, num_heads, num_kv_heads, max_len):
        super().__init__()
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, num_kv_heads * embed_dim // num_heads, bias=False)
        self.v_proj = nn.Linear(embed_dim, num_kv_heads * embed_dim // num_heads, bias=False)
        self.o_proj = nn.Linear(embed_dim, embed_dim, bias=False)

    def forward(self, x, cache=None):
        return x


BAD = {
    "None": (None, "got None instead of the class `GroupedQueryAttention`"),
    "an object": (nn.Linear(2, 2), "pass the class itself"),
    "returns only the output": (_ReturnsOut, "should return (out, (keys, values)), got Tensor"),
    "no projections": (nn.Identity, "should have an nn.Linear named `q_proj`, found nothing"),
}


@pytest.mark.fast
@pytest.mark.parametrize("kind", BAD)
def test_bad_input_fails_cleanly(kind):
    student, words = BAD[kind]
    with pytest.raises(CheckFailure, match="^Task 5: ") as failure:
        check_task_5(student)
    assert words in str(failure.value), str(failure.value)


@pytest.mark.full
def test_check_takes_under_a_second():
    assert cpu_seconds(lambda: check_task_5(reference()["GroupedQueryAttention"]), runs=3) <= 1.0


@pytest.mark.fast
def test_fixture_outputs_follow_sdpa():
    fixture = load_fixture("checkers.llm", 5)
    x = fixture["x"]
    for name, case in fixture["cases"].items():
        config, w = case["config"], case["weights"]
        num_heads, head_dim = config["num_heads"], config["embed_dim"] // config["num_heads"]
        query = (x @ w["q_proj.weight"].T).view(*x.shape[:2], num_heads, head_dim).transpose(1, 2)
        query = reference()["RotaryEmbedding"](head_dim, config["max_len"]).double()(query)
        group = num_heads // config["num_kv_heads"]
        keys = case["new_keys"].repeat_interleave(group, 1)
        values = case["new_values"].repeat_interleave(group, 1)
        assert torch.allclose(values.transpose(1, 2)[:, :, ::group].reshape(*x.shape[:2], -1),
                              x @ w["v_proj.weight"].T, atol=1e-12), name
        out = F.scaled_dot_product_attention(query, keys, values, is_causal=True).transpose(1, 2).reshape(x.shape)
        assert torch.allclose(case["outputs"], out @ w["o_proj.weight"].T, atol=1e-10), name
        assert torch.allclose(case["continued_keys"], case["new_keys"], atol=1e-12), name
        assert torch.allclose(case["continued"], case["outputs"][:, fixture["past"]:], atol=1e-10), name
