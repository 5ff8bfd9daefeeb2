"""The second held-out list of student mistakes for the vit assignment (Tasks 1, 2, 3, 5), written without the checks.

Written from the solutions notebook's task text and reference answers only (not from checkers/vit, the planted
mistakes in course/vit/mistakes.py or the other tests; course/vit/tests/unnamed_mistakes.py was read for its names
only, so that no mistake here repeats one there). Each mistake is a list of edits (old text, new text) of the
reference answer source, applied in order as course.mutant.Mutant applies a planted mistake; each old text occurs
exactly once where it is applied. `what` says what is wrong, in the words a check that names the mistake would need.
"""
from tools.heldout import HeldOut


_SPLIT = "patches = images.reshape(batch_size, channels, rows, patch_size, cols, patch_size)"
_FLAT = "return patches.reshape(batch_size, rows * cols, channels * patch_size * patch_size)"
_CHECK = "if height % patch_size or width % patch_size:"
_POSITIONS = "nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * 0.02)"
_MEAN = "mixed = attention.mean(dim=1)"

MISTAKES = [
    # ---- Task 1: patchify ----
    dict(task=1, name="patchify_split_pixel_before_patch",
         edits=((_SPLIT, "patches = images.reshape(batch_size, channels, patch_size, rows, patch_size, cols)"),),
         what="Height and width are split as (pixel in patch, patch) instead of (patch, pixel in patch), so a token "
              "gathers pixels spaced a whole grid apart (a strided sample of the image), not one p x p square."),
    dict(task=1, name="patchify_rows_cols_swapped",
         edits=(("rows, cols = height // patch_size, width // patch_size",
                 "rows, cols = width // patch_size, height // patch_size"),),
         what="The patch rows are counted from the width and the columns from the height: right for square images, "
              "scrambled patches when H != W."),
    dict(task=1, name="patchify_checks_height_only",
         edits=((_CHECK, "if height % patch_size:"),),
         what="Only the height is checked: a width that is not a multiple of p raises RuntimeError from reshape "
              "instead of the ValueError asked for."),
    dict(task=1, name="patchify_check_needs_both",
         edits=((_CHECK, "if height % patch_size and width % patch_size:"),),
         what="The check uses and instead of or: ValueError only when both sides fail; one bad side raises "
              "RuntimeError from reshape."),
    dict(task=1, name="patchify_view_after_permute",
         edits=((_FLAT, _FLAT.replace("patches.reshape(", "patches.view(")),),
         what="The permuted tensor is flattened with view instead of reshape, which raises on its non-contiguous "
              "memory."),
    dict(task=1, name="patchify_channel_axis_before_grid",
         edits=(("patches.permute(0, 2, 4, 1, 3, 5)", "patches.permute(0, 1, 2, 4, 3, 5)"),),
         what="The channel axis stays in front of the patch grid, (B, C, h, w, p, p): right for one channel, but "
              "with C > 1 each token holds pixels of several patches from different channels."),
    dict(task=1, name="patchify_grid_not_flattened",
         edits=((_FLAT, "return patches.reshape(batch_size, rows, cols, channels * patch_size * patch_size)"),),
         what="The grid is not flattened: the result is (B, h, w, C p p) instead of (B, N, C p p)."),
    dict(task=1, name="patchify_channels_into_tokens",
         edits=((_FLAT, "return patches.reshape(batch_size, -1, patch_size * patch_size)"),),
         what="Each token gets p * p features and the channels become extra tokens, (B, C N, p p) instead of "
              "(B, N, C p p): right only for one channel."),
    # ---- Task 2: PatchEmbedding ----
    dict(task=2, name="embedding_positions_buffer",
         edits=(("self.position_embedding = " + _POSITIONS,
                 'self.register_buffer("position_embedding", torch.randn(1, num_patches + 1, embed_dim) * 0.02)'),),
         what="The position table is a buffer, not an nn.Parameter: it is random and never learned."),
    dict(task=2, name="embedding_num_patches_precedence",
         edits=(("num_patches = (image_size // patch_size) ** 2", "num_patches = image_size // patch_size ** 2"),),
         what="num_patches is image_size // patch_size ** 2 (** binds first) instead of (image_size // p) ** 2, so "
              "the position table has the wrong number of rows."),
    dict(task=2, name="embedding_projection_without_bias",
         edits=(("nn.Linear(in_channels * patch_size ** 2, embed_dim)",
                 "nn.Linear(in_channels * patch_size ** 2, embed_dim, bias=False)"),),
         what="The projection has no bias; the formula's E x + b needs nn.Linear's bias."),
    dict(task=2, name="embedding_positions_transposed",
         edits=((_POSITIONS, "nn.Parameter(torch.randn(1, embed_dim, num_patches + 1) * 0.02)"),),
         what="The position table is shaped (1, D, N + 1) instead of (1, N + 1, D), so adding it to the (B, N + 1, D) "
              "tokens fails unless D = N + 1."),
    dict(task=2, name="embedding_cls_detached",
         edits=(("cls = self.cls_token.expand(", "cls = self.cls_token.detach().expand("),),
         what="The [CLS] token is detached in forward, so it never receives a gradient and is never learned."),
    dict(task=2, name="embedding_channels_squared",
         edits=(("nn.Linear(in_channels * patch_size ** 2, embed_dim)",
                 "nn.Linear((in_channels * patch_size) ** 2, embed_dim)"),),
         what="The projection's input width is (C p) ** 2 instead of C p ** 2: right for one channel, colour "
              "images fail."),
    dict(task=2, name="embedding_cls_position_added_twice",
         edits=(("cls = self.cls_token.expand(patches.size(0), 1, -1)",
                 "cls = self.cls_token.expand(patches.size(0), 1, -1) + self.position_embedding[:, :1]"),),
         what="[CLS] gets its position twice: position 0 is added to it before concatenation and again with the "
              "whole table."),
    # ---- Task 3: VisionTransformer ----
    dict(task=3, name="vit_cls_slice_keeps_axis",
         edits=(("self.head(self.final_norm(x[:, 0]))", "self.head(self.final_norm(x[:, :1]))"),),
         what="[CLS] is read as x[:, :1], so the logits are (B, 1, K) instead of (B, K)."),
    dict(task=3, name="vit_first_image_tokens",
         edits=(("self.head(self.final_norm(x[:, 0]))", "self.head(self.final_norm(x[0]))"),),
         what="x[0] (every token of the first image) is read instead of x[:, 0] ([CLS] of every image): the "
              "logits are (N + 1, K)."),
    dict(task=3, name="vit_maps_without_norm1",
         edits=(("x, attention = block(x, return_attention=True)",
                 "_, attention = block.attention(x, return_attention=True)\n            x = block(x)"),),
         what="forward_attention calls block.attention on the un-normalised stream, skipping norm1, so the maps "
              "are not the weights the block uses."),
    dict(task=3, name="vit_one_block_too_many",
         edits=(("for _ in range(num_layers)])", "for _ in range(num_layers + 1)])"),),
         what="num_layers + 1 blocks are built instead of num_layers."),
    dict(task=3, name="vit_head_without_bias",
         edits=(("self.head = nn.Linear(embed_dim, num_classes)",
                 "self.head = nn.Linear(embed_dim, num_classes, bias=False)"),),
         what="The head is created with bias=False; the task asks for nn.Linear(embed_dim, num_classes)."),
    dict(task=3, name="vit_blocks_plain_list",
         edits=(("self.blocks = nn.ModuleList([PreNormBlock(", "self.blocks = ([PreNormBlock("),),
         what="The blocks are kept in a plain Python list, not an nn.ModuleList: their weights are not the "
              "model's parameters (not trained, not saved, not moved by .to)."),
    dict(task=3, name="vit_logits_squeezed",
         edits=(("return self.head(self.final_norm(x[:, 0]))",
                 "return self.head(self.final_norm(x[:, 0])).squeeze()"),),
         what="The logits are squeezed, so a batch of one image gives shape (K,) instead of (1, K)."),
    dict(task=3, name="vit_maps_stacked",
         edits=(("        return maps\n", "        return torch.stack(maps)\n"),),
         what="forward_attention returns one stacked tensor (num_layers, B, H, T, T) instead of a list of maps."),
    dict(task=3, name="vit_feedforward_width_embed_dim",
         edits=(("PreNormBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout)",
                 "PreNormBlock(embed_dim, num_heads, embed_dim, dropout=dropout)"),),
         what="The blocks get embed_dim as their feed-forward width instead of feedforward_dim."),
    # ---- Task 5: attention_rollout ----
    dict(task=5, name="rollout_first_block_skipped",
         edits=(("for attention in attention_maps:", "for attention in attention_maps[1:]:"),),
         what="The loop starts at the second map, so the first block is left out (one map gives None)."),
    dict(task=5, name="rollout_elementwise_product",
         edits=(("mixed @ rollout", "mixed * rollout"),),
         what="The blocks are combined with an element-wise product instead of a matrix product."),
    dict(task=5, name="rollout_heads_summed",
         edits=((_MEAN, "mixed = attention.sum(dim=1)"),),
         what="The heads are summed instead of averaged, so after adding I and renormalising the residual path "
              "weighs 1 / (H + 1) instead of 1 / 2."),
    dict(task=5, name="rollout_heads_mean_wrong_axis",
         edits=((_MEAN, "mixed = attention.mean(dim=-1)"),),
         what="The mean is taken over the last axis (the keys) instead of dim 1 (the heads)."),
    dict(task=5, name="rollout_transposed",
         edits=(("    return rollout\n", "    return rollout.transpose(-2, -1)\n"),),
         what="The result is transposed: entry (i, j) says how much input i feeds output j, so the columns sum "
              "to 1 instead of the rows."),
    dict(task=5, name="rollout_row_sum_without_keepdim",
         edits=(("mixed.sum(dim=-1, keepdim=True)", "mixed.sum(dim=-1)"),),
         what="The row sums lose their axis (no keepdim), so column j is divided by row j's sum: wrong rows for "
              "B = 1 (and B = T), a broadcast error for other batch sizes."),
    dict(task=5, name="rollout_total_normalised",
         edits=(("mixed.sum(dim=-1, keepdim=True)", "mixed.sum(dim=(-2, -1), keepdim=True)"),),
         what="W + I is divided by the sum of the whole matrix instead of each row's sum, so rows sum to 1 / T."),
    dict(task=5, name="rollout_first_head_only",
         edits=((_MEAN, "mixed = attention[:, 0]"),),
         what="Only head 0's map is used instead of the mean over the heads."),
    dict(task=5, name="rollout_first_block_raw",
         edits=(("        " + _MEAN, "        if rollout is None:\n            rollout = attention.mean(dim=1)\n"
                                    "            continue\n        " + _MEAN),),
         what="R_1 is the first block's head mean as it is, without adding I and renormalising (only later "
              "blocks get the residual path)."),
]


LIST = HeldOut("vit")


# What this list found when it was written (issue 43), still open: mistakes its checks pass, and mistakes the
# grade pays (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
