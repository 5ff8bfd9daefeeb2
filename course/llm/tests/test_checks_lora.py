"""check_task_8 (LoRALinear) both ways: the reference and the valid layouts (LORA_VARIANTS) pass, planted mistakes
fail with their names, bad input is answered cleanly, within a second; the fixture's outputs follow the formula."""

import pytest
import torch
import torch.nn as nn

from checkers._core import load_fixture
from checkers.llm import CheckFailure, NotImplementedYet, check_task_8
from course.llm.mistakes import MUTANTS
from .checks import cpu_seconds, expect_named, reference, variant
from .lora_variants import LORA_VARIANTS, DeepcopyLoRA


TASK_8 = [mutant for mutant in MUTANTS if mutant.task == 8]


@pytest.mark.fast
def test_reference_passes(capsys):
    check_task_8(reference()["LoRALinear"])
    assert capsys.readouterr().out.startswith("✓ Task 8 passed")


@pytest.mark.fast
@pytest.mark.parametrize("mutant", TASK_8, ids=lambda m: m.name)
def test_planted_mistake_fails_with_its_name(mutant):
    with pytest.raises(CheckFailure, match="^Task 8: ") as failure:
        check_task_8(variant(mutant)["LoRALinear"])
    expect_named(failure.value, mutant)


@pytest.mark.fast
@pytest.mark.parametrize("layer", LORA_VARIANTS, ids=lambda c: c.__name__)
def test_another_layout_passes(layer, capsys):
    check_task_8(layer)
    assert capsys.readouterr().out.startswith("✓ Task 8 passed")


class _BiasAssumed(DeepcopyLoRA):
    """merge() builds nn.Linear(in, out) with a bias and copies base's: base.bias is None for a bias-free layer."""

    def merge(self):
        merged = nn.Linear(self.base.in_features, self.base.out_features).to(self.base.weight)
        with torch.no_grad():
            merged.weight.copy_(self.base.weight + self.scale * self.B @ self.A)
            merged.bias.copy_(self.base.bias)
        return merged


class _DefaultDtype(DeepcopyLoRA):
    """merge() builds a new nn.Linear in the default dtype (float32) for a float64 base."""

    def merge(self):
        merged = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None)
        with torch.no_grad():
            merged.weight.copy_(self.base.weight + self.scale * self.B @ self.A)
            if self.base.bias is not None:
                merged.bias.copy_(self.base.bias)
        return merged


class _NoA(nn.Module):
    def __init__(self, base, rank, alpha):
        super().__init__()
        self.base = base.requires_grad_(False)

    def forward(self, x):
        return self.base(x)


class _NoMerge(DeepcopyLoRA):
    def merge(self):
        return self.B @ self.A


BAD = {
    "None": (None, "got None instead of the class `LoRALinear`"),
    "an object": (nn.Linear(2, 2), "pass the class itself"),
    "no A": (_NoA, "should have a parameter `A` of shape (2, 8), found nothing"),
    "merge returns a tensor": (_NoMerge, "should return an nn.Linear, got Tensor"),
    "merge assumes a bias": (_BiasAssumed, "nn.Linear(6, 4, bias=False), rank=2, alpha=3).merge() raised TypeError"),
    "merge in the default dtype": (_DefaultDtype, "merge() returned a layer of torch.float32 on cpu for a base of "
                                                  "torch.float64 on cpu: build the merged nn.Linear with the base's "
                                                  "dtype and device."),
}


@pytest.mark.fast
@pytest.mark.parametrize("kind", BAD)
def test_bad_input_fails_cleanly(kind):
    student, words = BAD[kind]
    with pytest.raises(CheckFailure, match="^Task 8") as failure:
        check_task_8(student)
    assert words in str(failure.value) or isinstance(failure.value, NotImplementedYet), str(failure.value)


@pytest.mark.full
def test_check_takes_under_a_second():
    assert cpu_seconds(lambda: check_task_8(reference()["LoRALinear"]), runs=3) <= 1.0


@pytest.mark.fast
def test_fixture_outputs_follow_the_formula():
    for name, case in load_fixture("checkers.llm", 8)["cases"].items():
        weights, x = case["weights"], case["x"]
        weight = weights["base.weight"] + case["alpha"] / case["rank"] * weights["B"] @ weights["A"]
        expected = x @ weight.T + weights.get("base.bias", 0.0)
        assert torch.allclose(case["outputs"], expected, atol=1e-12), name
        assert torch.allclose(case["merged_outputs"], expected, atol=1e-12), name
