"""Task 7: the trained reversal model, judged on sequences the checker draws itself.

No decoder is run here: for a decoder that cannot see the future, greedy decoding reproduces a target exactly if
and only if every position's most likely token, given the true prefix, is the true token, so one teacher-forced
pass (course_lib.seq2seq.decoding_accuracy) gives greedy decoding's exact match. The check therefore first makes
sure that the decoder cannot see the future and that the accuracy comes from the trained weights, then that the
model's class passes check_task_5: the grade loads the weights into the reference Seq2SeqTransformer and pays Task 7
only when Task 5 earns its points (course.toml's `needs`), so a model whose blocks compute something else (pre-norm,
say) was trained for another function than the one graded.
"""

import torch

from course_lib.seq2seq import (BOS_ID, decoding_accuracy, init_embedding, random_sources, reversal_targets,
                                teacher_forcing_input)

from .._compare import expect_finite, expect_tensor
from .._core import Diagnosis, check_function
from .._trained import expect_class_passes, expect_trained_model, model_device, redrawn
from .._weights import MissingPart
from ._weights import seq2seq_slots
from .model import check_task_5

CHECK_SEED = 4242  # never a seed of the notebook's data (1 and 2)
CHECK_SIZE = 1000
TARGET_ACCURACY = 0.99  # grading imports it: one bar for the check and the grade
RESET_SIZE = 200
RESET_CEILING = 0.5  # a model whose answers come from its weights falls far below this when they are re-drawn
NAME = "model"

READS_FUTURE = Diagnosis(
    "trained-reads-future",
    "the logits at position {position} change when only later decoder-input tokens change, so the "
    "decoder reads the future and its teacher-forced accuracy says nothing about generation: pass "
    "causal_mask(T) as the self-attention mask in decode (check Task 5).")
NOT_FROM_WEIGHTS = Diagnosis(
    "not-from-weights",
    "with every weight re-initialised the model still reverses {accuracy:.0%} of {size} fresh "
    "sequences, so its answers do not come from what it learned: decode must compute the logits "
    "from the decoder input and the memory with the model's layers (source serves only for the "
    "padding mask).")


def _expect_layout(task, model, sources, targets):
    """The model runs (NotImplementedError: not implemented yet) and has the pinned Seq2SeqTransformer layout."""
    _logits(task, model, sources.to(model_device(model)), teacher_forcing_input(targets).to(model_device(model)))
    try:
        seq2seq_slots(model)
    except MissingPart as missing:
        task.fail(f"the model should be the Seq2SeqTransformer of Task 5: {missing}.", missing.diagnosis)


def _logits(task, model, sources, decoder_input):
    """model(sources, decoder_input) in eval mode without gradients, checked to be finite (N, T, V) logits."""
    with torch.no_grad():
        logits = task.call(f"{NAME}(source, target_input)", model, sources, decoder_input)
    expect_tensor(task, f"{NAME}(source, target_input)", logits)
    if logits.dim() != 3 or tuple(logits.shape[:2]) != tuple(decoder_input.shape):
        task.fail(f"{NAME}(source, target_input) has shape {tuple(logits.shape)}, expected (batch_size, T, "
                  f"vocab_size) with (batch_size, T) = {tuple(decoder_input.shape)}.")
    expect_finite(task, f"{NAME}(source, target_input)", logits)
    return logits.float().cpu()


def _expect_causal(task, model, sources, targets):
    """Fail unless changing the decoder input from some position on leaves every earlier position's logits alone."""
    device = model_device(model)
    decoder_input = teacher_forcing_input(targets)  # (N, T)
    generator = torch.Generator().manual_seed(CHECK_SEED + 1)
    base = _logits(task, model, sources.to(device), decoder_input.to(device))
    for position in (1, decoder_input.size(1) // 2, decoder_input.size(1) - 1):
        changed = decoder_input.clone()
        changed[:, position:] = torch.randint(BOS_ID, base.size(-1), changed[:, position:].shape, generator=generator)
        logits = _logits(task, model, sources.to(device), changed.to(device))
        moved = (logits[:, :position] - base[:, :position]).abs().amax(dim=(0, 2))  # (position,)
        if (moved > 1e-4 * (1 + base.abs().max())).any():
            task.fail(READS_FUTURE.format(position=int((moved > 1e-4 * (1 + base.abs().max())).nonzero()[0])))


def _accuracy(task, model, sources, targets):
    loss, accuracy = task.call(f"evaluating {NAME} (decoding_accuracy)", decoding_accuracy, model, sources, targets)
    if loss != loss:  # NaN
        task.fail(f"the loss of {NAME} on fresh sequences is NaN: its logits hold NaN or inf values.")
    return accuracy


def _reinitialised(model):
    """A copy of model with every weight drawn afresh, its embedding as init_embedding draws it."""
    return redrawn(model, CHECK_SEED + 2, then=init_embedding)


@check_function(7)
def check_task_7(task, model):
    """Check the trained model: causal, its accuracy its weights', its class passing Task 5, >= 99% exact match on
    fresh sequences."""
    expect_trained_model(task, model, "Seq2SeqTransformer")
    generator = torch.Generator().manual_seed(CHECK_SEED)
    sources = random_sources(CHECK_SIZE, generator)  # (N, S)
    targets = reversal_targets(sources)  # (N, S + 1)
    caller_mode = model.training
    model.eval()
    try:
        _expect_layout(task, model, sources[:4], targets[:4])
        _expect_causal(task, model, sources[:16], targets[:16])
        fresh = task.call(f"re-initialising a copy of {NAME}", _reinitialised, model)
        chance = _accuracy(task, fresh, sources[:RESET_SIZE], targets[:RESET_SIZE])
        if chance >= RESET_CEILING:
            task.fail(NOT_FROM_WEIGHTS.format(accuracy=chance, size=RESET_SIZE))
        expect_class_passes(task, 5, check_task_5, type(model))
        accuracy = _accuracy(task, model, sources, targets)
        if accuracy < TARGET_ACCURACY:
            task.fail(f"greedy decoding would reverse {accuracy:.1%} of {CHECK_SIZE} fresh sequences exactly; it "
                      f"needs at least {TARGET_ACCURACY:.0%}. Train longer, or check Tasks 1-5 if it never improves.")
    finally:
        model.train(caller_mode)
    task.passed(f"greedy decoding reverses {accuracy:.1%} of {CHECK_SIZE} fresh sequences exactly "
                f"(and {chance:.0%} once its weights are re-initialised).")
