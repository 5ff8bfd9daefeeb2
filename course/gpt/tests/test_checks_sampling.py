"""check_task_6 (sample_next_token) both ways: the reference and other correct samplers pass, planted mistakes fail
with their names, bad input is answered cleanly, within a second; the fixture's probabilities and draws are what the
pinned formula gives by an independent route."""
import math

import pytest
import torch

from checkers._core import load_fixture
from checkers.gpt import CheckFailure, NotImplementedYet, check_task_6, sampling
from course.gpt.mistakes import MUTANTS
from . import model_variants
from .checks import cpu_seconds, expect_named, reference, variant


TASK_6 = [mutant for mutant in MUTANTS if mutant.task == 6]


@pytest.mark.fast
def test_reference_passes(capsys):
    check_task_6(reference()["sample_next_token"])
    assert capsys.readouterr().out.startswith("✓ Task 6 passed")


@pytest.mark.fast
@pytest.mark.parametrize("mutant", TASK_6, ids=lambda m: m.name)
def test_planted_mistake_fails_with_its_name(mutant):
    with pytest.raises(CheckFailure, match="^Task 6: ") as failure:
        check_task_6(variant(mutant)["sample_next_token"])
    expect_named(failure.value, mutant)


def _message(sampler):
    with pytest.raises(CheckFailure, match="^Task 6: ") as failure:
        check_task_6(sampler)
    return str(failure.value)


@pytest.mark.fast
def test_temperature_skipped_with_top_k_is_not_told_it_comes_after_the_softmax():
    """The stored after-softmax frequencies match the one setting with both a temperature and top_k; the settings
    with a temperature alone are right, so that diagnosis does not fit and is not given."""
    message = _message(variant(next(m for m in TASK_6 if m.name == "temperature only without top_k"))
                       ["sample_next_token"])
    assert "after the softmax" not in message and sampling.TEMPERATURE_AFTER_SOFTMAX not in message, message
    assert sampling.TEMPERATURE_ONLY_WITHOUT_TOP_K in message, message


def _stripped(package, number):
    fixture = load_fixture(package, number)
    return dict(fixture, cases={name: {key: value for key, value in case.items() if key != "mistakes"}
                                for name, case in fixture["cases"].items()})


@pytest.mark.fast
def test_without_a_fitting_mistake_the_settings_off_and_right_are_listed(monkeypatch):
    monkeypatch.setattr(sampling, "load_fixture", _stripped)
    message = _message(variant(next(m for m in TASK_6 if m.name == "temperature only without top_k"))
                       ["sample_next_token"])
    assert "off in the settings (top_k 2, temperature 2), (top_k 4, temperature 0.5) and right in " \
           "(temperature 1), (temperature 0.5), " \
           "(temperature 2), (top_k 3)" in message, message
    assert "after the softmax" not in message, message


@pytest.mark.fast
def test_a_temperature_ignored_everywhere_is_told_it_changes_nothing():
    def sampler(logits, temperature=1.0, top_k=None, generator=None):
        if temperature == 0:
            return logits.argmax(-1, keepdim=True)
        if top_k is not None and top_k < logits.size(-1):
            logits = logits.masked_fill(logits < logits.topk(top_k, -1).values[:, -1:], -math.inf)
        return torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)
    assert sampling.TEMPERATURE_AFTER_SOFTMAX in _message(sampler)


@pytest.mark.fast
def test_at_least_the_mistakes_the_brief_names_are_planted():
    assert {"temperature after the softmax", "temperature multiplied", "top-k keeps the smallest logits",
            "top-k keeps k - 1", "top-k keeps k + 1", "temperature only without top_k",
            "global RNG instead of the generator", "shape (B,) instead of (B, 1)"} <= \
        {mutant.name for mutant in TASK_6}


@pytest.mark.fast
@pytest.mark.parametrize("sampler", [model_variants.sample_with_topk_scatter,
                                     model_variants.sample_with_sort_and_log_softmax], ids=lambda f: f.__name__)
def test_valid_variant_passes(sampler, capsys):
    check_task_6(sampler)
    assert capsys.readouterr().out.startswith("✓ Task 6 passed")


