"""Tasks 3 and 4's probes of a layer whose values match no known mistake (checkers/llm/_layer_probes.py): what the
norm divides by, and the gate's nonlinearity, read from inputs that isolate them; each planted outside the list."""
import pytest

from checkers.llm import CheckFailure, check_task_3, check_task_4
from checkers.llm._layer_probes import RMS_LENGTH, RMS_MEAN_ABS, SWIGLU_OTHER_GATE
from course.reference import load_reference, reference_source
from course.registry import assignment

pytestmark = pytest.mark.fast
RMS = "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)"
GATE = "F.silu(self.gate_proj(x))"


def edited(name, old, new):
    source = reference_source(assignment("llm"))
    assert source.count(old) == 1
    return load_reference(source.replace(old, new))[name]


@pytest.mark.parametrize("check, name, new, expected", [
    (check_task_3, "RMSNorm", "x.norm(dim=-1, keepdim=True) + self.eps", RMS_LENGTH),
    (check_task_3, "RMSNorm", "x.abs().mean(dim=-1, keepdim=True)", RMS_MEAN_ABS),
    (check_task_4, "SwiGLU", "F.relu(self.gate_proj(x))", SWIGLU_OTHER_GATE.format(gate="ReLU")),
    (check_task_4, "SwiGLU", "self.gate_proj(x)", SWIGLU_OTHER_GATE.format(gate="no nonlinearity"))],
    ids=["divided by the length", "mean |x| without eps", "ReLU gate", "no gate nonlinearity"])
def test_the_probe_names_the_part_that_differs(check, name, new, expected):
    old = RMS if name == "RMSNorm" else GATE
    with pytest.raises(CheckFailure) as failure:
        check(edited(name, old, new))
    assert str(expected) in str(failure.value), str(failure.value)


def test_a_mistake_the_probes_cannot_tell_is_shown_as_what_its_values_are():
    """No probe of SwiGLU names a stray factor: the shared last resort says how the values relate, and no cause."""
    with pytest.raises(CheckFailure) as failure:
        check_task_4(edited("SwiGLU", GATE, "F.silu(self.gate_proj(x)) * 1.5"))
    assert "differs from the expected values: every value is 1.5 times the expected one: one factor is off; " \
           "largest deviation" in str(failure.value), str(failure.value)
