"""The third held-out list of student mistakes for the vit assignment (Tasks 1, 2, 3, 5), written without the checks.

Written from the notebooks (student and solutions) and reference answers only (not from checkers/vit, the planted
mistakes or the other tests; heldout_round2.py and unnamed_mistakes.py were read for their format and names only, so
that no mistake here repeats one there). Each mistake is a list of edits (old text, new text) of the reference answer
source, applied in order as course.mutant.Mutant applies a planted mistake; each old text occurs exactly once where
it is applied. `what` says what is wrong, in the words a check that names the mistake would need.
"""
from tools.heldout import HeldOut


_HEAD = "return self.head(self.final_norm(x[:, 0]))"
_EYE = "torch.eye(mixed.size(-1), dtype=mixed.dtype, device=mixed.device)"

MISTAKES = [
    # ---- Task 1: patchify ----
    dict(task=1, name="patchify_casts_to_float32",
         edits=(("    batch_size, channels, height, width = images.shape\n",
                 "    images = images.float()\n    batch_size, channels, height, width = images.shape\n"),),
         what="The images are cast to float32 first, so float64 (or half) images come back as float32 patches "
              "instead of keeping their dtype."),
    dict(task=1, name="patchify_checks_pixel_count",
         edits=(("if height % patch_size or width % patch_size:", "if (height * width) % (patch_size * patch_size):"),),
         what="Divisibility is checked on the pixel count H * W against p * p instead of on H and W separately, so "
              "e.g. a 2 x 8 image with p = 4 passes the test and then fails inside reshape without the ValueError."),

    # ---- Task 2: PatchEmbedding ----
    dict(task=2, name="embedding_cls_batch_from_channels",
         edits=(("cls = self.cls_token.expand(patches.size(0), 1, -1)",
                 "cls = self.cls_token.expand(images.size(1), 1, -1)"),),
         what="[CLS] is repeated images.size(1) times (the channels) instead of images.size(0) (the batch): right "
              "only when B == C, e.g. one grey-scale image."),
    dict(task=2, name="embedding_patch_area_times_two",
         edits=(("self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)",
                 "self.projection = nn.Linear(in_channels * patch_size * 2, embed_dim)"),),
         what="The projection's input width is C * p * 2 instead of C * p ** 2: equal only for the notebook's "
              "p = 2, a shape error for any other patch size."),

    # ---- Task 3: VisionTransformer ----
    dict(task=3, name="vit_reads_first_patch",
         edits=((_HEAD, "return self.head(self.final_norm(x[:, 1]))"),),
         what="The head reads token 1, the first patch, instead of token 0, the [CLS] token."),
    dict(task=3, name="vit_norm_after_head",
         edits=(("self.final_norm = nn.LayerNorm(embed_dim)", "self.final_norm = nn.LayerNorm(num_classes)"),
                (_HEAD, "return self.final_norm(self.head(x[:, 0]))")),
         what="The final LayerNorm is applied to the K logits after the head instead of to the [CLS] state before "
              "it, so the logits are normalised (mean 0, variance 1)."),
    dict(task=3, name="vit_dropout_passed_positionally",
         edits=(("PreNormBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout)",
                 "PreNormBlock(embed_dim, num_heads, feedforward_dim, dropout)"),),
         what="dropout is passed to PreNormBlock by position, where the activation goes, so the block calls the "
              "float dropout as its activation class and construction fails (dropout stays at 0)."),

    # ---- Task 5: attention_rollout ----
    dict(task=5, name="rollout_identity_sized_by_batch",
         edits=((_EYE, "torch.eye(mixed.size(0), dtype=mixed.dtype, device=mixed.device)"),),
         what="The identity for the residual path is sized by mixed.size(0), the batch size, instead of T: with "
              "one image it adds 1 to every entry, otherwise a shape error unless B == T."),
    dict(task=5, name="rollout_heads_mean_divided_by_batch",
         edits=(("mixed = attention.mean(dim=1)", "mixed = attention.sum(dim=1) / attention.size(0)"),),
         what="The heads are summed and divided by attention.size(0), the batch size, instead of the number of "
              "heads H, so the attention outweighs the identity by H / B before renormalising."),
    dict(task=5, name="rollout_normalised_by_row_max",
         edits=(("mixed = mixed / mixed.sum(dim=-1, keepdim=True)",
                 "mixed = mixed / mixed.max(dim=-1, keepdim=True).values"),),
         what="Each row is divided by its largest entry instead of its sum, so the rows of the rollout no longer "
              "sum to 1."),
]


LIST = HeldOut("vit")


# What this list found when it was written, still open: mistakes its checks pass, and mistakes the grade pays
# (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
