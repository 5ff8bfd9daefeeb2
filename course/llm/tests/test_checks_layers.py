"""check_task_3 (RMSNorm) and check_task_4 (SwiGLU) both ways: the reference and other correct layers pass, planted
mistakes fail (with their names where the evidence identifies them), bad input is answered cleanly, within a second;
the fixtures' outputs are torch's own F.rms_norm and a SwiGLU written from F.linear."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from checkers._core import load_fixture
from checkers.llm import CheckFailure, NotImplementedYet, check_task_3, check_task_4
from course.llm.mistakes import MUTANTS
from . import layer_variants
from .checks import cpu_seconds, expect_named, reference, variant


CHECKS = {3: (check_task_3, "RMSNorm"), 4: (check_task_4, "SwiGLU")}
LAYER_MUTANTS = [mutant for mutant in MUTANTS if mutant.task in CHECKS]


@pytest.mark.fast
@pytest.mark.parametrize("task", CHECKS)
def test_reference_passes(task, capsys):
    check, name = CHECKS[task]
    check(reference()[name])
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


@pytest.mark.fast
@pytest.mark.parametrize("mutant", LAYER_MUTANTS, ids=lambda m: f"{m.task}: {m.name}")
def test_planted_mistake_fails(mutant):
    check, name = CHECKS[mutant.task]
    with pytest.raises(CheckFailure, match=f"^Task {mutant.task}: ") as failure:
        check(variant(mutant)[name])
    if mutant.diagnosis:
        expect_named(failure.value, mutant)
    else:
        assert failure.value.diagnosis is None, str(failure.value)


@pytest.mark.fast
@pytest.mark.parametrize("layer", [layer_variants.RsqrtRMSNorm, layer_variants.TorchRMSNorm,
                                   layer_variants.UpcastRMSNorm], ids=lambda c: c.__name__)
def test_valid_rms_norm_passes(layer, capsys):
    check_task_3(layer)
    assert capsys.readouterr().out.startswith("✓ Task 3 passed")


@pytest.mark.fast
@pytest.mark.parametrize("layer", [layer_variants.SequentialGateSwiGLU, layer_variants.HandSiluSwiGLU],
                         ids=lambda c: c.__name__)
def test_valid_swiglu_passes(layer, capsys):
    check_task_4(layer)
    assert capsys.readouterr().out.startswith("✓ Task 4 passed")


class _NoForward(nn.Module):
    def __init__(self, embed_dim, *args, **kwargs):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(embed_dim))


class _ReturnsTuple(layer_variants.RsqrtRMSNorm):
    def forward(self, x):
        return super().forward(x), None


class _OwnNames(nn.Module):
    def __init__(self, embed_dim, hidden_dim):
        super().__init__()
        self.w1, self.w2 = nn.Linear(embed_dim, hidden_dim, bias=False), nn.Linear(hidden_dim, embed_dim, bias=False)
        self.w3 = nn.Linear(embed_dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


BAD = {
    (3, "None"): (None, "got None instead of the class `RMSNorm`"),
    (3, "an object"): (layer_variants.RsqrtRMSNorm(6), "pass the class itself"),
    (3, "no forward"): (_NoForward, "raised NotImplementedError"),
    (3, "returns a tuple"): (_ReturnsTuple, "should return only the outputs tensor"),
    (4, "None"): (None, "got None instead of the class `SwiGLU`"),
    (4, "not a module"): (dict, "is a class but not an nn.Module"),
    (4, "its own names"): (_OwnNames, "`gate_proj` should be an nn.Linear, found nothing"),
}


@pytest.mark.fast
@pytest.mark.parametrize("key", BAD, ids=lambda key: f"{key[0]}: {key[1]}")
def test_bad_input_fails_cleanly(key):
    student, words = BAD[key]
    check = CHECKS[key[0]][0]
    with pytest.raises(CheckFailure, match=f"^Task {key[0]}") as failure:
        check(student)
    assert words in str(failure.value) or isinstance(failure.value, NotImplementedYet), str(failure.value)


@pytest.mark.full
@pytest.mark.parametrize("task", CHECKS)
def test_check_takes_under_a_second(task):
    check, name = CHECKS[task]

    def run():
        check(reference()[name])
    assert cpu_seconds(run, runs=3) <= 1.0


@pytest.mark.fast
def test_fixture_outputs_follow_torch():
    fixture = load_fixture("checkers.llm", 3)
    for case in fixture["cases"].values():
        expected = F.rms_norm(case["x"], (case["x"].size(-1),), case["weights"]["weight"], case["eps"])
        assert torch.allclose(case["outputs"], expected, atol=1e-12), case["eps"]
    assert torch.equal(fixture["initial"], torch.ones(fixture["embed_dim"], dtype=fixture["initial"].dtype))
    default = fixture["default_eps"]
    case = fixture["cases"][default["case"]]
    expected = F.rms_norm(case["x"], (case["x"].size(-1),), case["weights"]["weight"], 1e-6)
    assert torch.allclose(default["outputs"], expected, atol=1e-12)
    fixture = load_fixture("checkers.llm", 4)
    for case in fixture["cases"].values():
        gate, up, down = (case["weights"][f"{name}.weight"] for name in ("gate_proj", "up_proj", "down_proj"))
        expected = F.linear(F.silu(F.linear(case["x"], gate)) * F.linear(case["x"], up), down)
        assert torch.allclose(case["outputs"], expected, atol=1e-12)


@pytest.mark.fast
def test_fixture_input_gradient_follows_torch():
    """The expected gradient is F.rms_norm's; the detached statistic's signature differs from it visibly."""
    fixture = load_fixture("checkers.llm", 3)
    gradient = fixture["gradient"]
    case = fixture["cases"][gradient["case"]]
    x = case["x"].clone().requires_grad_(True)
    (F.rms_norm(x, (x.size(-1),), case["weights"]["weight"], case["eps"]) * gradient["upstream"]).sum().backward()
    assert torch.allclose(gradient["x_grad"], x.grad, atol=1e-12)
    x = case["x"].clone().requires_grad_(True)
    rms = x.pow(2).mean(-1, keepdim=True).add(case["eps"]).sqrt().detach()
    (x / rms * case["weights"]["weight"] * gradient["upstream"]).sum().backward()
    (detached,) = gradient["mistakes"]["x_grad"].values()
    assert torch.allclose(detached, x.grad, atol=1e-12)
    assert (detached - gradient["x_grad"]).abs().max() > 1e-2  # the check's tolerance is 1e-6


def _edited(old, new):
    return lambda source: source.replace(old, new) if source.count(old) == 1 else pytest.fail(old)


NAMED_BY_EVIDENCE = {  # an edit of the reference: the slug its failure carries
    "default eps 1e-5": (_edited("embed_dim, eps=1e-6):", "embed_dim, eps=1e-5):"), "rms-eps-default"),
    "statistic detached": (_edited("keepdim=True) + self.eps)", "keepdim=True) + self.eps).detach()"),
                           "rms-detached-statistic"),
}


@pytest.mark.fast
@pytest.mark.parametrize("name", NAMED_BY_EVIDENCE)
def test_rms_mistake_named_by_its_evidence(name):
    edit, slug = NAMED_BY_EVIDENCE[name]
    with pytest.raises(CheckFailure, match="^Task 3: ") as failure:
        check_task_3(variant(edit)["RMSNorm"])
    assert failure.value.diagnosis == f"llm.3.{slug}", str(failure.value)
