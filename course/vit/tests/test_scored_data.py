"""Task 4's scored data as the grading sandbox sees it (course/vit/cases/scored_data.py): the stand-in digits file
keeps every training and validation row and replaces every test row by a marked copy of a training digit, which is no
digit of the dataset; the probe's rows are the file's test rows."""
import gzip

import pytest
import torch

from course.vit.cases.scored_data import LEVELS, stand_in_digits, stand_in_file, stand_in_rows, stand_ins
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
    assert torch.equal(shown_labels[test], stand_in_digits()[1])


def test_each_stand_in_is_a_training_digit_with_one_pixel_one_level_off():
    """Copies of distinct training digits, with their labels: each differs from its source in one pixel, by 1/16."""
    images, labels = load_digits()
    train, _, _ = split_indices(len(labels))
    stand_ins, stand_in_labels = stand_in_digits()
    distance = (stand_ins.reshape(-1, 1, 64) - images[train].reshape(1, -1, 64)).abs() * LEVELS  # (360, 1257, 64)
    off = (distance > 0.5).sum(-1)  # (360, 1257): pixels that differ
    source = off.argmin(dim=1)  # (360,)
    assert (off.min(dim=1).values == 1).all() and len(set(source.tolist())) == 360
    assert torch.equal(labels[train][source], stand_in_labels)
    assert torch.allclose(distance.amax(-1)[torch.arange(360), source], torch.ones(360))


def test_the_stand_ins_are_drawn_again_the_same(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first = rows_of(stand_in_file(tmp_path / "a"))[0]
    stand_in_digits.cache_clear()
    assert torch.equal(first, rows_of(stand_in_file(tmp_path / "b"))[0])
