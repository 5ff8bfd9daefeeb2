"""course_lib.vit: the images, the course's split, one-pixel shifts, accuracy and the confusion matrix."""
import pytest
import torch
import torch.nn as nn

from course_lib.vit import (ONE_PIXEL_SHIFTS, classification_accuracy, confusion_matrix, digit_splits,
                            load_digits, shift_images, shifted_copies)

pytestmark = pytest.mark.fast


def test_images_are_scaled_to_unit_range_with_ten_labels():
    images, labels = load_digits()
    assert images.shape == (1797, 1, 8, 8) and images.dtype == torch.float32
    assert images.min() == 0 and images.max() == 1  # the dataset's ink 0..16, divided by 16
    assert torch.equal(labels.unique(), torch.arange(10))


def test_split_is_fixed_disjoint_and_covers_every_image():
    first, second = digit_splits(), digit_splits()
    assert [len(first[name][1]) for name in ("train", "val", "test")] == [1257, 180, 360]
    for name in first:
        assert torch.equal(first[name][0], second[name][0])
    images, _ = load_digits()
    together = torch.cat([first[name][0] for name in ("train", "val", "test")]).flatten(1)  # (1797, 64)
    rows = {tuple(row.tolist()) for row in together}
    assert len(rows) == len({tuple(row.tolist()) for row in images.flatten(1)})  # nothing lost or doubled


def test_shift_images_against_roll_with_the_wrapped_edge_cleared():
    images = torch.rand(3, 2, 8, 8)
    for rows, cols in ONE_PIXEL_SHIFTS + ((2, -3), (0, 0)):
        expected = torch.roll(images, shifts=(rows, cols), dims=(-2, -1)).clone()
        if rows > 0:
            expected[..., :rows, :] = 0
        if rows < 0:
            expected[..., rows:, :] = 0
        if cols > 0:
            expected[..., :, :cols] = 0
        if cols < 0:
            expected[..., :, cols:] = 0
        assert torch.equal(shift_images(images, rows, cols), expected), (rows, cols)


def test_shifted_copies_repeat_the_labels_per_shift():
    images, labels = torch.rand(5, 1, 8, 8), torch.arange(5)
    moved, moved_labels = shifted_copies(images, labels)
    assert moved.shape == (20, 1, 8, 8) and torch.equal(moved_labels, labels.repeat(4))
    assert torch.equal(moved[5:10], shift_images(images, *ONE_PIXEL_SHIFTS[1]))


def test_confusion_matrix_counts_pairs():
    predicted, labels = torch.tensor([0, 1, 1, 2, 2, 2]), torch.tensor([0, 1, 2, 2, 2, 0])
    counts = confusion_matrix(predicted, labels, num_classes=3)
    expected = torch.zeros(3, 3, dtype=torch.long)
    for p, t in zip(predicted.tolist(), labels.tolist()):
        expected[t, p] += 1
    assert torch.equal(counts, expected)


def test_classification_accuracy_batches_and_restores_the_mode():
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    images, labels = torch.rand(1100, 1, 8, 8), torch.randint(10, (1100,))
    expected = (model(images).argmax(-1) == labels).sum().item() / len(labels)  # exact counts, no float32 mean
    model.train()
    assert abs(classification_accuracy(model, images, labels, batch_size=512) - expected) < 1e-12
    assert model.training


def test_grid_distances_and_position_similarity_skip_cls():
    from course_lib.vit import grid_distances, position_similarity

    side = 3
    expected = torch.tensor([[abs(a // side - b // side) + abs(a % side - b % side) for b in range(9)]
                             for a in range(9)])
    assert torch.equal(grid_distances(side), expected)
    table = torch.randn(1, 10, 5)
    table[0, 0] = 100.0  # [CLS]'s row must not enter
    similarity = position_similarity(table)
    assert similarity.shape == (9, 9)
    assert torch.allclose(similarity[2, 7], torch.nn.functional.cosine_similarity(table[0, 3], table[0, 8], dim=0))
