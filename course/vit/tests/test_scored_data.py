"""Task 4's scored data as the grading sandbox sees it (course/vit/cases/scored_data.py): the stand-in digits file
keeps every training and validation row and replaces every test row; no stand-in is a digit of the course's split;
the probe's rows are the file's test rows."""
import gzip

import pytest
import torch

from course.vit.cases.scored_data import LEVELS, stand_in_file, stand_in_rows, stand_in_sets, stand_ins
from course_lib.vit import TEST_SIZE, load_digits, split_indices

pytestmark = pytest.mark.fast


def rows_of(path):
    """(images (N, 64) in 0..16, labels (N,)) of a digits.csv.gz."""
    with gzip.open(path, "rt") as file:
        table = torch.tensor([[int(value) for value in line.split(",")] for line in file.read().splitlines()])
    return table[:, :-1], table[:, -1]


@pytest.fixture(scope="module")
def covered(tmp_path_factory):
    """(the installed file's rows, the stand-in file's rows, the split's (train, val, test) indices)."""
    (installed, stand_in), = stand_ins(tmp_path_factory.mktemp("stand-ins"))
    return rows_of(installed), rows_of(stand_in), split_indices(len(load_digits()[1]))


def test_training_and_validation_rows_are_the_originals_and_test_rows_are_not(covered):
    (real, real_labels), (shown, shown_labels), (train, val, test) = covered
    kept = torch.cat([train, val])
    assert torch.equal(shown[kept], real[kept]) and torch.equal(shown_labels[kept], real_labels[kept])
    assert not (shown[test][:, None] == real[None]).all(-1).any()  # no test row is any digit of the dataset
    assert torch.equal(shown[test].float() / LEVELS, stand_in_rows()["rows"].reshape(TEST_SIZE, -1))
    assert torch.equal(shown_labels[test], stand_in_sets()["shown"][1])


def test_the_twins_are_no_digit_of_the_dataset_nor_each_other():
    images = (load_digits()[0].reshape(-1, 64) * LEVELS).round()
    sets = {name: (part.reshape(TEST_SIZE, -1) * LEVELS).round() for name, (part, _) in stand_in_sets().items()}
    for name, part in sets.items():
        assert not (part[:, None] == images[None]).all(-1).any(), name
    assert not (sets["shown"][:, None] == sets["unseen"][None]).all(-1).any()


def test_the_stand_ins_are_drawn_alike_and_look_like_digits():
    """Both sets have every class and the dataset's ink: the same bends of the same split's digits."""
    sets = stand_in_sets()
    for images, labels in sets.values():
        assert set(labels.tolist()) == set(range(10)) and images.min() >= 0 and images.max() <= 1
        assert abs(images.mean() - load_digits()[0].mean()) < 0.05


def test_the_stand_ins_are_drawn_again_the_same(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first = rows_of(stand_in_file(tmp_path / "a"))[0]
    stand_in_sets.cache_clear()
    assert torch.equal(first, rows_of(stand_in_file(tmp_path / "b"))[0])
