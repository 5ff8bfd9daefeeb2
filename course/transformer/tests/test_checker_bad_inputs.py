"""Bad input never crashes a checker: it fails with a one-line CheckFailure that starts with 'Task N'.

Broken student objects are made from the reference classes (the `reference` fixture) by replacing one
method, so every other part of them is right and the check reaches the broken part.
"""
import numpy as np
import pytest
import torch
import torch.nn as nn

import checkers.transformer as checkers
from checkers.transformer import CheckFailure, NotImplementedYet

pytestmark = pytest.mark.fast

CLASS_TASKS = {2: ("MultiheadAttention",), 3: ("EncoderBlock",), 4: ("PositionalEncoding",),
               5: ("TransformerForSequenceClassification",),
               7: ("LinformerAttention", "LinformerBlock", "LinformerForSequenceClassification")}
# Constructor arguments for an object of each class (the "instance instead of the class" mistake).
EXAMPLE_ARGS = {"MultiheadAttention": (8, 2), "EncoderBlock": (8, 2, 16), "PositionalEncoding": (6, 50),
                "TransformerForSequenceClassification": (5, 8, 3, 2, 16, 2), "LinformerAttention": (8, 2, 6, 3),
                "LinformerBlock": (8, 2, 16, 6, 3), "LinformerForSequenceClassification": (5, 8, 3, 2, 16, 2, 7, 3)}


def expect_clean_failure(task, *objects, words=None, not_implemented=False):
    """check_task_N(*objects) must raise a one-line CheckFailure naming Task N (and no other exception)."""
    with pytest.raises(CheckFailure) as failure:
        getattr(checkers, f"check_task_{task}")(*objects)
    message = str(failure.value)
    assert message.startswith(f"Task {task} is not implemented yet" if not_implemented else f"Task {task}"), message
    assert "\n" not in message and "Traceback" not in message and len(message) < 500, message
    assert "the check itself could not run" not in message, message  # handled by a check, not the safety net
    assert isinstance(failure.value, NotImplementedYet) == not_implemented, message
    if words:
        assert words in message, message
    return message


# ----- Broken versions of a reference class -------------------------------------------------------

def _nan(result):
    if isinstance(result, (tuple, list)):
        return type(result)(_nan(item) for item in result)
    return torch.full_like(result, float("nan")) if isinstance(result, torch.Tensor) else result


def _replace(base, **methods):
    return type(f"Broken{base.__name__}", (base,), methods)


def _raise_value_error(self, *args, **kwargs):
    raise ValueError("embed_dim must be even\n    (a second line that must not reach the message)")


def _not_implemented(self, *args, **kwargs):
    raise NotImplementedError()


BROKEN_CLASSES = {
    "None": (lambda base: None, "None"),
    "int": (lambda base: 42, "int 42"),
    "string": (lambda base: base.__name__, "str"),
    "function returning None": (lambda base: (lambda *args, **kwargs: None), "function"),
    "class not an nn.Module": (lambda base: type(base.__name__, (), {}), "not an nn.Module"),
    "instance instead of the class": (lambda base: base(*EXAMPLE_ARGS[base.__name__]), "an object of class"),
    "__init__ raises ValueError": (lambda base: _replace(base, __init__=_raise_value_error), "raised ValueError"),
    "forward returns None": (lambda base: _replace(base, forward=lambda self, *a, **k: None), "None"),
    "forward returns NaN": (
        lambda base: _replace(base, forward=lambda self, *a, **k: _nan(base.forward(self, *a, **k))), "NaN"),
    "forward raises NotImplementedError": (lambda base: _replace(base, forward=_not_implemented), None),
    "__init__ creates no layers": (lambda base: _replace(base, __init__=lambda self, *a, **k: nn.Module.__init__(self),
                                                         forward=_not_implemented), None),  # the notebook's stub
}
NOT_IMPLEMENTED = {"forward raises NotImplementedError", "__init__ creates no layers"}


@pytest.mark.parametrize("kind", BROKEN_CLASSES)
@pytest.mark.parametrize("task, position", [(task, position) for task, names in CLASS_TASKS.items()
                                            for position in range(len(names))])
def test_broken_class(task, position, kind, reference):
    """Each broken variant of each student class, the other classes of the task (Task 7) being right."""
    objects = [reference[name] for name in CLASS_TASKS[task]]
    make, words = BROKEN_CLASSES[kind]
    objects[position] = make(objects[position])
    expect_clean_failure(task, *objects, words=words, not_implemented=kind in NOT_IMPLEMENTED)


# ----- Task 1: broken functions -------------------------------------------------------------------

def _numpy_attention(query, key, value, mask=None):
    scores = query.numpy() @ np.swapaxes(key.numpy(), -1, -2) / np.sqrt(query.shape[-1])
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return weights @ value.numpy(), weights


BROKEN_FUNCTIONS = {
    "None": (None, "None"),
    "int": (42, "int 42"),
    "string": ("scaled_softmax_attention", "str"),
    "a class": (nn.Linear, "the class Linear"),
    "returns None": (lambda q, k, v, mask=None: None, "return"),
    "returns one tensor": (lambda q, k, v, mask=None: torch.softmax(q @ k.mT, -1) @ v, "single tensor"),
    "returns three items": (lambda q, k, v, mask=None: (q, k, v), "tuple"),
    "returns numpy arrays": (_numpy_attention, "NumPy"),
    "returns NaN": (lambda q, k, v, mask=None: (q[..., :1] * v.sum() * float("nan"), q @ k.mT * float("nan")), None),
    "raises ValueError": (_raise_value_error.__get__(object()), "raised ValueError"),
    "takes no mask": (lambda q, k, v: (torch.softmax(q @ k.mT / q.size(-1) ** 0.5, -1) @ v,
                                       torch.softmax(q @ k.mT / q.size(-1) ** 0.5, -1)), "TypeError"),
}


