"""check_task_7 (the trained Llama): the reference trained as the notebook trains it passes untouched, and so does the
given Llama built of layers written another way with its weights; a re-drawn, an untrained and a briefly trained model
fail with their bits per byte and the bound; future-reading and text-looking-up models fail at their step although
their bits per byte alone would pass; a model outside the given layout, with a weight of its own or with a layer class
that fails its task fails by name; bad models and tokenizers are answered cleanly; the check takes under a second."""
import math

import pytest
import torch

from checkers._trained import redrawn
from checkers.llm import CheckFailure, NotImplementedYet, check_task_7
from checkers.llm.trained import MAX_LEN, TARGET_BPB
from course_lib import llm as llm_defaults
from course_lib.llm import bits_per_byte, split_topics, utf8_size

from .bpe_variants import SequentialTokenizer
from .checks import cpu_seconds, reference
from .llama_variants import future_reader, llama_of, other_llama, text_lookup, variant_llama, with_weights
from .trained_models import reference_merges, reference_tokenizer, trained_reference

FEW_STEPS = 100


def scored_text():
    """The part of the held-out topics the check scores."""
    return split_topics()[1][:llm_defaults.EVAL_CHARS]


def scored_bpb(model):
    """bits_per_byte of model on the scored part, cut by the reference tokenizer."""
    text = scored_text()
    return bits_per_byte(model, reference_tokenizer().encode(text), utf8_size(text), MAX_LEN)


def failure_of(model, tokenizer="the reference's"):
    with pytest.raises(CheckFailure, match="^Task 7: ") as failure:
        check_task_7(model, reference_tokenizer() if tokenizer == "the reference's" else tokenizer)
    return str(failure.value)


@pytest.mark.full
def test_trained_reference_passes_and_is_left_as_it_was(capsys):
    model = trained_reference().train()
    before = {key: value.clone() for key, value in model.state_dict().items()}
    check_task_7(model, reference_tokenizer())
    assert capsys.readouterr().out.startswith("✓ Task 7 passed")
    assert model.training
    assert all(torch.equal(before[key], value) for key, value in model.state_dict().items())
    model.eval()


@pytest.mark.full
def test_another_tokenizer_with_the_same_merges_passes(capsys):
    check_task_7(trained_reference(), SequentialTokenizer(reference_merges()))
    assert capsys.readouterr().out.startswith("✓ Task 7 passed")


@pytest.mark.full
def test_the_llama_of_layers_written_another_way_with_the_trained_weights_passes(capsys):
    variant, trained = variant_llama(reference(), trained_reference()), trained_reference()
    tokens = torch.tensor([reference_tokenizer().encode(scored_text())[:MAX_LEN]])
    assert torch.allclose(variant(tokens)[0], trained(tokens)[0], atol=1e-4)  # the same function, written apart
    check_task_7(variant, reference_tokenizer())
    assert capsys.readouterr().out.startswith("✓ Task 7 passed")


@pytest.mark.full
def test_the_same_function_outside_the_given_layout_fails_by_name():
    """The grade loads the weights by role into the course's Llama: a model without those roles cannot be graded."""
    other, trained = other_llama(trained_reference()), trained_reference()
    tokens = torch.tensor([reference_tokenizer().encode(scored_text())[:MAX_LEN]])
    assert torch.allclose(other(tokens)[0], trained(tokens)[0], atol=1e-4)
    assert "the model should be the given Llama built from your layers: `token_embedding` should be" \
        in failure_of(other)


@pytest.mark.full
def test_a_weight_outside_the_layout_fails_by_name():
    class Biased(reference()["Llama"]):
        def __init__(self, **config):
            super().__init__(**config)
            self.logit_bias = torch.nn.Parameter(torch.zeros(config["vocab_size"]))

    model = Biased(**llm_defaults.MODEL)
    model.load_state_dict(trained_reference().state_dict(), strict=False)  # all but the bias
    assert "a weight outside the given Llama's layout, `logit_bias`" in failure_of(model.eval())


@pytest.mark.full
def test_a_layer_class_that_fails_its_task_fails_by_name():
    """The trained weights in a Llama whose RMSNorm adds eps outside the root (a planted Task 3 mistake): the grade
    pays Task 7 only with Tasks 3-5 paid."""
    from course.llm.mistakes import MUTANTS

    from .checks import variant
    mutant = next(mutant for mutant in MUTANTS if mutant.task == 3 and mutant.name == "eps outside the square root")
    Llama = llama_of(reference(), RMSNorm=variant(mutant)["RMSNorm"])
    message = failure_of(with_weights(Llama(**llm_defaults.MODEL), trained_reference()))
    assert "the model's class does not pass check_task_3: fix Task 3 first" in message


