"""Tasks 6 and 8: the trained classifiers, evaluated on palindromes the checker draws itself.

Before the accuracy, each check runs the check of the task whose classes the model is made of (Task 5's, Task 7's)
on the model's own classes: the grade pays a trained task only when that task earns its points (course.toml's
`needs`), so a model whose class computes something else was trained for another function than the one graded.
"""
import inspect

import torch
import torch.nn as nn

from course_lib.transformer import PalindromeDataset
from course_lib.transformer import SEQ_LEN as DEFAULT_SEQ_LEN
from course_lib.metrics import predictions

from .._compare import expect_finite, expect_tensor
from .._core import check_function
from .._trained import expect_class_passes
from .classifier import check_task_5
from .linformer import check_task_7

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


def _expect_a_model(task, model, name):
    if model is None:
        task.fail(f"got None instead of the trained {name}: build and train it in the cells above.")
    if inspect.isclass(model):
        task.fail(f"got the class {model.__name__}, not a trained model: pass the model object you trained.")
    if not isinstance(model, nn.Module):
        task.fail(f"expected the trained {name} (an nn.Module), got {type(model).__name__}.")


def _linformer_classes(task, model):
    """(LinformerAttention, LinformerBlock, the model's class): the classes Task 7's check takes, found in the model by
    the names the notebook gives them."""
    found = {type(module).__name__: type(module) for module in model.modules()}
    missing = [name for name in ("LinformerAttention", "LinformerBlock") if name not in found]
    if missing:
        task.fail(f"the model holds no {missing[0]}: build the Linformer classifier from Task 7's classes, then "
                  "train it.")
    return found["LinformerAttention"], found["LinformerBlock"], type(model)


# The model each trained task's cell trains, as the notebook names it, and the task whose classes it is built from.
TRAINED_MODEL = {6: ("model", "Task 5"), 8: ("linformer_model", "Task 7")}


def _expect_trained(task, model, name):
    """Fail when every trainable LayerNorm of the model still holds its initial weight 1 and bias 0: no optimizer
    step has changed the model (a step moves them as it moves every weight that gets a gradient), so it was never
    trained."""
    norms = [module for module in model.modules() if isinstance(module, nn.LayerNorm)
             and isinstance(module.weight, nn.Parameter) and isinstance(module.bias, nn.Parameter)
             and module.weight.requires_grad and module.bias.requires_grad]
    with torch.no_grad():
        initial = bool(norms) and all(bool((norm.weight == 1).all()) and bool((norm.bias == 0).all())
                                      for norm in norms)
    if initial:
        variable, source = TRAINED_MODEL[task.number]
        task.fail(f"the {name} was never trained: all {len(norms)} of its LayerNorms still hold their initial weight "
                  f"1 and bias 0, so no optimizer step has changed its weights; train `{variable}`, the model built "
                  f"from {source}'s classes, in the training cell above, then check it again.")


def expect_model_class(task, model):
    """The model's classes pass the check of the task they come from: Task 5's for Task 6, Task 7's for Task 8."""
    if task.number == 6:
        expect_class_passes(task, 5, check_task_5, type(model))
    else:
        expect_class_passes(task, 7, check_task_7, *_linformer_classes(task, model))


def expect_accuracy(task, model, seq_len, name):
    """Fail unless model classifies fresh palindromes of length seq_len with accuracy >= 95%; once the model has
    answered (one class for everything: untrained, or on the plateau), its classes must pass the task they come from
    (expect_model_class), then it must have been trained, before its accuracy is judged."""
    _expect_a_model(task, model, name)
    if not isinstance(seq_len, int) or not MIN_SEQ_LEN <= seq_len <= MAX_SEQ_LEN:
        task.fail(f"the {name} would be evaluated on sequences of length {seq_len!r}, but the check can only draw "
                  f"lengths {MIN_SEQ_LEN} to {MAX_SEQ_LEN}: build and train it for SEQ_LEN = {DEFAULT_SEQ_LEN} "
                  "(a Linformer with sequence_length = SEQ_LEN + 1).")
    data = PalindromeDataset(CHECK_SIZE, seq_len, seed=CHECK_SEED)
    inputs = torch.nn.functional.one_hot(data.tokens, data.vocab_size).float()  # (N, L, vocab_size)
    predicted = _predict(task, model, inputs, name)
    if predicted.unique().numel() == 1:
        _expect_trained(task, model, name)  # one class for everything: first, was it trained at all?
        tasks = "tasks 1-5" if task.number == 6 else "Task 7"
        task.fail(f"the {name} predicts the same class for all {CHECK_SIZE} sequences: it has not learned yet "
                  f"(still on the ln 2 plateau). Train it (longer), or check {tasks}.")
    expect_model_class(task, model)  # a class that computes something else is sent back to its task
    _expect_trained(task, model, name)  # then a model no step changed, whatever it predicts
    accuracy = (predicted == data.labels.long()).float().mean().item()
    if accuracy < TARGET_ACCURACY:
        task.fail(f"the {name} is right on {accuracy:.1%} of {CHECK_SIZE} fresh sequences of length {seq_len}; "
                  f"it needs at least {TARGET_ACCURACY:.0%}. Train longer or adjust the learning rate.")
    return accuracy


@check_function(6)
def check_task_6(task, model, seq_len=DEFAULT_SEQ_LEN):
    """Check that the trained Transformer classifier's class passes Task 5 and that it reaches 95% on fresh
    palindromes."""
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
    """Check that the trained Linformer classifier's classes pass Task 7 and that it reaches 95% on fresh
    palindromes."""
    seq_len = _linformer_seq_len(model)
    accuracy = expect_accuracy(task, model, seq_len, "Linformer classifier")
    task.passed(f"accuracy {accuracy:.1%} on {CHECK_SIZE} fresh sequences of length {seq_len}.")
