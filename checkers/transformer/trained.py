"""Tasks 6 and 8: the trained classifiers, evaluated on palindromes the checker draws itself."""
import inspect

import torch
import torch.nn as nn

from course_lib.data import PalindromeDataset
from course_lib.defaults import SEQ_LEN as DEFAULT_SEQ_LEN
from course_lib.metrics import predictions

from .._compare import expect_finite, expect_tensor
from .._core import check_function

CHECK_SEED = 31337  # never the seed of the notebook's training or validation data
CHECK_SIZE = 2000
TARGET_ACCURACY = 0.95
# Lengths the check can draw data for: shorter ones have palindromes (e.g. "aaa") that no shuffle turns into
# a non-palindrome, so drawing the negatives would never end; longer ones would take minutes and gigabytes.
MIN_SEQ_LEN, MAX_SEQ_LEN = 16, 512


def _model_device(model):
    parameter = next(model.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")


def _predict(task, model, inputs, name):
    was_training = model.training
    model.eval()
    outputs = []
    try:
        with torch.no_grad():
            for batch in inputs.split(500):
                logits = task.call(f"{name}(x)", model, batch.to(_model_device(model)))
                outputs.append(expect_tensor(task, f"{name}(x)", logits).float().cpu())
    finally:
        model.train(was_training)
    logits = task.call(f"joining the batches of {name}(x)", torch.cat, outputs)
    if logits.dim() != 2 or logits.size(0) != len(inputs) or logits.size(1) == 0:
        task.fail(f"{name}(x) should return logits of shape (batch_size, num_classes), got {tuple(outputs[0].shape)}.")
    expect_finite(task, f"{name}(x)", logits)
    return predictions(logits)


def expect_accuracy(task, model, seq_len, name):
    """Fail unless model classifies fresh palindromes of length seq_len with accuracy >= 95%."""
    if model is None:
        task.fail(f"got None instead of the trained {name}: build and train it in the cells above.")
    if inspect.isclass(model):
        task.fail(f"got the class {model.__name__}, not a trained model: pass the model object you trained.")
    if not isinstance(model, nn.Module):
        task.fail(f"expected the trained {name} (an nn.Module), got {type(model).__name__}.")
    if not isinstance(seq_len, int) or not MIN_SEQ_LEN <= seq_len <= MAX_SEQ_LEN:
        task.fail(f"the {name} would be evaluated on sequences of length {seq_len!r}, but the check can only draw "
                  f"lengths {MIN_SEQ_LEN} to {MAX_SEQ_LEN}: build and train it for SEQ_LEN = {DEFAULT_SEQ_LEN} "
                  "(a Linformer with sequence_length = SEQ_LEN + 1).")
    data = PalindromeDataset(CHECK_SIZE, seq_len, seed=CHECK_SEED)
    inputs = torch.nn.functional.one_hot(data.tokens, data.vocab_size).float()  # (N, L, vocab_size)
    predicted = _predict(task, model, inputs, name)
    if predicted.unique().numel() == 1:
        task.fail(f"the {name} predicts the same class for all {CHECK_SIZE} sequences: it has not learned yet "
                  "(still on the ln 2 plateau). Train it (longer), or check tasks 1-5.")
    accuracy = (predicted == data.labels.long()).float().mean().item()
    if accuracy < TARGET_ACCURACY:
        task.fail(f"the {name} is right on {accuracy:.1%} of {CHECK_SIZE} fresh sequences of length {seq_len}; "
                  f"it needs at least {TARGET_ACCURACY:.0%}. Train longer or adjust the learning rate.")
    return accuracy


@check_function(6)
def check_task_6(task, model, seq_len=DEFAULT_SEQ_LEN):
    """Check that the trained Transformer classifier reaches 95% on fresh palindromes."""
    accuracy = expect_accuracy(task, model, seq_len, "Transformer classifier")
    task.passed(f"accuracy {accuracy:.1%} on {CHECK_SIZE} fresh sequences of length {seq_len}.")


def _linformer_seq_len(model):
    """The length the Linformer was built for: E's input width minus the [CLS] token."""
    for module in model.modules() if isinstance(model, nn.Module) else ():
        projection = getattr(module, "e_proj", None)
        if isinstance(projection, nn.Linear):
            return projection.in_features - 1
    return DEFAULT_SEQ_LEN


@check_function(8)
def check_task_8(task, model):
    """Check that the trained Linformer classifier reaches 95% on fresh palindromes."""
    seq_len = _linformer_seq_len(model)
    accuracy = expect_accuracy(task, model, seq_len, "Linformer classifier")
    task.passed(f"accuracy {accuracy:.1%} on {CHECK_SIZE} fresh sequences of length {seq_len}.")
