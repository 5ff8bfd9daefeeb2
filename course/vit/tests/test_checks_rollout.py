"""check_task_5 (attention_rollout) both ways: the fixture's hand-built stacks hold the rollouts their closed forms
give; the reference and valid variants pass; planted mistakes fail with their names; bad input fails cleanly; a
failure shows the calling line only; the check stays within a second."""
import numpy as np
import pytest
import torch

from checkers._core import load_fixture
from checkers.vit import CheckFailure, NotImplementedYet, check_task_5
from course.vit.fixtures import hand_built_stacks
from course.vit.mistakes import MUTANTS
from . import model_variants
from .checks import cpu_seconds, expect_named, failure_of, raised, reference, variant


PLANTED = [mutant for mutant in MUTANTS if mutant.task == 5]


# ----- the hand-built stacks' rollouts, by an independent route ---------------------------------------------------

def closed_form(seq_len, num_layers, columns):
    """((A + I) / 2)^L for A = 1 c^T with c^T 1 = 1 (every query reads the distribution c): A is idempotent, so
    (I + A)^L = I + (2^L - 1) A and the rollout is 2^-L I + (1 - 2^-L) A, built here from c alone."""
    reading = torch.ones(seq_len, 1, dtype=torch.float64) @ columns[None]  # (T, T), every row the distribution c
    return 2.0 ** -num_layers * torch.eye(seq_len, dtype=torch.float64) + (1 - 2.0 ** -num_layers) * reading


@pytest.mark.fast
def test_the_hand_built_rollouts_are_their_closed_forms():
    cases = load_fixture("checkers.vit", 5)["cases"]
    names = list(hand_built_stacks())
    one_layer, ordered, uniform = (cases[name]["rollout"][0] for name in names)
    token_2, even = torch.eye(4)[2].double(), torch.full((4,), 0.25, dtype=torch.float64)
    # one layer, heads (token 2, uniform): A = 1 ((e_2 + u) / 2)^T, still a single row distribution
    assert torch.allclose(one_layer, closed_form(4, 1, (token_2 + even) / 2), atol=1e-12)
    assert torch.allclose(uniform, closed_form(5, 3, torch.full((5,), 0.2, dtype=torch.float64)), atol=1e-12)
    # two layers, E_1 then E_3: (I + E_3)(I + E_1) / 4 = (I + E_1 + E_3 + E_3 E_1) / 4 and E_3 E_1 = E_1
    e_1, e_3 = (torch.ones(4, 1).double() @ torch.eye(4)[k].double()[None] for k in (1, 3))
    assert torch.allclose(ordered, (torch.eye(4).double() + 2 * e_1 + e_3) / 4, atol=1e-12)


@pytest.mark.fast
def test_the_random_rollouts_agree_with_numpy():
    """An independent route for the random stacks: NumPy, layer by layer, from the definition."""
    for name, case in load_fixture("checkers.vit", 5)["cases"].items():
        rollout = None
        for attention in case["maps"]:
            mixed = attention.numpy().mean(axis=1) + np.eye(attention.shape[-1])
            mixed = mixed / mixed.sum(axis=-1, keepdims=True)
            rollout = mixed if rollout is None else np.matmul(mixed, rollout)
        assert np.allclose(case["rollout"].numpy(), rollout, atol=1e-12), name


@pytest.mark.fast
def test_random_cases_are_batched_with_heads_that_differ():
    fixture = load_fixture("checkers.vit", 5)
    maps = fixture["cases"][fixture["random"]]["maps"]
    assert len(maps) == 3 and maps[0].shape[:2] == (2, 3) and maps[0].dtype == torch.float64
    assert not torch.allclose(maps[0][:, 0], maps[0][:, 1])


# ----- both ways ---------------------------------------------------------------------------------------------------

@pytest.mark.fast
def test_reference_passes(capsys):
    check_task_5(reference()["attention_rollout"])
    assert capsys.readouterr().out.startswith("✓ Task 5 passed")


@pytest.mark.fast
@pytest.mark.parametrize("mutant", PLANTED, ids=lambda m: m.name)
def test_planted_mistake_fails_with_its_name(mutant):
    expect_named(raised(5, variant(mutant)["attention_rollout"]), mutant)


@pytest.mark.fast
def test_at_least_the_mistakes_the_brief_names_are_planted():
    assert {"no identity for the residual", "rows not renormalised", "layers multiplied in the wrong order",
            "max over heads", "identity added after renormalising", "only the [CLS] row",
            "last layer only"} <= {mutant.name for mutant in PLANTED}


@pytest.mark.fast
@pytest.mark.parametrize("rollout", [model_variants.rollout_half_and_half, model_variants.rollout_from_the_identity,
                                     model_variants.rollout_by_reduce], ids=lambda f: f.__name__)
def test_valid_variant_passes(rollout, capsys):
    check_task_5(rollout)
    assert capsys.readouterr().out.startswith("✓ Task 5 passed")


