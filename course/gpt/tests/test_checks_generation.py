"""check_task_8 (generate) both ways: the reference and another correct generate pass on a trained-size model and on
an untrained one, planted mistakes fail with their names, bad input is answered cleanly, within a second; the stand-in's
expected tokens follow the pinned draws by an independent route."""
import copy
from unittest import mock

import pytest
import torch
import torch.nn as nn

from checkers._core import load_fixture
from checkers.gpt import CheckFailure, NotImplementedYet, check_task_8, generation
from checkers.gpt._scripted import FixedLogitsModel
from course.gpt.mistakes import MUTANTS
from course_lib import gpt as gpt_defaults
from . import model_variants
from .checks import cpu_seconds, expect_named, reference, variant


TASK_8 = [mutant for mutant in MUTANTS if mutant.task == 8]


def untrained_model(seed=0):
    torch.manual_seed(seed)
    return reference()["GPT"](**gpt_defaults.MODEL)


@pytest.mark.fast
def test_reference_passes(capsys):
    check_task_8(reference()["generate"], untrained_model())
    assert capsys.readouterr().out.startswith("✓ Task 8 passed")


@pytest.mark.fast
def test_the_model_is_left_as_it_was():
    model = untrained_model().train()
    state = copy.deepcopy(model.state_dict())
    check_task_8(reference()["generate"], model)
    assert model.training and all(torch.equal(state[key], value) for key, value in model.state_dict().items())
    assert next(model.parameters()).dtype == torch.float32


@pytest.mark.fast
@pytest.mark.parametrize("mutant", TASK_8, ids=lambda m: m.name)
def test_planted_mistake_fails_with_its_name(mutant):
    with pytest.raises(CheckFailure, match="^Task 8: ") as failure:
        check_task_8(variant(mutant)["generate"], untrained_model())
    expect_named(failure.value, mutant)


@pytest.mark.fast
def test_at_least_the_mistakes_the_brief_names_are_planted():
    assert {"cache never used", "whole sequence fed with the cache", "mode not restored",
            "global RNG instead of the generator", "mode restored only without an error"} <= \
        {mutant.name for mutant in TASK_8}


@pytest.mark.fast
def test_valid_variant_passes(capsys):
    check_task_8(model_variants.generate_with_while_loop(reference()), untrained_model())
    check_task_8(model_variants.generate_calling_forward(reference()), untrained_model())
    assert capsys.readouterr().out.startswith("✓ Task 8 passed")


@pytest.mark.fast
def test_a_model_whose_cache_changes_the_tokens_is_caught():
    """A GPT whose cached path ignores the cache passes every stand-in check; on the student's model the tokens with
    and without the cache differ, and the check then blames the model's class, which fails Task 5."""
    class Forgetful(reference()["GPT"]):
        def forward(self, tokens, cache=None):
            return super().forward(tokens)
    torch.manual_seed(0)
    model = Forgetful(**dict(gpt_defaults.MODEL))
    with torch.no_grad():  # a flatter model than the untrained tied one, so that sampling sees the difference
        model.token_embedding.weight.mul_(0.1)
    with pytest.raises(CheckFailure, match="^Task 8: ") as failure:
        check_task_8(reference()["generate"], model)
    assert "does not pass check_task_5" in str(failure.value)
    with mock.patch("checkers.gpt.generation.explain_parts", lambda *args: None):  # the sentence behind the blame
        with pytest.raises(CheckFailure) as failure:
            check_task_8(reference()["generate"], model)
    assert generation.CACHE_CHANGES_TOKENS in str(failure.value)


@pytest.mark.fast
def test_expected_tokens_follow_the_pinned_draws():
    """An independent route for every stand-in case: top-k by argsort, probabilities by exp and a sum, the draws with
    torch.multinomial from the stored seed (argmax for temperature 0)."""
    fixture = load_fixture("checkers.gpt", 8)
    table = fixture["table"]
    for case in fixture["cases"].values():
        temperature, top_k = case["setting"]["temperature"], case["setting"]["top_k"]
        generator, tokens = torch.Generator().manual_seed(fixture["seed"]), fixture["prompt"]
        for _ in range(fixture["new_tokens"]):
            logits = table[tokens[:, -1]]
            if temperature == 0:
                chosen = logits.argmax(1, keepdim=True)
            else:
                weights = torch.exp(logits / temperature)
                if top_k is not None:
                    weights = weights * torch.zeros_like(weights).scatter(1, logits.argsort(1, True)[:, :top_k], 1.0)
                chosen = torch.multinomial(weights / weights.sum(1, keepdim=True), 1, generator=generator)
            tokens = torch.cat([tokens, chosen], 1)
        assert torch.equal(tokens, case["tokens"])


