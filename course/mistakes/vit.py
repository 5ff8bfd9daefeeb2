"""Known student mistakes of the vit assignment, each a few edits of the reference source (the solutions notebook).
See course/mistakes/transformer.py for how they are used. Instructor-side only: never shipped.
"""
from checkers.vit import _order, patches as _patches
from course.mistakes import Mutant

# ---- Task 1: the reference lines the mistakes edit ----
DIVISIBLE = "if height % patch_size or width % patch_size:"
RAISE = 'raise ValueError(f"images of {height} x {width} pixels do not split into {patch_size} x {patch_size} patches")'
SPLIT = "patches = images.reshape(batch_size, channels, rows, patch_size, cols, patch_size)  # (B, C, h, p, w, p)"
PERMUTE = "patches.permute(0, 2, 4, 1, 3, 5)"
FLATTEN = "return patches.reshape(batch_size, rows * cols, channels * patch_size * patch_size)"

PATCHES_MUTANTS = [
    Mutant(1, "reshaped straight to patches", ((SPLIT, "patches = images"), (PERMUTE, "patches")), _order.STRAIGHT),
    Mutant(1, "patches in column-major order", ((PERMUTE, "patches.permute(0, 4, 2, 1, 3, 5)"),),
           _order.COLUMN_MAJOR),
    Mutant(1, "channel last in a patch", ((PERMUTE, "patches.permute(0, 2, 4, 3, 5, 1)"),), _order.CHANNEL_LAST),
    Mutant(1, "transposed patch", ((PERMUTE, "patches.permute(0, 2, 4, 1, 5, 3)"),), _order.TRANSPOSED),
    Mutant(1, "strided patches", ((SPLIT, SPLIT.replace("rows, patch_size, cols, patch_size",
                                                        "patch_size, rows, patch_size, cols")),
                                  (PERMUTE, "patches.permute(0, 3, 5, 1, 2, 4)")), _order.STRIDED),
    Mutant(1, "unfolded without moving the channels",
           ((SPLIT, "patches = images.unfold(2, patch_size, patch_size).unfold(3, patch_size, patch_size)"),
            (PERMUTE, "patches")), _order.MIXED),
    Mutant(1, "channel between the rows and columns of a patch", ((PERMUTE, "patches.permute(0, 2, 4, 3, 1, 5)"),),
           _order.INNER_ORDER),
    Mutant(1, "no ValueError", ((DIVISIBLE, "if False:"),), _patches.NO_VALUE_ERROR),
    Mutant(1, "only the height checked", ((DIVISIBLE, "if height % patch_size:"),), _patches.NO_VALUE_ERROR),
    Mutant(1, "ValueError without the sizes", ((RAISE, 'raise ValueError("the images do not split into patches")'),),
           _patches.SIZES_UNNAMED),
    Mutant(1, "view after the permute", ((FLATTEN, FLATTEN.replace("patches.reshape", "patches.view")),),
           _patches.NOT_CONTIGUOUS),
    Mutant(1, "detached patches", ((FLATTEN, FLATTEN.replace("patches.reshape", "patches.detach().reshape")),),
           _patches.NO_GRADIENT),
    Mutant(1, "images scaled in place", ((DIVISIBLE, "images /= images.abs().max()\n    " + DIVISIBLE),),
           _patches.IN_PLACE),
    Mutant(1, "grid transposed before flattening", ((FLATTEN, FLATTEN.replace("return patches",
                                                                              "return patches.transpose(1, 2)")),),
           _order.COLUMN_MAJOR),
]

# ---- Task 2: PatchEmbedding ----
EMBEDDING_MUTANTS = []

MUTANTS = [
    # ---- Tasks 1-2 ----
    *PATCHES_MUTANTS,
    *EMBEDDING_MUTANTS,

    # ---- Tasks 3, 5 (the vit-model helper appends theirs) ----
]
