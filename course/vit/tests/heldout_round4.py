"""The fourth held-out list of student mistakes for the vit assignment (Tasks 1-3 and 5), written without the checks.

Written from the notebooks (student and solutions) and reference answers only (not from checkers/vit, the planted
mistakes or the other tests; heldout_round2.py, heldout_round3.py and unnamed_mistakes.py were read for their names and
`what` lines only, so that no mistake here repeats one there). Each mistake is a list of edits (old text, new text) of
the reference answer source, applied in order as course.mutant.Mutant applies a planted mistake; each old text occurs
exactly once where it is applied. `what` says what is wrong, in the words a check that names the mistake would need.
"""
from tools.heldout import HeldOut


_SPLIT = """\
patches = images.reshape(batch_size, channels, rows, patch_size, cols, patch_size)  # (B, C, h, p, w, p)
    patches = patches.permute(0, 2, 4, 1, 3, 5)  # (B, h, w, C, p, p)"""
_UNFOLD_STRIDE_ONE = """\
patches = images.unfold(2, patch_size, 1).unfold(3, patch_size, 1)  # (B, C, h, w, p, p)
    patches = patches.permute(0, 2, 3, 1, 4, 5)  # (B, h, w, C, p, p)"""

MISTAKES = [
    # ---- Task 1: patchify ----
    dict(task=1, name="patchify_reads_channels_last",
         edits=(("batch_size, channels, height, width = images.shape",
                 "batch_size, height, width, channels = images.shape"),),
         what="The shape is read as (B, H, W, C), the channels-last layout of NumPy and PIL, instead of PyTorch's "
              "(B, C, H, W): channels, height and width are taken from the wrong axes, so a valid image is refused "
              "or cut wrongly unless C == H == W."),
    dict(task=1, name="patchify_unfold_stride_one",
         edits=((_SPLIT, _UNFOLD_STRIDE_ONE),),
         what="The patches are cut with unfold(dim, p, 1), stride 1 instead of stride p, so they overlap: "
              "(H - p + 1) x (W - p + 1) windows that do not reshape to the N = (H / p)(W / p) patches."),

    # ---- Task 2: PatchEmbedding ----
    dict(task=2, name="embedding_conv_without_stride",
         edits=(("self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)",
                 "self.projection = nn.Conv2d(in_channels, embed_dim, patch_size)"),
                ("patches = self.projection(patchify(images, self.patch_size))  # (B, N, D)",
                 "patches = self.projection(images).flatten(2).transpose(1, 2)  # (B, N, D)")),
         what="The projection is a convolution with kernel p but the default stride 1 instead of stride p: it "
              "slides over overlapping windows and makes (H - p + 1)(W - p + 1) tokens instead of N, which do not "
              "match the position table."),
    dict(task=2, name="embedding_num_patches_inverted",
         edits=(("num_patches = (image_size // patch_size) ** 2", "num_patches = (patch_size // image_size) ** 2"),),
         what="num_patches is (patch_size // image_size) ** 2, which is 0, instead of (image_size // patch_size) ** 2: "
              "the position table has one row, which broadcasts, so every token gets the same position vector."),

    # ---- Task 3: VisionTransformer ----
    dict(task=3, name="vit_patch_embedding_arguments_swapped",
         edits=(("self.patch_embedding = PatchEmbedding(image_size, patch_size, in_channels, embed_dim)",
                 "self.patch_embedding = PatchEmbedding(image_size, in_channels, patch_size, embed_dim)"),),
         what="patch_size and in_channels are passed to PatchEmbedding in the wrong order: the images are cut into "
              "in_channels-pixel patches and the projection expects patch_size channels (an error, or a wrong "
              "model when the two are equal)."),
    dict(task=3, name="vit_attention_return_inside_loop",
         edits=(("            maps.append(attention)\n        return maps",
                 "            maps.append(attention)\n            return maps"),),
         what="forward_attention's return is indented inside the loop, so it returns after the first block: a list "
              "holding only the first block's map instead of one per block."),
    dict(task=3, name="vit_head_reads_feedforward_width",
         edits=(("self.head = nn.Linear(embed_dim, num_classes)",
                 "self.head = nn.Linear(feedforward_dim, num_classes)"),),
         what="The head is nn.Linear(feedforward_dim, num_classes) instead of nn.Linear(embed_dim, num_classes): "
              "the [CLS] state is D wide, so forward fails unless feedforward_dim == embed_dim."),

    # ---- Task 5: attention_rollout ----
    dict(task=5, name="rollout_keeps_last_block_only",
         edits=(("rollout = mixed if rollout is None else mixed @ rollout", "rollout = mixed"),),
         what="The blocks are never multiplied together: each block's normalised map replaces the rollout, so the "
              "result is the last block's A_L alone instead of A_L ... A_1."),
    dict(task=5, name="rollout_heads_mean_keepdim",
         edits=(("mixed = attention.mean(dim=1)", "mixed = attention.mean(dim=1, keepdim=True)"),),
         what="The heads are averaged with keepdim=True, so every matrix and the result keep a heads axis of size 1: "
              "(B, 1, T, T) instead of (B, T, T)."),
    dict(task=5, name="rollout_first_image_only",
         edits=(("mixed = attention.mean(dim=1)", "mixed = attention[0].mean(dim=0)"),),
         what="Only the first image's maps are used (attention[0] averaged over its heads): the result is one "
              "(T, T) rollout instead of one per image, (B, T, T)."),
]


LIST = HeldOut("vit")


# What this list found when it was written, still open: mistakes its checks pass, and mistakes the grade pays
# (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
