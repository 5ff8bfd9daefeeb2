"""The transformer's data, PalindromeDataset: balanced, labelled by definition, reproducible, and its
negatives hard (near-palindromes)."""
import pytest
import torch

from course_lib.transformer import PalindromeDataset

pytestmark = pytest.mark.fast


def is_palindrome(row):
    return row.tolist() == row.flip(0).tolist()


@pytest.mark.parametrize("seq_len", [7, 16])
def test_palindrome_dataset_is_balanced_and_labelled_by_definition(seq_len):
    data = PalindromeDataset(400, seq_len, seed=3)
    assert data.labels.mean().item() == 0.5
    for row, label in zip(data.tokens, data.labels):
        assert is_palindrome(row) == bool(label)


def test_negatives_keep_the_token_counts_of_a_palindrome():
    data = PalindromeDataset(200, 12, seed=4)
    for row, label in zip(data.tokens, data.labels):
        counts = torch.bincount(row, minlength=data.vocab_size)
        # in a palindrome of even length every token occurs an even number of times
        assert (counts % 2 == 0).all() or label == 1


def test_one_hot_items_and_reproducibility():
    first, second = PalindromeDataset(50, 9, seed=5), PalindromeDataset(50, 9, seed=5)
    assert torch.equal(first.tokens, second.tokens)
    assert not torch.equal(first.tokens, PalindromeDataset(50, 9, seed=6).tokens)
    one_hot, label = first[0]
    assert one_hot.shape == (9, 33) and one_hot.dtype == torch.float32
    assert torch.equal(one_hot.argmax(-1), first.tokens[0]) and one_hot.sum().item() == 9
    assert label.item() in (0.0, 1.0)
    assert len(first.decode(0)) == 9 and first.label_name(1) == "palindrome"


def test_swapped_negatives_differ_from_a_palindrome_in_few_positions():
    data = PalindromeDataset(300, 32, num_swaps=1, seed=7)
    negatives = data.tokens[data.labels == 0]
    mismatched_pairs = (negatives != negatives.flip(1)).sum(1) // 2
    assert (mismatched_pairs >= 1).all() and (mismatched_pairs <= 2).all()
