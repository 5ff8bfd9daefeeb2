"""checkers/_relations.py: each relation is said when it holds for every entry, and nothing is said when none does."""
import pytest
import torch

from checkers._relations import shape_relation, value_relation

pytestmark = pytest.mark.fast

GENERATOR = torch.Generator().manual_seed(0)
EXPECTED = torch.randn(2, 5, 8, generator=GENERATOR, dtype=torch.float64)
SQUARE = torch.randn(2, 4, 4, generator=GENERATOR, dtype=torch.float64)
PER_FEATURE = torch.randn(8, generator=GENERATOR, dtype=torch.float64)
PER_ROW = torch.rand(2, 5, 1, generator=GENERATOR, dtype=torch.float64) + 0.5


@pytest.mark.parametrize("got, expected, said", [
    (EXPECTED * 0.5, EXPECTED, "every value is 0.5 times the expected one"),
    (EXPECTED / 8 ** 0.5, EXPECTED, "0.3536 = 1/√8 times"),
    (-EXPECTED, EXPECTED, "the sign flipped"),
    (EXPECTED + 0.3, EXPECTED, "plus the same 0.3"),
    (EXPECTED * 0, EXPECTED, "zero everywhere"),
    (EXPECTED + PER_FEATURE, EXPECTED, "a per-feature offset"),
    (EXPECTED * PER_FEATURE.abs(), EXPECTED, "a per-feature factor"),
    (EXPECTED.softmax(-1), EXPECTED, "the softmax of the expected values over the last axis"),
    (SQUARE.transpose(-1, -2), SQUARE, "transposed"),
    (EXPECTED * PER_ROW, EXPECTED, "a factor of its own"),
    (EXPECTED.flip(1), EXPECTED, "in another order along axis 1"),
])
def test_a_relation_that_holds_is_said(got, expected, said):
    assert said in value_relation(got, expected)


@pytest.mark.parametrize("got", [EXPECTED + 0.01 * torch.randn(2, 5, 8, generator=GENERATOR, dtype=torch.float64),
                                 torch.randn(2, 5, 8, generator=GENERATOR, dtype=torch.float64),
                                 EXPECTED.tanh(), EXPECTED[:, :, :4].repeat(1, 1, 2)])
def test_nothing_is_said_when_no_relation_holds(got):
    assert value_relation(got, EXPECTED) is None


def test_a_wrong_shape_is_related_to_the_expected_one():
    assert "axes 0 and 1 are swapped" in shape_relation((5, 2, 8), (2, 5, 8))
    assert "one of the axes 0, 1" in shape_relation((2, 5, 5), (2, 2, 5, 5))
    assert "extra axis 1 of size 1" in shape_relation((3, 1, 5), (3, 5))
    assert shape_relation((7, 3), (2, 3)) is None and shape_relation((2, 3), (2, 3)) is None
