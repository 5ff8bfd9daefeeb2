"""check_task_7 (the trained model): the teacher-forced accuracy it uses is greedy decoding's exact match, a trained
reference passes untouched, and untrained, unimplemented, future-reading and cheating models fail at their step."""
import copy

import pytest
import torch

from checkers.seq2seq import CheckFailure, NotImplementedYet, check_task_7
from checkers.seq2seq.trained import CHECK_SEED, CHECK_SIZE, TARGET_ACCURACY
from course_lib import seq2seq as seq2seq_defaults
from course_lib.seq2seq import (BOS_ID, EOS_ID, decoding_accuracy, exact_match, random_sources,
                                reversal_targets)
from .checks import cpu_seconds, reference
from .reversal_models import future_reader, memory_copier, source_reader, trained_reference


def check_data():
    sources = random_sources(CHECK_SIZE, torch.Generator().manual_seed(CHECK_SEED))
    return sources, reversal_targets(sources)


def perturbed(model, scale):
    """A copy of model with noise added to its output layer, so that only some sequences come out right."""
    noisy = copy.deepcopy(model)
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(0)
        noisy.output.weight.add_(torch.randn_like(noisy.output.weight) * scale)
    return noisy


def greedy_and_teacher_forced(model, sources, targets):
    """(exact match of the reference greedy decoder, exact match of one teacher-forced pass)."""
    decoded = reference()["greedy_decode"](model, sources, sources.size(1) + 1, BOS_ID, EOS_ID)
    return exact_match(decoded, targets), decoding_accuracy(model, sources, targets)[1]


@pytest.mark.full
def test_teacher_forced_accuracy_is_greedy_exact_match():
    """The premise of check_task_7: one teacher-forced pass scores what the reference greedy decoder scores."""
    greedy, teacher_forced = greedy_and_teacher_forced(trained_reference(), *check_data())
    assert teacher_forced == greedy


@pytest.mark.full
def test_the_premise_holds_when_some_sequences_are_wrong():
    """The same equality on a perturbed model that gets some sequences wrong, so it says something about wrong ones.

    How far the trained weights must be perturbed depends on the run (threads change the training's float sums),
    so the noise grows until some sequences are wrong; the equality is asserted at that noise.
    """
    sources, targets = check_data()
    for scale in (1.0, 1.5, 2.5, 4.0, 6.0):
        greedy, teacher_forced = greedy_and_teacher_forced(perturbed(trained_reference(), scale), sources, targets)
        if 0.05 < greedy < 0.95:
            break
    print(f"noise {scale}: exact match {greedy:.1%}")
    assert 0.05 < greedy < 0.95, f"no noise scale left between 5% and 95% of the sequences right ({greedy:.1%})"
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


@pytest.mark.fast
@pytest.mark.parametrize("make, words", [
    (source_reader, "with every weight re-initialised"),
    (memory_copier, "with every weight re-initialised"),
    (future_reader, "the decoder reads the future"),
    (lambda ns: ns["Seq2SeqTransformer"](**seq2seq_defaults.MODEL), f"it needs at least {TARGET_ACCURACY:.0%}"),
], ids=["decode reads source", "memory copied by hand", "decoder reads the future", "untrained"])
def test_model_fails_at_its_step(make, words):
    with pytest.raises(CheckFailure, match="^Task 7: ") as failure:
        check_task_7(make(reference()))
    assert words in str(failure.value)


@pytest.mark.fast
def test_untouched_notebook_model_is_not_implemented_yet():
    class Seq2SeqTransformer(torch.nn.Module):  # the student notebook's stub: no layers, methods raise
        def forward(self, source, target_input):
            raise NotImplementedError()

    with pytest.raises(NotImplementedYet, match="^Task 7 is not implemented yet"):
        check_task_7(Seq2SeqTransformer())


class Uniform(torch.nn.Module):
    """Runs and gives logits of the right shape, but is not the Seq2SeqTransformer layout."""

    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(13))

    def forward(self, source, target_input):
        return self.bias.expand(*target_input.shape, 13)


@pytest.mark.fast
@pytest.mark.parametrize("model, words", [
    (None, "got None"),
    (torch.nn.Module, "got the class"),
    ("model", "an nn.Module"),
    (torch.nn.Linear(3, 3), "raised TypeError"),
    (Uniform(), "should be the Seq2SeqTransformer of Task 5: `embedding` should be an nn.Embedding"),
])
def test_bad_input_fails_cleanly(model, words):
    with pytest.raises(CheckFailure, match="^Task 7: ") as failure:
        check_task_7(model)
    assert words in str(failure.value)


@pytest.mark.full
def test_check_takes_under_a_second():
    model = trained_reference()
    assert cpu_seconds(lambda: check_task_7(model)) <= 1.0


@pytest.mark.full
def test_a_differently_written_model_with_the_trained_weights_passes(capsys):
    """Task 7 judges the weights, not the style: Task 5's alternative model, given the trained weights by role."""
    from checkers.seq2seq._weights import load_roles, seq2seq_slots
    from .test_checks_model import alternative_model

    trained = {role: value.detach() for role, value in seq2seq_slots(trained_reference()).items()}
    model = load_roles(alternative_model(reference())(**seq2seq_defaults.MODEL), seq2seq_slots, trained)
    check_task_7(model)
    assert capsys.readouterr().out.startswith("✓ Task 7 passed")
