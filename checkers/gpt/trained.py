"""Task 7: the trained GPT, judged on addition problems the checker draws itself.

No generator is run here (one is Task 8's answer, and checkers ship to students): for a model that cannot see the
future, greedy decoding writes an answer exactly if and only if every answer position's most likely token, given the
true prefix, is the true token, so one teacher-forced pass (course_lib.gpt.answer_accuracy) gives greedy
decoding's exact verdict. The check therefore first makes sure that the model cannot see the future and that the
accuracy comes from the trained weights, then that the model's class passes check_task_5: the grade loads the weights
into the reference GPT and pays Task 7 only when Task 5 earns its points (course.toml's `needs`), so a model whose
blocks compute something else (post-norm, say) was trained for another function than the one graded.
"""

import torch

from course_lib.gpt import SEQ_LEN, VOCAB_SIZE, addition_sequences, answer_accuracy

from .._core import Diagnosis, check_function
from .._trained import expect_class_passes, expect_trained_model, model_device, redrawn
from .._compare import expect_finite, expect_tensor
from ._roles import MissingPart, tied_gpt_slots
from .model import check_task_5

CHECK_SEED = 5151  # never a seed of the notebook's data (1 and 2)
CHECK_SIZE = 2000
TARGET_ACCURACY = 0.95  # grading imports it: one bar for the check and the grade
RESET_SIZE = 500
RESET_CEILING = 0.05  # re-drawn weights answer about 1 problem in 10,000; a lookup keeps its answers
NAME = "model"

READS_FUTURE = Diagnosis(
    "reads-future",
    "the logits at position {position} change when only later tokens change, so the model reads the "
    "future and its teacher-forced accuracy says nothing about generation: mask every key after the "
    "query in CausalSelfAttention (check Task 2).")
NOT_FROM_WEIGHTS = Diagnosis(
    "not-from-weights",
    "with every weight re-drawn the model still answers {accuracy:.0%} of {size} fresh problems "
    "exactly, so its answers do not come from what it learned: forward must compute the logits "
    "from the tokens with the model's layers.")


def _logits(task, model, tokens):
    """model(tokens)[0] without gradients, checked to be finite (N, L, VOCAB_SIZE) logits, on the CPU."""
    with torch.no_grad():
        result = task.call(f"{NAME}(tokens)", model, tokens.to(model_device(model)))
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        task.fail(f"{NAME}(tokens) should return (logits, new_cache) as in Task 5, got {type(result).__name__}.")
    logits = expect_tensor(task, f"{NAME}(tokens) logits", result[0])
    if tuple(logits.shape) != (*tokens.shape, VOCAB_SIZE):
        task.fail(f"{NAME}(tokens) logits have shape {tuple(logits.shape)}, expected (batch_size, seq_len, "
                  f"vocab_size) = {(*tokens.shape, VOCAB_SIZE)}.")
    expect_finite(task, f"{NAME}(tokens) logits", logits)
    return logits.float().cpu()


def _expect_layout(task, model, tokens):
    """The model runs (NotImplementedError: not implemented yet), has the pinned GPT layout and no other weights."""
    _logits(task, model, tokens)
    try:
        slots = tied_gpt_slots(model)
    except MissingPart as missing:
        task.fail(f"the model should be the GPT of Task 5: {missing}.", missing.diagnosis)
    pinned = {id(value) for value in slots.values()}
    other = next((name for name, value in model.named_parameters() if id(value) not in pinned), None)
    if other is not None:
        task.fail(f"the model holds a weight outside the pinned GPT layout, `{other}`: the grade loads only the "
                  "pinned weights into the course's GPT, so the model must learn with those alone.")


def _expect_causal(task, model, tokens):
    """Fail unless changing the tokens from some position on leaves every earlier position's logits alone."""
    generator = torch.Generator().manual_seed(CHECK_SEED + 1)
    base = _logits(task, model, tokens)  # (N, L, V)
    for position in (1, tokens.size(1) // 2, tokens.size(1) - 1):
        changed = tokens.clone()
        changed[:, position:] = torch.randint(VOCAB_SIZE, changed[:, position:].shape, generator=generator)
        moved = (_logits(task, model, changed)[:, :position] - base[:, :position]).abs().amax(dim=(0, 2))  # (p,)
        far = moved > 1e-4 * (1 + base.abs().max())
        if far.any():
            task.fail(READS_FUTURE.format(position=int(far.nonzero()[0])))


def _accuracy(task, model, sequences):
    loss, accuracy = task.call(f"evaluating {NAME} (answer_accuracy)", answer_accuracy, model, sequences)
    if loss != loss:  # NaN
        task.fail(f"the answer loss of {NAME} on fresh problems is NaN: its logits hold NaN or inf values.")
    return accuracy


@check_function(7)
def check_task_7(task, model):
    """Check the trained GPT: pinned layout, causal, answers from its weights, its class passing Task 5, >= 95% exact
    answers on fresh problems."""
    expect_trained_model(task, model, "GPT")
    sequences = addition_sequences(CHECK_SIZE, torch.Generator().manual_seed(CHECK_SEED))  # (N, SEQ_LEN)
    caller_mode = model.training
    model.eval()
    try:
        _expect_layout(task, model, sequences[:4, :SEQ_LEN - 1])
        _expect_causal(task, model, sequences[:16, :SEQ_LEN - 1])
        fresh = task.call(f"re-drawing the weights of a copy of {NAME}", redrawn, model, CHECK_SEED + 2)
        chance = _accuracy(task, fresh, sequences[:RESET_SIZE])
        if chance >= RESET_CEILING:
            task.fail(NOT_FROM_WEIGHTS.format(accuracy=chance, size=RESET_SIZE))
        expect_class_passes(task, 5, check_task_5, type(model))
        accuracy = _accuracy(task, model, sequences)
        if accuracy < TARGET_ACCURACY:
            task.fail(f"training has not reached the target: the model answers {accuracy:.1%} of {CHECK_SIZE} fresh "
                      f"problems exactly and needs at least {TARGET_ACCURACY:.0%}. Train longer, or check Tasks 1-5 "
                      "if it never improves.")
    finally:
        model.train(caller_mode)
    task.passed(f"the model answers {accuracy:.1%} of {CHECK_SIZE} fresh problems exactly, as greedy decoding would "
                f"(and {chance:.1%} once its weights are re-drawn).")
