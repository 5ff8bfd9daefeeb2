"""Each checker accepts the reference and rejects every planted mistake with a message naming its task."""
import pytest
import torch
import torch.nn as nn

import checkers.transformer as checkers
from checkers.transformer import CheckFailure
from course.transformer.mistakes import MUTANTS
from .palindrome_models import MirrorModel
from .student_objects import STUDENT_OBJECTS, run_check

pytestmark = pytest.mark.fast



@pytest.mark.parametrize("task", sorted(STUDENT_OBJECTS))
def test_reference_passes(task, reference, capsys):
    run_check(task, reference)
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: f"task{m.task}-{m.name}")
def test_planted_mistake_fails(mutant, load_variant):
    namespace = load_variant(mutant.apply)
    with pytest.raises(CheckFailure) as failure:
        run_check(mutant.task, namespace)
    assert str(failure.value).startswith(f"Task {mutant.task}")


def test_every_task_has_five_planted_mistakes():
    for task in STUDENT_OBJECTS:
        assert sum(m.task == task for m in MUTANTS) >= 5, task


class Constant(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(2))

    def forward(self, x):
        return self.bias.expand(len(x), 2)


@pytest.fixture
def any_class(monkeypatch):
    """The trained checks with their class check (check_task_5 / check_task_7 on the model's classes) passing, so
    their accuracy logic can be tried on a hand-built model."""
    import checkers.transformer.trained as trained
    monkeypatch.setattr(trained, "expect_model_class", lambda *args: None)


@pytest.mark.parametrize("task", [6, 8])
def test_trained_checks_accept_an_accurate_model(task, capsys, any_class):
    check = getattr(checkers, f"check_task_{task}")
    check(MirrorModel() if task == 6 else MirrorModel(seq_len=20))
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


@pytest.mark.parametrize("task, needed", [(6, "check_task_5: fix Task 5 first"),
                                          (8, "holds no LinformerAttention: build the Linformer classifier")])
def test_an_accurate_model_of_another_class_fails(task, needed):
    """The grade loads the weights into the reference classes and needs Task 5 (7) to pass: a hand-built palindrome
    detector, however accurate, is not a trained classifier of those classes."""
    with pytest.raises(CheckFailure, match=f"^Task {task}") as failure:
        getattr(checkers, f"check_task_{task}")(MirrorModel() if task == 6 else MirrorModel(seq_len=20))
    assert needed in str(failure.value), str(failure.value)


@pytest.mark.parametrize("task", [6, 8])
@pytest.mark.parametrize("model, words", [
    (MirrorModel(flip_every=10), "90.0%"),  # one in ten answers flipped: just below the bar
    (Constant(), "same class"),
    (nn.Linear(33, 1), "logits of shape"),
    (None, "None"),
    ("model", "nn.Module"),
])
def test_trained_checks_reject(task, model, words, any_class):
    check = getattr(checkers, f"check_task_{task}")
    with pytest.raises(CheckFailure, match=f"^Task {task}") as failure:
        check(model)
    assert words in str(failure.value)