@pytest.mark.fast
def test_the_stand_in_counts_what_it_is_fed():
    fixture = load_fixture("checkers.gpt", 8)
    state = torch.get_rng_state()
    model = FixedLogitsModel(fixture["table"], fixture["max_len"])
    assert torch.equal(state, torch.get_rng_state())  # building it leaves the student's global generator alone
    logits, cache = model(fixture["prompt"])
    model(fixture["prompt"][:, -1:], cache=cache)
    assert [(call["fed"], call["past"]) for call in model.calls] == [(4, 0), (1, 4)]
    assert torch.equal(logits[:, -1], fixture["table"][fixture["prompt"][:, -1]])


def _generate_returning(value):
    def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True, generator=None):
        return value(prompt, max_new_tokens)
    return generate


BAD = {
    "generate None": (None, untrained_model, "got None instead of `generate`"),
    "model None": (lambda ns: ns["generate"], lambda: None, "expected your trained GPT model"),
    "model class": (lambda ns: ns["generate"], lambda: reference()["GPT"], "got the class GPT"),
    "model without max_len": (lambda ns: ns["generate"], lambda: nn.Linear(2, 2), "no integer `max_len`"),
    "returns None": (lambda ns: _generate_returning(lambda prompt, n: None), untrained_model, "is None"),
    "returns only the new tokens": (lambda ns: _generate_returning(
        lambda prompt, n: torch.zeros(prompt.size(0), n, dtype=torch.long)), untrained_model, "has shape"),
    "raises": (lambda ns: _generate_returning(lambda prompt, n: prompt.foo), untrained_model, "raised AttributeError"),
}


@pytest.mark.fast
@pytest.mark.parametrize("kind", BAD)
def test_bad_input_fails_cleanly(kind):
    make, model, words = BAD[kind]
    with pytest.raises(CheckFailure, match="^Task 8: ") as failure:
        check_task_8(make(reference()) if make else None, model())
    assert words in str(failure.value), str(failure.value)


class EmptyModel(nn.Module):
    """What an untouched notebook's GPT(...) builds: a module without layers."""


@pytest.mark.fast
@pytest.mark.parametrize("model", [untrained_model, EmptyModel], ids=["a GPT", "an untouched notebook's GPT"])
def test_not_implemented_is_reported_as_such(model):
    def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, use_cache=True, generator=None):
        raise NotImplementedError()
    with pytest.raises(NotImplementedYet, match="^Task 8 is not implemented yet"):
        check_task_8(generate, model())


@pytest.mark.full
@pytest.mark.parametrize("name", ["reference", "cache never used", "mode restored only without an error"])
def test_check_takes_under_a_second(name):
    generate = reference()["generate"] if name == "reference" else \
        variant(next(m for m in TASK_8 if m.name == name))["generate"]
    model = untrained_model()

    def run():
        try:
            check_task_8(generate, model)
        except CheckFailure:
            pass
    assert cpu_seconds(run) <= 1.0


@pytest.mark.fast
def test_a_model_failing_task_5_is_blamed_on_task_5():
    mutant = next(m for m in MUTANTS if m.name == "one cache for every block")
    torch.manual_seed(0)
    model = variant(mutant)["GPT"](**gpt_defaults.MODEL)
    with torch.no_grad():  # flatter logits, so that the wrong cache changes the sampled tokens
        model.token_embedding.weight.mul_(0.1)
    with pytest.raises(CheckFailure, match="^Task 8: ") as failure:
        check_task_8(reference()["generate"], model)
    assert "does not pass check_task_5" in str(failure.value) and "fix Task 5 first" in str(failure.value)
