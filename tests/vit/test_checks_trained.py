"""check_task_4 (the trained ViT): a trained reference passes untouched; untrained, unimplemented and foreign models,
and each cheat measured by tools/measure_vit_memorisers.py that it can catch, fail at their step with their reason."""
import copy

import pytest
import torch

from checkers._trained import redrawn
from checkers.vit import CheckFailure, NotImplementedYet, check_task_4
from checkers.vit.trained import RESET_CEILING, SHIFT_FLOOR, TRAIN_FLOOR
from course_lib import vit_defaults
from course_lib.digits import classification_accuracy, digit_splits, shifted_copies

from .checks import timings
from .digit_models import (images_in_weights, label_reader, lookup_table, memorised_test_split, reference,
                           trained_reference)


def test_trained_reference_passes_and_is_left_as_it_was(capsys):
    model = trained_reference().train()
    before = {key: value.clone() for key, value in model.state_dict().items()}
    check_task_4(model)
    assert capsys.readouterr().out.startswith("✓ Task 4 passed")
    assert model.training
    assert all(torch.equal(before[key], value) for key, value in model.state_dict().items())
    model.eval()


def test_the_trained_reference_clears_every_bar_with_room():
    """The bars sit below what the reference reaches (the measured table is in checkers/vit/trained.py)."""
    splits, model = digit_splits(), trained_reference()
    assert classification_accuracy(model, *splits["train"]) >= TRAIN_FLOOR + 0.03
    assert classification_accuracy(model, *shifted_copies(*splits["test"])) >= SHIFT_FLOOR + 0.05


@pytest.mark.parametrize("make, words", [
    (lambda ns: ns["VisionTransformer"](**vit_defaults.MODEL), "training has not reached the target: the model "
                                                               "classifies"),
    (lookup_table, "a tensor outside the pinned VisionTransformer layout, `table`"),
    (label_reader, "with every weight re-drawn the model still classifies 100% of the test digits"),
    (lambda ns: memorised_test_split(), "of the test digits but only"),
    (images_in_weights, "of the test digits but only 66% of the training digits"),
    (lambda ns: images_in_weights(ns, ("train", "test")), "but only 15% once they move by one pixel"),
], ids=["untrained", "lookup table in buffers", "labels read from a global", "trained on the test split",
        "test digits in the weights", "train and test digits in the weights"])
def test_model_fails_at_its_step(make, words):
    with pytest.raises(CheckFailure, match="^Task 4: ") as failure:
        check_task_4(make(reference()))
    assert words in str(failure.value)


def test_trained_on_the_test_split_fails_on_the_training_digits():
    with pytest.raises(CheckFailure, match="of the training digits"):
        check_task_4(memorised_test_split())


def test_the_cheats_would_pass_on_test_accuracy_alone():
    """Without the later steps the cheats above would pass: they classify the test digits."""
    images, labels = digit_splits()["test"]
    for model in (lookup_table(reference()), label_reader(reference()), memorised_test_split(),
                  images_in_weights(reference()), images_in_weights(reference(), ("train", "test"))):
        assert classification_accuracy(model, images, labels) >= vit_defaults.TARGET_ACCURACY


def test_a_re_drawn_reference_falls_to_chance():
    images, labels = digit_splits()["test"]
    for seed in range(5):
        assert classification_accuracy(redrawn(trained_reference(), seed), images, labels) < RESET_CEILING


def test_untouched_notebook_model_is_not_implemented_yet():
    class VisionTransformer(torch.nn.Module):  # the student notebook's stub: no layers, forward raises
        def forward(self, images):
            raise NotImplementedError()

    with pytest.raises(NotImplementedYet, match="^Task 4 is not implemented yet"):
        check_task_4(VisionTransformer())


def nan_logits():
    model = copy.deepcopy(trained_reference())
    with torch.no_grad():
        model.head.bias[3] = float("nan")
    return model


@pytest.mark.parametrize("make, words", [
    (lambda: None, "got None"),
    (lambda: torch.nn.Module, "got the class"),
    (lambda: "model", "an nn.Module"),
    (lambda: torch.nn.Linear(3, 10), "raised RuntimeError"),
    (lambda: torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10)), "expected the trained "
                                                                               "VisionTransformer of Task 3, got a "
                                                                               "Sequential"),
    (nan_logits, "NaN"),
], ids=["None", "a class", "a string", "a layer that cannot take images", "another model", "NaN logits"])
def test_bad_input_fails_cleanly(make, words):
    with pytest.raises(CheckFailure, match="^Task 4: ") as failure:
        check_task_4(make())
    assert words in str(failure.value)


def test_a_model_without_the_pinned_parts_is_named():
    class VisionTransformer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.Linear(64, 10)

        def forward(self, images):
            return self.layers(images.flatten(1))

    with pytest.raises(CheckFailure, match="should be the VisionTransformer of Task 3: `patch_embedding`"):
        check_task_4(VisionTransformer())


def test_check_takes_under_a_second():
    model = trained_reference()
    assert max(timings(lambda: check_task_4(model))) <= 1.0
