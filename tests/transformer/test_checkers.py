"""Each checker accepts the reference and rejects every planted mistake with a message naming its task."""
import pytest
import torch
import torch.nn as nn

import checkers.transformer as checkers
from checkers.transformer import CheckFailure
from course.mistakes.transformer import MUTANTS
from palindrome_models import MirrorModel
from .student_objects import STUDENT_OBJECTS, run_check



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


@pytest.mark.parametrize("task", [6, 8])
def test_trained_checks_accept_an_accurate_model(task, capsys):
    check = getattr(checkers, f"check_task_{task}")
    check(MirrorModel() if task == 6 else MirrorModel(seq_len=20))
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


@pytest.mark.parametrize("task", [6, 8])
@pytest.mark.parametrize("model, words", [
    (MirrorModel(flip_every=10), "90.0%"),  # one in ten answers flipped: just below the bar
    (Constant(), "same class"),
    (nn.Linear(33, 1), "logits of shape"),
    (None, "None"),
    ("model", "nn.Module"),
])
def test_trained_checks_reject(task, model, words):
    check = getattr(checkers, f"check_task_{task}")
    with pytest.raises(CheckFailure, match=f"^Task {task}") as failure:
        check(model)
    assert words in str(failure.value)