@pytest.mark.fast
def test_identical_layers_name_neither_first_nor_last_layer_only():
    """On uniform layers, using only the first or only the last layer gives the same output: that case alone names
    neither; the two-layer case before it does."""
    fixture = load_fixture("checkers.vit", 5)
    uniform = fixture["cases"]["three layers of uniform attention"]["mistakes"]["rollout"]
    first, last = (next(m for m in PLANTED if m.name == name).diagnosis for name in ("first layer only",
                                                                                     "last layer only"))
    assert torch.equal(uniform[first], uniform[last])
    assert list(fixture["cases"]).index("two layers attending to token 1, then to token 3 (the order matters)") < \
        list(fixture["cases"]).index("three layers of uniform attention")


def identity_added_once(attention_maps):
    """A mistake no fixture names: the head-averaged maps multiplied, the identity added once to the product."""
    rollout = None
    for attention in attention_maps:
        mixed = attention.mean(dim=1)  # (B, T, T)
        rollout = mixed if rollout is None else mixed @ rollout
    rollout = rollout + torch.eye(rollout.shape[-1], dtype=rollout.dtype)
    return rollout / rollout.sum(dim=-1, keepdim=True)


@pytest.mark.fast
def test_the_identity_added_once_is_not_told_only_the_first_layer_counts():
    """On the two one-hot layers it gives the first-layer-only output, but not on the random stacks: the evidence
    names no mistake, so the failure says only that the output differs."""
    fixture = load_fixture("checkers.vit", 5)
    first = next(m for m in PLANTED if m.name == "first layer only").diagnosis
    ordered = fixture["cases"]["two layers attending to token 1, then to token 3 (the order matters)"]
    assert torch.allclose(identity_added_once(ordered["maps"]), ordered["mistakes"]["rollout"][first])
    message = failure_of(5, identity_added_once)
    assert "only the first layer counts" not in message and "is wrong:" not in message, message
    assert message.startswith("Task 5: attention_rollout on two layers attending to token 1") and "differs" in message


@pytest.mark.fast
@pytest.mark.parametrize("detach", ["no_grad", "detach"])
def test_a_rollout_without_gradients_is_told_it_must_stay_differentiable(detach):
    def rollout(attention_maps):
        if detach == "detach":
            return reference()["attention_rollout"]([attention.detach() for attention in attention_maps])
        with torch.no_grad():
            return reference()["attention_rollout"](attention_maps)

    message = failure_of(5, rollout)
    assert "attention_rollout must stay differentiable: no torch.no_grad() or .detach() inside (the notebook's " \
           "cls_rollout turns gradients off around it)" in message, message


# ----- bad input -------------------------------------------------------------------------------------------------

def _not_implemented(attention_maps):
    raise NotImplementedError()


def _in_place(attention_maps):
    for attention in attention_maps:
        attention.div_(1.0 + 1e-3)
    return reference()["attention_rollout"](attention_maps)


BAD = {"None": (None, "got None instead of `attention_rollout`"),
       "a class": (torch.nn.Linear, "expected the function `attention_rollout`, got the class"),
       "a tensor": (torch.zeros(2), "expected the function `attention_rollout`"),
       "returns None": (lambda maps: None, "is None: is a `return` statement missing?"),
       "returns NumPy": (lambda maps: reference()["attention_rollout"](maps).numpy(), "NumPy array"),
       "NaN output": (lambda maps: reference()["attention_rollout"](maps) * float("nan"), "NaN"),
       "raises": (lambda maps: 1 / 0, "raised ZeroDivisionError"),
       "modifies its input": (_in_place, "modified an attention map in place")}


@pytest.mark.fast
@pytest.mark.parametrize("key", BAD)
def test_bad_input_fails_cleanly(key):
    obj, words = BAD[key]
    message = failure_of(5, obj)
    assert words in message, message


@pytest.mark.fast
def test_not_implemented_is_reported_as_such():
    with pytest.raises(NotImplementedYet, match="^Task 5 is not implemented yet"):
        check_task_5(_not_implemented)


@pytest.mark.fast
def test_a_failure_shows_the_calling_line_only():
    mutant = next(m for m in PLANTED if m.name == "rows not renormalised")
    student = variant(mutant)["attention_rollout"]
    with pytest.raises(CheckFailure) as failure:
        check_task_5(student)  # the calling line
    text = "\n".join(failure.value._render_traceback_())
    assert "check_task_5(student)  # the calling line" in text and "test_checks_rollout.py" in text, text
    assert "checkers/" not in text and "_core" not in text, text


@pytest.mark.full
@pytest.mark.parametrize("name", ["reference", "layers multiplied in the wrong order", "max over heads"])
def test_check_takes_under_a_second(name):
    rollout = reference()["attention_rollout"] if name == "reference" else \
        variant(next(m for m in PLANTED if m.name == name))["attention_rollout"]

    def run():
        try:
            check_task_5(rollout)
        except CheckFailure:
            pass
    assert cpu_seconds(run) <= 1.0