@pytest.mark.parametrize("kind", BROKEN_FUNCTIONS)
def test_task_1_broken_function(kind):
    function, words = BROKEN_FUNCTIONS[kind]
    expect_clean_failure(1, function, words=words)


def test_task_1_not_implemented():
    expect_clean_failure(1, _not_implemented.__get__(object()), not_implemented=True)


def test_task_1_nan_output_is_reported_as_nan():
    def nan_attention(query, key, value, mask=None):
        attention = torch.full(query.shape[:-1] + key.shape[-2:-1], float("nan"), dtype=query.dtype)
        return attention @ value, attention

    assert "NaN" in expect_clean_failure(1, nan_attention)


# ----- Tasks 6 and 8: not a trained model ---------------------------------------------------------

class Returning(nn.Module):
    """A module whose forward returns make(x)."""

    def __init__(self, make):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))
        self.make = make

    def forward(self, x):
        return self.make(x)


def _raise(error):
    def fail(x):
        raise error

    return fail


BAD_MODELS = {
    "None": (None, "None"),
    "int": (42, "nn.Module"),
    "string": ("model", "nn.Module"),
    "a function": (lambda x: x, "nn.Module"),
    "the class instead of the model": (nn.Linear, "the class Linear"),
    "constant prediction": (Returning(lambda x: torch.ones(len(x), 1)), "same class"),
    "returns None": (Returning(lambda x: None), "None"),
    "returns a tuple": (Returning(lambda x: (x.sum((1, 2))[:, None], None)), "tuple"),
    "returns numpy": (Returning(lambda x: x.sum((1, 2))[:, None].numpy()), "NumPy"),
    "returns NaN": (Returning(lambda x: torch.full((len(x), 2), float("nan"))), "NaN"),
    "returns one value per token": (nn.Identity(), "logits of shape"),
    "returns a 1-D tensor": (Returning(lambda x: x.sum((1, 2))), "logits of shape"),
    "returns no classes": (Returning(lambda x: x[:, 0, :0]), "logits of shape"),
    "raises ValueError": (Returning(_raise(ValueError("bad\nsecond line"))), "raised ValueError"),
    "raises NotImplementedError": (Returning(_raise(NotImplementedError())), None),
}


@pytest.mark.parametrize("kind", BAD_MODELS)
@pytest.mark.parametrize("task", [6, 8])
def test_not_a_trained_model(task, kind):
    model, words = BAD_MODELS[kind]
    expect_clean_failure(task, model, words=words, not_implemented=kind == "raises NotImplementedError")


@pytest.mark.parametrize("in_features", [1, 3, 10_000])
def test_task_8_linformer_built_for_an_unusable_length(in_features):
    """e_proj fixes the length the check draws data for: too short would never finish, too long would not fit."""
    model = Returning(lambda x: x.sum((1, 2))[:, None])
    model.e_proj = nn.Linear(in_features, 4)
    expect_clean_failure(8, model, words="can only draw lengths")


def test_task_6_seq_len_not_a_number():
    expect_clean_failure(6, Returning(lambda x: x.sum((1, 2))[:, None]), "32", words="can only draw lengths")


# ----- Odd outputs in only some calls: never a crash, never the checker's safety net --------------

def _on_outputs(result, change):
    """Apply change to the outputs tensor of a forward result, (outputs, attention) or outputs alone."""
    return (change(result[0]),) + tuple(result[1:]) if isinstance(result, tuple) else change(result)


ODD_FORWARDS = {
    "always a tuple": lambda x, result: result if isinstance(result, tuple) else (result, result),
    "None for a batch of one": lambda x, result: None if x.size(0) == 1 else result,
    "None when the input requires grad": lambda x, result: None if x.requires_grad else result,
    "an extra axis for a batch of one":
        lambda x, result: _on_outputs(result, lambda t: t[None] if x.size(0) == 1 else t),
    "a list": lambda x, result: list(result) if isinstance(result, tuple) else [result],
    "NumPy in float32": lambda x, result: _on_outputs(
        result, lambda t: t.detach().numpy() if t.dtype == torch.float32 else t),
    "float32 for float64 input": lambda x, result: _on_outputs(result, lambda t: t.float()),
    "last feature dropped": lambda x, result: _on_outputs(result, lambda t: t[..., :-1]),
    # wrong values of the right shape: the property probes run, and must end in a clean failure too
    "outputs scaled by 1.01": lambda x, result: _on_outputs(result, lambda t: t * 1.01),
    "batch order reversed": lambda x, result: _on_outputs(result, lambda t: t.flip(0)),
    "sequence order reversed": lambda x, result: _on_outputs(result, lambda t: t.flip(1) if t.dim() > 2 else t),
    "a constant added": lambda x, result: _on_outputs(result, lambda t: t + 0.1),
}


@pytest.mark.parametrize("odd", ODD_FORWARDS)
@pytest.mark.parametrize("task, position", [(task, position) for task, names in CLASS_TASKS.items()
                                            for position in range(len(names))])
def test_odd_forward_never_crashes_the_check(task, position, odd, reference, capsys):
    objects = [reference[name] for name in CLASS_TASKS[task]]
    base, change = objects[position], ODD_FORWARDS[odd]
    objects[position] = _replace(base, forward=lambda self, x, *a, **k: change(x, base.forward(self, x, *a, **k)))
    try:
        getattr(checkers, f"check_task_{task}")(*objects)
    except CheckFailure as failure:
        message = str(failure)
        assert message.startswith(f"Task {task}") and "\n" not in message, message
        assert "the check itself could not run" not in message, message
    else:  # the odd behaviour is never exercised by this check (e.g. no batch of one in Task 3)
        assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")