@pytest.mark.full
def test_redrawn_and_untrained_models_fail_as_untrained():
    """A fresh Llama (embedding N(0, 0.02)) scores a uniform guess; re-drawn weights (N(0, 1)) worse still."""
    fresh = reference()["Llama"](**llm_defaults.MODEL)
    for model in (fresh, redrawn(trained_reference(), 1)):
        bpb = scored_bpb(model)
        message = failure_of(model)
        assert f"needs {bpb:.2f} bits per byte" in message and "no better than a uniform guess" in message


@pytest.mark.full
def test_briefly_trained_model_fails_with_its_bits_per_byte_and_the_bound():
    model = trained_reference(steps=FEW_STEPS)
    bpb = scored_bpb(model)
    uniform = math.log2(llm_defaults.VOCAB_SIZE) * (len(reference_tokenizer().encode(scored_text())) - 1) \
        / utf8_size(scored_text())
    assert TARGET_BPB < bpb < 0.98 * uniform, f"{FEW_STEPS} steps gave {bpb:.3f} bits per byte"
    message = failure_of(model)
    assert f"needs {bpb:.3f} bits per byte" in message and f"at most {TARGET_BPB:.2f}" in message
    assert "uniform" not in message  # it has learnt something: not named untrained


@pytest.mark.full
@pytest.mark.parametrize("make, words", [
    (lambda trained: future_reader(reference(), trained), "the logits at position 0 change when only later tokens"),
    (lambda trained: text_lookup(reference(), trained, reference_tokenizer().encode(scored_text())),
     "with every weight re-drawn the model still needs only"),
], ids=["reads the future", "looks the text up"])
def test_cheat_fails_at_its_step_although_its_bits_per_byte_pass(make, words):
    model = make(trained_reference())
    assert scored_bpb(model) < TARGET_BPB
    assert words in failure_of(model)


@pytest.mark.fast
def test_a_mask_left_out_of_the_attention_is_named():
    from course.llm.mistakes import MUTANTS

    from .checks import variant
    mutant = next(mutant for mutant in MUTANTS if mutant.task == 5 and mutant.name == "not causal")
    torch.manual_seed(0)
    assert "reads the future" in failure_of(variant(mutant)["Llama"](**llm_defaults.MODEL))


class Uniform(torch.nn.Module):
    def __init__(self, value=0.0):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.full((llm_defaults.VOCAB_SIZE,), value))

    def forward(self, tokens, cache=None):
        return self.bias.expand(*tokens.shape, -1), None


class Unimplemented(torch.nn.Module):
    def forward(self, tokens, cache=None):
        raise NotImplementedError()


class LogitsOnly(Uniform):
    def forward(self, tokens, cache=None):
        return super().forward(tokens)[0]


@pytest.mark.fast
@pytest.mark.parametrize("model, words", [
    (None, "got None"),
    (torch.nn.Module, "got the class"),
    ("model", "an nn.Module"),
    (torch.nn.Linear(3, 3), "raised RuntimeError"),
    (LogitsOnly(), "should return (logits, new_cache)"),
    (Uniform(float("nan")), "NaN"),
    (Uniform(), "the model should be the given Llama built from your layers"),
], ids=["None", "a class", "a string", "a model that raises", "logits alone", "NaN logits", "not the Llama"])
def test_bad_model_fails_cleanly(model, words):
    assert words in failure_of(model)


@pytest.mark.fast
def test_untouched_model_is_not_implemented_yet():
    with pytest.raises(NotImplementedYet, match="^Task 7 is not implemented yet"):
        check_task_7(Unimplemented(), reference_tokenizer())


class Shifted:
    """Round-trips, but its ids run past the model's 1024 tokens."""

    def encode(self, text):
        return [byte + 1000 for byte in text.encode("utf-8", "surrogatepass")]

    def decode(self, ids):
        return bytes(i - 1000 for i in ids).decode("utf-8", "surrogatepass")


class Lossy(Shifted):
    def decode(self, ids):
        return super().decode(ids)[:-1]


@pytest.mark.full
@pytest.mark.parametrize("tokenizer, words", [
    (None, "has no `encode` method"),
    (Shifted(), f"the tokenizer gives ids up to {max(scored_text().encode()) + 1000}, but the model has 1024 tokens"),
    (Lossy(), "does not give back the held-out text"),
], ids=["None", "ids past the vocabulary", "lossy"])
def test_bad_tokenizer_fails_cleanly(tokenizer, words):
    assert words in failure_of(trained_reference(), tokenizer)


@pytest.mark.full
def test_check_takes_under_a_second():
    model, tokenizer = trained_reference(), reference_tokenizer()
    assert cpu_seconds(lambda: check_task_7(model, tokenizer)) <= 1.0
