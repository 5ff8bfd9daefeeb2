"""Task 1 patchifies that are right but loop in Python over the patches, their rows or their columns: the task says
"without Python loops over patches", so the check and the grader reject each (course/vit/mistakes.py plants a loop
over every patch; these are other ways to write one)."""
import torch

from .layers_variants import _divisible


def patchify_row_loop(images, patch_size):
    """One band of patch rows at a time, each band vectorised, the bands concatenated."""
    _divisible(images, patch_size)
    batch_size, channels, height, width = images.shape
    bands = []
    for top in range(0, height, patch_size):
        band = images[:, :, top:top + patch_size].reshape(batch_size, channels, patch_size, -1, patch_size)
        bands.append(band.permute(0, 3, 1, 2, 4).flatten(2))  # (B, w, C·p·p)
    return torch.cat(bands, dim=1)  # (B, N, C·p·p)


def patchify_column_loop(images, patch_size):
    """One column of patches at a time, stacked after the patch rows, then the grid flattened row by row."""
    _divisible(images, patch_size)
    batch_size, channels, height, width = images.shape
    columns = [images[..., left:left + patch_size].reshape(batch_size, channels, -1, patch_size, patch_size)
               .transpose(1, 2).flatten(2) for left in range(0, width, patch_size)]  # each (B, h, C·p·p)
    return torch.stack(columns, dim=2).flatten(1, 2)  # (B, h, w, C·p·p) -> (B, N, C·p·p)


def patchify_filled_in(images, patch_size):
    """A tensor of zeros filled in patch by patch."""
    _divisible(images, patch_size)
    batch_size, channels, height, width = images.shape
    cols = width // patch_size
    patches = images.new_zeros(batch_size, height // patch_size * cols, channels * patch_size ** 2)
    for row in range(height // patch_size):
        for col in range(cols):
            block = images[:, :, row * patch_size:(row + 1) * patch_size, col * patch_size:(col + 1) * patch_size]
            patches[:, row * cols + col] = block.reshape(batch_size, -1)
    return patches


LOOPS = [patchify_row_loop, patchify_column_loop, patchify_filled_in]
