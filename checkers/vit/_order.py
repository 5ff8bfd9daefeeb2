"""Where each pixel went: patchify run on images whose every pixel holds its own index, and its order decoded.

Each known mistake of patch order is recognised by what it does to the pixels' places, never by a stored output.
"""
import torch
from .._core import Diagnosis

STRAIGHT = Diagnosis(
    "straight",
    "the images are reshaped straight from (B, C, H, W) to (B, N, C·p·p), so one 'patch' holds consecutive "
    "pixels of an image row, mixing rows of different patches: split H into (H / p, p) and W into (W / p, p), "
    "permute the patch grid (H / p, W / p) in front of (C, p, p), then flatten.")
COLUMN_MAJOR = Diagnosis(
    "column-major",
    "the patches are numbered in column-major order (down the first column of patches first): number "
    "them row by row, patch n at grid row n // (W / p) and grid column n % (W / p).")
CHANNEL_LAST = Diagnosis(
    "channel-last",
    "each patch is flattened channel last, in the order (p1, p2, C): flatten it channel first, "
    "(C, p1, p2), so that entry k of a patch is channel k // p², row (k // p) % p, column k % p.")
TRANSPOSED = Diagnosis(
    "transposed",
    "each patch is flattened column by column, a transposed patch (p2 before p1): flatten its pixels row "
    "by row, in the order (C, p1, p2) with p1 the row inside the patch.")
STRIDED = Diagnosis(
    "strided",
    "each patch takes pixels H / p rows and W / p columns apart instead of a p × p block: split H into "
    "(H / p, p), the grid row first, not (p, H / p); the same for W.")
BATCH_MIXED = Diagnosis(
    "batch-mixed",
    "the patches of one image hold pixels of other images: keep the batch axis first and whole, "
    "(B, C, H, W) -> (B, N, C·p·p).")
MIXED = Diagnosis(
    "mixed",
    "holds pixels of several p × p blocks of the image: split H and W into (H / p, p) and (W / p, p), "
    "permute the patch grid (H / p, W / p) in front of the channel and the pixels of a patch, (C, p, p), "
    "and only then flatten.")
INNER_ORDER = Diagnosis(
    "inner-order",
    "the pixels inside each patch are flattened in another order: entry k of a patch should be channel "
    "k // p², row (k // p) % p, column k % p of the patch, the order (C, p1, p2).")


def probe(patchify, shape, patch_size):
    """patchify of images whose pixel holds its flat index, as long integers (B, N, C·p·p); None when the output is
    not the input's pixels rearranged, each once (a probe never raises)."""
    count = torch.Size(shape).numel()
    images = torch.arange(count, dtype=torch.float64).reshape(shape)  # (B, C, H, W)
    try:
        with torch.no_grad():
            got = patchify(images, patch_size)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    if not isinstance(got, torch.Tensor) or got.numel() != count or got.dim() != 3:
        return None
    index = got.double().round().long()  # (B, N, C·p·p)
    if not torch.equal(index.double(), got.double()) or not torch.equal(index.flatten().sort().values,
                                                                        torch.arange(count)):
        return None
    return index


