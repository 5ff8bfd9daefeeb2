"""Advice only from evidence (issue 21): a check names a fix only when the probe that identifies that mistake fits
what the student's code does; otherwise it says what it observed. Each case the issue lists is checked both ways: the
wrong sentence is absent and the observation (or the right name) is present, and the sentence that the probe does
identify still goes to the mistake it belongs to."""
import pytest
import torch
import torch.nn.functional as F

from checkers.vit import patches, rollout
from .checks import failure_of

pytestmark = pytest.mark.fast


def patchify_patches_per_side(images, patch_size):
    """patch_size read as the number of patches per side: patch_size² blocks of H / p × W / p pixels."""
    batch_size, channels, height, width = images.shape
    if height % patch_size or width % patch_size:
        raise ValueError(f"{height} x {width} images do not split into {patch_size} x {patch_size} patches")
    block_rows, block_cols = height // patch_size, width // patch_size
    blocks = images.reshape(batch_size, channels, patch_size, block_rows, patch_size, block_cols)
    blocks = blocks.permute(0, 2, 4, 1, 3, 5)  # (B, p, p, C, H / p, W / p)
    return blocks.reshape(batch_size, patch_size * patch_size, channels * block_rows * block_cols)


def patchify_unfold_untransposed(images, patch_size):
    """F.unfold's (B, C·p·p, N) returned as it is: what the transpose advice is for."""
    return F.unfold(images, patch_size, stride=patch_size)


def patchify_padded(images, patch_size):
    """A wrong-shaped output that is no rearrangement of the pixels (one zero patch too many): no layout to name."""
    batch_size, channels, height, width = images.shape
    patches = F.unfold(images, patch_size, stride=patch_size).transpose(1, 2)  # (B, N, C·p·p)
    return torch.cat([patches, torch.zeros_like(patches[:, :1])], dim=1)


def test_patches_per_side_is_not_told_to_transpose():
    """Its (2, 4, 16) output has the transposed shape of (2, 16, 4), but its transpose is not the patches: following
    the transpose advice would give other wrong values."""
    message = failure_of(1, patchify_patches_per_side)
    assert "transpose(1, 2)" not in message and "swapped" not in message, message
    assert "has shape (2, 4, 16), expected (2, 16, 4)" in message and patches.PER_SIDE in message, message


def test_the_transpose_advice_still_goes_to_the_untransposed_unfold():
    message = failure_of(1, patchify_unfold_untransposed)
    assert patches.AXES_SWAPPED in message and patches.PER_SIDE not in message, message


def test_a_wrong_shape_with_no_known_layout_states_the_sizes():
    message = failure_of(1, patchify_padded)
    assert "has shape (2, 17, 4), expected (2, 16, 4) = (B, N, C·p·p)" in message, message
    assert "N = (H / p)·(W / p) = (8 / 2)·(8 / 2) = 16 patches of C·p·p = 4 values" in message, message
    assert patches.AXES_SWAPPED not in message and patches.PER_SIDE not in message, message


def rollout_elementwise(attention_maps):
    """Each layer's A + I renormalised, the layers combined element by element instead of by a matrix product."""
    result = None
    for attention in attention_maps:
        mixed = attention.mean(dim=1)  # (B, T, T)
        mixed = mixed + torch.eye(mixed.size(-1), dtype=mixed.dtype)
        mixed = mixed / mixed.sum(dim=-1, keepdim=True)
        result = mixed if result is None else mixed * result
    return result


def rollout_with_a_wrong_row(attention_maps):
    """Right, except that row 0 of the result is doubled: the layers are combined right, a row is wrong."""
    result = None
    for attention in attention_maps:
        mixed = attention.mean(dim=1) + torch.eye(attention.size(-1), dtype=attention.dtype)  # (B, T, T)
        mixed = mixed / mixed.sum(dim=-1, keepdim=True)
        result = mixed if result is None else mixed @ result
    return torch.cat([2 * result[:, :1], result[:, 1:]], dim=1)


def test_the_elementwise_product_is_not_told_to_renormalise():
    """Its rows do not sum to 1, yet each layer is renormalised: the rows advice is absent, the product is named."""
    message = failure_of(5, rollout_elementwise)
    assert "renormalis" not in message.split("is wrong:")[1], message
    assert rollout.ELEMENTWISE in message, message


def test_rows_that_do_not_sum_to_one_are_stated_not_blamed_on_the_renormalisation():
    message = failure_of(5, rollout_with_a_wrong_row)
    assert "its rows sum to values from 1 to 2, not 1" in message and "renormalis" not in message, message


def patchify_one_channel_only(images, patch_size):
    """Written for one channel (a grey digit): runs on 1 channel, raises on 2 or 3."""
    batch_size, _, height, width = images.shape
    if height % patch_size or width % patch_size:
        raise ValueError(f"{height} x {width} images do not split into {patch_size} x {patch_size} patches")
    blocks = images.reshape(batch_size, 1, height // patch_size, patch_size, width // patch_size, patch_size)
    return blocks.permute(0, 2, 4, 1, 3, 5).reshape(batch_size, -1, patch_size * patch_size)


def patchify_failing_on_one_patch(images, patch_size):
    """Right, except that it raises when an image holds a single patch: no fixed size to name."""
    if images.shape[-2:] == (patch_size, patch_size):
        raise IndexError("index 1 is out of bounds for dimension 1 with size 1")
    return F.unfold(images, patch_size, stride=patch_size).transpose(1, 2)


def test_a_fixed_channel_count_is_named_from_the_sizes_that_run():
    message = failure_of(1, patchify_one_channel_only)
    assert patches.FIXED_CHANNELS.format(channels=1, double=2) in message, message
    assert patches.SQUARE not in message, message


def test_a_failure_at_one_size_is_not_blamed_on_a_fixed_grid():
    """It runs on 8 × 12 images and on 16 × 24 ones, so nothing says the grid is fixed: only what it raised."""
    message = failure_of(1, patchify_failing_on_one_patch)
    assert "(2, 3, 4, 4), patch_size=4) raised IndexError" in message, message
    assert "fixed" not in message and patches.SQUARE not in message, message
