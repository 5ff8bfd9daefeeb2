"""check_task_7 (the trained GPT): the teacher-forced accuracy it uses is greedy generation's exact verdict, a trained
reference passes untouched, and untrained, unimplemented, future-reading, untied and cheating models fail at their
step with their reason."""
import copy

import pytest
import torch

from checkers.gpt import CheckFailure, NotImplementedYet, check_task_7
from checkers.gpt.trained import CHECK_SEED, CHECK_SIZE, TARGET_ACCURACY
from course_lib import gpt as gpt_defaults
from course_lib.gpt import PROMPT_LEN, SEQ_LEN, addition_sequences, answer_accuracy

from .addition_models import calculator, future_reader, memoriser, trained_reference, untied
from .checks import cpu_seconds, reference


def check_data():
    return addition_sequences(CHECK_SIZE, torch.Generator().manual_seed(CHECK_SEED))


def perturbed(model, scale):
    """A copy of model with noise added to its final norm, so that only some answers come out right."""
    noisy = copy.deepcopy(model)
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(0)
        noisy.final_norm.weight.add_(torch.randn_like(noisy.final_norm.weight) * scale)
    return noisy


def greedy_and_teacher_forced(model, sequences):
    """(exact answers of the reference generate at temperature 0, exact answers of one teacher-forced pass)."""
    written = reference()["generate"](model, sequences[:, :PROMPT_LEN], SEQ_LEN - PROMPT_LEN, temperature=0)
    return (written == sequences).all(dim=1).float().mean().item(), answer_accuracy(model, sequences)[1]


@pytest.mark.full
def test_teacher_forced_accuracy_is_greedy_generation_s_verdict():
    """The premise of check_task_7: one teacher-forced pass scores what the reference generate (greedy) writes."""
    sequences = check_data()
    greedy, teacher_forced = greedy_and_teacher_forced(trained_reference(), sequences)
    assert teacher_forced == greedy


@pytest.mark.full
def test_the_premise_holds_when_some_answers_are_wrong():
    """The same equality on a perturbed model that gets some answers wrong, so it says something about wrong ones.

    How far the trained weights must be perturbed depends on the run (threads change the training's float sums),
    so the noise grows until some answers are wrong; the equality is asserted at that noise.
    """
    sequences = check_data()
    for scale in (0.6, 1.0, 1.5, 2.5, 4.0):
        greedy, teacher_forced = greedy_and_teacher_forced(perturbed(trained_reference(), scale), sequences)
        if 0.05 < greedy < 0.95:
            break
    print(f"noise {scale}: exact answers {greedy:.1%}")
    assert 0.05 < greedy < 0.95, f"no noise scale left between 5% and 95% of the answers right ({greedy:.1%})"
    assert teacher_forced == greedy


@pytest.mark.full
def test_trained_reference_passes_and_is_left_as_it_was(capsys):
    model = trained_reference().train()
    before = {key: value.clone() for key, value in model.state_dict().items()}
    check_task_7(model)
    assert capsys.readouterr().out.startswith("✓ Task 7 passed")
    assert model.training
    assert all(torch.equal(before[key], value) for key, value in model.state_dict().items())
    model.eval()


@pytest.mark.full
@pytest.mark.parametrize("make, words", [
    (lambda ns: ns["GPT"](**gpt_defaults.MODEL), "training has not reached the target: the model answers 0.0% of "
                                                f"{CHECK_SIZE} fresh problems exactly and needs at least "
                                                f"{TARGET_ACCURACY:.0%}"),
    (calculator, "with every weight re-drawn the model still answers 100% of 500"),
    (lambda ns: memoriser(ns, CHECK_SEED, CHECK_SIZE, as_parameter=False), "with every weight re-drawn"),
    (lambda ns: memoriser(ns, CHECK_SEED, CHECK_SIZE), "a weight outside the pinned GPT layout, `table`"),
    (future_reader, "the model reads the future"),
    (untied, "`lm_head.weight` is not `token_embedding.weight` (the head is untied)"),
], ids=["untrained", "calculator in forward", "answers of the check's seed in a buffer",
        "answers of the check's seed in a parameter", "reads the future", "untied head"])
def test_model_fails_at_its_step(make, words):
    with pytest.raises(CheckFailure, match="^Task 7: ") as failure:
        check_task_7(make(reference()))
    assert words in str(failure.value)


@pytest.mark.fast
def test_the_cheats_would_pass_on_accuracy_alone():
    """Without the collapse and layout steps the cheats above would pass: they answer the check's problems."""
    sequences = check_data()
    for model in (calculator(reference()), memoriser(reference(), CHECK_SEED, CHECK_SIZE, as_parameter=False)):
        assert answer_accuracy(model, sequences)[1] == 1.0


@pytest.mark.fast
def test_untouched_notebook_model_is_not_implemented_yet():
    class GPT(torch.nn.Module):  # the student notebook's stub: no layers, forward raises
        def forward(self, tokens, cache=None):
            raise NotImplementedError()

    with pytest.raises(NotImplementedYet, match="^Task 7 is not implemented yet"):
        check_task_7(GPT())


class Uniform(torch.nn.Module):
    """Runs and gives logits of the right shape, but is not the GPT layout."""

    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(12))

    def forward(self, tokens, cache=None):
        return self.bias.expand(*tokens.shape, 12), None


class NaNLogits(Uniform):
    def forward(self, tokens, cache=None):
        return self.bias.expand(*tokens.shape, 12) * float("nan"), None


@pytest.mark.fast
@pytest.mark.parametrize("model, words", [
    (None, "got None"),
    (torch.nn.Module, "got the class"),
    ("model", "an nn.Module"),
    (torch.nn.Linear(3, 3), "raised RuntimeError"),
    (Uniform(), "should be the GPT of Task 5: `token_embedding` should be an nn.Embedding"),
    (NaNLogits(), "NaN"),
])
def test_bad_input_fails_cleanly(model, words):
    with pytest.raises(CheckFailure, match="^Task 7: ") as failure:
        check_task_7(model)
    assert words in str(failure.value)


@pytest.mark.full
def test_logits_alone_instead_of_logits_and_cache_are_named():
    class LogitsOnly(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.inner = model

        def forward(self, tokens, cache=None):
            return self.inner(tokens)[0]

    with pytest.raises(CheckFailure, match="should return \\(logits, new_cache\\)"):
        check_task_7(LogitsOnly(trained_reference()))


@pytest.mark.full
def test_check_takes_under_a_second():
    model = trained_reference()
    assert cpu_seconds(lambda: check_task_7(model)) <= 1.0


@pytest.mark.fast
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_model_on_the_gpu_passes(capsys):
    model = copy.deepcopy(trained_reference()).cuda()
    check_task_7(model)
    assert capsys.readouterr().out.startswith("✓ Task 7 passed")
    assert next(model.parameters()).is_cuda