def is_patchify(index, shape, block):
    """Whether index (B, N, K) puts the pixels of images `shape` in blocks of block = (rows, columns) pixels, the
    blocks in row-major order and each flattened channel first (what patchify does when the block is p × p)."""
    batch_size, channels, height, width = shape
    block_rows, block_cols = block
    if min(block) < 1 or height % block_rows or width % block_cols:
        return False
    num_blocks, area = (height // block_rows) * (width // block_cols), block_rows * block_cols
    if tuple(index.shape) != (batch_size, num_blocks, channels * area):
        return False
    row, col = index // width % height, index % width  # (B, N, K) each
    patch, entry = torch.arange(num_blocks)[:, None], torch.arange(channels * area)  # (N, 1), (K,)
    grid_cols = width // block_cols
    return all(bool(torch.equal(got, want.expand_as(index))) for got, want in (
        (index // (channels * height * width), torch.arange(batch_size)[:, None, None]),
        (index // (height * width) % channels, entry // area),
        (row // block_rows, patch // grid_cols), (col // block_cols, patch % grid_cols),
        (row % block_rows, entry // block_cols % block_rows), (col % block_cols, entry % block_cols)))


def _places(index, shape, patch_size):
    """(b, c, grid row, grid column, row in patch, column in patch) of the pixel at each output entry."""
    _, channels, height, width = shape
    row, col = index // width % height, index % width  # (B, N, C·p·p) each
    return (index // (channels * height * width), index // (height * width) % channels,
            row // patch_size, col // patch_size, row % patch_size, col % patch_size)


def _pinned_grid(shape, patch_size):
    """(grid row, grid column) of each patch n in row-major order, (N,) each."""
    height, width = shape[2:]
    patch = torch.arange(height * width // patch_size ** 2)  # (N,)
    return patch // (width // patch_size), patch % (width // patch_size)


def _constant_per_patch(values):
    """Whether values (B, N, K) are the same for every entry of a patch; returns them per patch (B, N) if so."""
    return values[..., 0] if bool((values == values[..., :1]).all()) else None


def explain_order(task, patchify, shape, patch_size, what):
    """Fail naming how patchify misplaces pixels, when it is a rearrangement of them; otherwise return."""
    index = probe(patchify, shape, patch_size)
    if index is None:
        return
    if torch.equal(index.flatten(), torch.arange(index.numel())):
        task.fail(f"{what} is wrong: {STRAIGHT}", STRAIGHT.slug)
    batch, channel, grid_row, grid_col, row, col = _places(index, shape, patch_size)
    if not bool((batch == torch.arange(shape[0])[:, None, None]).all()):
        task.fail(f"{what} is wrong: {BATCH_MIXED}", BATCH_MIXED.slug)
    rows, cols = _constant_per_patch(grid_row), _constant_per_patch(grid_col)
    if rows is None or cols is None:
        _explain_scattered(task, index, shape, patch_size, what)
    pinned_rows, pinned_cols = _pinned_grid(shape, patch_size)
    grid_rows = shape[2] // patch_size
    if not (torch.equal(rows[0], pinned_rows) and torch.equal(cols[0], pinned_cols)):
        patch = torch.arange(rows.size(1))
        if torch.equal(rows[0], patch % grid_rows) and torch.equal(cols[0], patch // grid_rows):
            task.fail(f"{what} is wrong: {COLUMN_MAJOR}", COLUMN_MAJOR.slug)
        task.fail(f"{what} puts the patches in another order: {COLUMN_MAJOR.split(': ', 1)[1]}")
    _explain_inner(task, channel[0, 0], row[0, 0], col[0, 0], shape[1], patch_size, what)


def _explain_scattered(task, index, shape, patch_size, what):
    """Patches that are no p × p block: strided ones (pixels H / p apart), or a mixture named by its first patch."""
    _, _, height, width = shape
    row, col = index // width % height, index % width  # (B, N, C·p·p)
    grid_rows, grid_cols = height // patch_size, width // patch_size
    if _constant_per_patch(row % grid_rows) is not None and _constant_per_patch(col % grid_cols) is not None:
        task.fail(f"{what} is wrong: {STRIDED}", STRIDED.slug)
    first = int(((row // patch_size != row[..., :1] // patch_size) |
                 (col // patch_size != col[..., :1] // patch_size)).any(-1).any(0).nonzero()[0])
    task.fail(f"{what} is wrong: patch {first} {MIXED}", MIXED.slug)


def _explain_inner(task, channel, row, col, channels, patch_size, what):
    """Name the order of the (c, i, j) of one patch's entries (K,) when it is not (C, p1, p2)."""
    area = patch_size * patch_size
    entry = torch.arange(channels * area)
    if torch.equal(entry, channel * area + row * patch_size + col):
        return
    if torch.equal(entry, (row * patch_size + col) * channels + channel):
        task.fail(f"{what} is wrong: {CHANNEL_LAST}", CHANNEL_LAST.slug)
    if torch.equal(entry, channel * area + col * patch_size + row):
        task.fail(f"{what} is wrong: {TRANSPOSED}", TRANSPOSED.slug)
    task.fail(f"{what} is wrong: {INNER_ORDER}", INNER_ORDER.slug)