@pytest.mark.fast
def test_a_sampler_with_other_draws_fails_only_the_exact_draws():
    """Gumbel-max with the generator draws from the right distribution but not the pinned multinomial draws."""
    def gumbel(logits, temperature=1.0, top_k=None, generator=None):
        if temperature == 0:
            return logits.argmax(-1, keepdim=True)
        scaled = logits / temperature
        if top_k is not None and top_k < logits.size(-1):
            scaled = scaled.masked_fill(scaled < scaled.topk(top_k, -1).values[:, -1:], -math.inf)
        noise = -torch.log(-torch.log(torch.rand(scaled.shape, generator=generator, dtype=scaled.dtype)))
        return (scaled + noise).argmax(-1, keepdim=True)
    with pytest.raises(CheckFailure, match="^Task 6: ") as failure:
        check_task_6(gumbel)
    assert "the distribution is right" in str(failure.value)


@pytest.mark.fast
def test_fixture_probabilities_and_draws_follow_the_formula():
    """An independent route: exp(logit / T) over the k largest ids found by argsort, normalised; then the draws of
    the fixture are the pinned multinomial's from the stored seed, and no setting has ties among its kept logits."""
    fixture = load_fixture("checkers.gpt", 6)
    logits = fixture["logits"]
    for case in fixture["cases"].values():
        temperature, top_k = case["setting"]["temperature"], case["setting"]["top_k"]
        weights = torch.exp(logits / temperature)
        if top_k is not None:
            kept = torch.zeros_like(weights, dtype=torch.bool).scatter(1, logits.argsort(1, descending=True)[:, :top_k],
                                                                        True)
            weights = weights * kept
        assert torch.allclose(case["probabilities"], weights / weights.sum(1, keepdim=True), atol=1e-12)
        generator = torch.Generator().manual_seed(fixture["draw_seed"])
        draws = torch.cat([torch.multinomial(case["probabilities"], 1, generator=generator)
                           for _ in range(fixture["draw_calls"])], 1)
        assert torch.equal(draws, case["draws"])
    assert (logits.sort(1).values.diff(dim=1) > 1e-3).all()  # no near-ties: k and k - 1 differ visibly


DISTRIBUTION_MISTAKES = {sampling.TEMPERATURE_AFTER_SOFTMAX, sampling.TEMPERATURE_MULTIPLIED, sampling.TOP_K_SMALLEST,
                         sampling.TOP_K_MINUS_ONE, sampling.TOP_K_IGNORED,
                         sampling.TOP_K_PLUS_ONE, sampling.TEMPERATURE_ONLY_WITHOUT_TOP_K}


@pytest.mark.fast
def test_the_distribution_tolerance_separates_the_planted_mistakes():
    """Each planted distribution mistake is, in some setting, more than 10 binomial sigmas of 4000 draws away from the
    right distribution: twice the check's 5 sigmas, so a student's own draws of that mistake cannot pass."""
    fixture, separated = load_fixture("checkers.gpt", 6), set()
    for case in fixture["cases"].values():
        p = case["probabilities"][0]
        sigma = (p * (1 - p) / fixture["frequency_draws"]).sqrt()
        for diagnosis, signature in case.get("mistakes", {}).get("frequencies", {}).items():
            if ((signature - p).abs() > 10 * sigma + 1e-3).any():
                separated.add(diagnosis)
    assert DISTRIBUTION_MISTAKES <= separated


def _returns(value):
    return lambda logits, temperature=1.0, top_k=None, generator=None: value(logits)


BAD = {
    "None": (None, "got None instead of `sample_next_token`"),
    "a class": (torch.nn.Linear, "expected the function `sample_next_token`, got the class Linear"),
    "returns None": (_returns(lambda logits: None), "is None"),
    "returns probabilities": (_returns(lambda logits: torch.softmax(logits, -1)), "has shape"),
    "returns floats": (_returns(lambda logits: logits.argmax(-1, keepdim=True).double()), "token ids are torch.long"),
    "returns a list": (_returns(lambda logits: [0] * len(logits)), "should be a torch.Tensor"),
    "raises": (_returns(lambda logits: logits.foo), "raised AttributeError"),
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
    def sample_next_token(logits, temperature=1.0, top_k=None, generator=None):
        raise NotImplementedError()
    with pytest.raises(NotImplementedYet, match="^Task 6 is not implemented yet"):
        check_task_6(sample_next_token)


@pytest.mark.full
@pytest.mark.parametrize("name", ["reference", "global RNG instead of the generator", "top-k keeps k - 1"])
def test_check_takes_under_a_second(name):
    sampler = reference()["sample_next_token"] if name == "reference" else \
        variant(next(m for m in TASK_6 if m.name == name))["sample_next_token"]

    def run():
        try:
            check_task_6(sampler)
        except CheckFailure:
            pass
    assert cpu_seconds(run) <= 1.0
