"""Known student mistakes of the vit assignment, each a few edits of the reference source (the solutions notebook).
See course/transformer/mistakes.py for how they are used. Instructor-side only: never shipped.
"""
from checkers.vit import _model_probes as _probes, _order, _tokens, embedding as _embedding, model as _model
from checkers.vit import patches as _patches, rollout as _rollout
from course.mutant import Mutant

# ---- Task 1: the reference lines the mistakes edit ----
DIVISIBLE = "if height % patch_size or width % patch_size:"
RAISE = 'raise ValueError(f"images of {height} x {width} pixels do not split into {patch_size} x {patch_size} patches")'
GRID = "rows, cols = height // patch_size, width // patch_size"
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
    Mutant(1, "square images assumed", ((GRID, "rows = cols = height // patch_size"),), _patches.SQUARE),
    Mutant(1, "F.unfold without the transpose", ((SPLIT, "return F.unfold(images, patch_size, stride=patch_size)"),),
           _patches.AXES_SWAPPED),
    Mutant(1, "no ValueError", ((DIVISIBLE, "if False:"),), _patches.NO_VALUE_ERROR),
    Mutant(1, "only the height checked", ((DIVISIBLE, "if height % patch_size:"),),
           _patches.ONE_SIDE_TESTED.format(tested="H", other="W")),
    Mutant(1, "ValueError without the sizes", ((RAISE, 'raise ValueError("the images do not split into patches")'),),
           _patches.SIZES_UNNAMED),
    Mutant(1, "view after the permute", ((FLATTEN, FLATTEN.replace("patches.reshape", "patches.view")),),
           _patches.NOT_CONTIGUOUS),
    Mutant(1, "detached patches", ((FLATTEN, FLATTEN.replace("patches.reshape", "patches.detach().reshape")),),
           _patches.NO_GRADIENT),
    Mutant(1, "images scaled in place", ((DIVISIBLE, "images /= images.abs().max()\n    " + DIVISIBLE),),
           _patches.IN_PLACE),
    Mutant(1, "a Python loop over the patches", ((SPLIT, "patches = torch.stack([images[:, :, top:top + patch_size, "
                                                        "left:left + patch_size].reshape(batch_size, -1) for top in "
                                                        "range(0, height, patch_size) for left in range(0, width, "
                                                        "patch_size)], dim=1)  # (B, N, C·p·p)"),
                                                 (PERMUTE, "patches")), _patches.LOOPS),
    Mutant(1, "grid transposed before flattening", ((FLATTEN, FLATTEN.replace("return patches",
                                                                              "return patches.transpose(1, 2)")),),
           _order.COLUMN_MAJOR),
]

# ---- Task 2: the reference lines the mistakes edit ----
PROJECTION = "self.projection = nn.Linear(in_channels * patch_size ** 2, embed_dim)"
CLS_TOKEN = "self.cls_token = nn.Parameter(torch.randn(embed_dim) * 0.02)  # (D,)"
POSITIONS = "self.position_embedding = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * 0.02)"
PROJECTED = "patches = self.projection(patchify(images, self.patch_size))  # (B, N, D)"
CLS = "cls = self.cls_token.expand(patches.size(0), 1, -1)  # (B, 1, D)"
TOKENS = "return torch.cat([cls, patches], dim=1) + self.position_embedding"
SINUSOIDS = """position = torch.arange(num_patches + 1)[:, None]  # (N + 1, 1)
        frequency = torch.exp(torch.arange(0, embed_dim, 2) * (-math.log(10000.0) / embed_dim))  # (ceil(D / 2),)
        table = torch.zeros(1, num_patches + 1, embed_dim)  # (1, N + 1, D)
        table[0, :, 0::2] = torch.sin(position * frequency)
        table[0, :, 1::2] = torch.cos(position * frequency[:embed_dim // 2])
        """

EMBEDDING_MUTANTS = [
    Mutant(2, "[CLS] appended at the end", ((TOKENS, "return torch.cat([patches, cls], dim=1) + "
                                                     "self.position_embedding"),), _tokens.CLS_LAST),
    Mutant(2, "position embedding of N rows, none for [CLS]",
           ((POSITIONS, POSITIONS.replace("num_patches + 1", "num_patches")),
            (TOKENS, "return torch.cat([cls, patches + self.position_embedding], dim=1)")), _embedding.N_ROWS),
    Mutant(2, "[CLS] without its position (row 0 unused)",
           ((TOKENS, "return torch.cat([cls, patches + self.position_embedding[:, 1:]], dim=1)"),),
           _tokens.CLS_NO_POSITION),
    Mutant(2, "patches get position rows 0 .. N - 1",
           ((TOKENS, "return torch.cat([cls, patches + self.position_embedding[:, :-1]], dim=1)"),), _tokens.SHIFTED),
    Mutant(2, "no positions added", ((TOKENS, "return torch.cat([cls, patches], dim=1)"),), _tokens.NO_POSITIONS),
    Mutant(2, "sinusoidal table as a buffer",
           ((POSITIONS, SINUSOIDS + 'self.register_buffer("position_embedding", table)'),), _embedding.FIXED_TABLE),
    Mutant(2, "sinusoidal table, a Parameter with requires_grad=False",
           ((POSITIONS, SINUSOIDS + "self.position_embedding = nn.Parameter(table, requires_grad=False)"),),
           _embedding.FIXED_TABLE),
    Mutant(2, "cls_token a plain tensor", ((CLS_TOKEN, "self.cls_token = torch.zeros(embed_dim)"),),
           _embedding.CLS_FIXED),
    Mutant(2, "projection over the patch axis",
           ((PROJECTION, "self.projection = nn.Linear(num_patches, embed_dim)"),
            (PROJECTED, "patches = self.projection(patchify(images, self.patch_size).transpose(1, 2))")),
           _embedding.PATCH_AXIS),
    Mutant(2, "[CLS] plus the mean of the patches", ((CLS, CLS + "\n        cls = cls + patches.mean(dim=1, "
                                                           "keepdim=True)"),), _tokens.CLS_NOT_SHARED),
    Mutant(2, "projection without a bias", ((PROJECTION, PROJECTION.replace("embed_dim)", "embed_dim, bias=False)")),),
           "created with bias=False"),
    Mutant(2, "patch size 2 written in", ((PROJECTED, PROJECTED.replace("self.patch_size", "2")),)),
]

# ---- Task 3: VisionTransformer (the vit-model helper's block) ----
READOUT = "return self.head(self.final_norm(x[:, 0]))  # (B, K), from the [CLS] token only"
EMBED_THEN_BLOCKS = ("x = self.patch_embedding(images)  # (B, N + 1, D)\n        for block in self.blocks:\n"
                     "            x = block(x)  # (B, N + 1, D)")
BLOCKS = ("nn.ModuleList([PreNormBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout)\n"
          "                                     for _ in range(num_layers)])")
HEAD_INIT = "self.head = nn.Linear(embed_dim, num_classes)"
PRE_ATTENTION = "attended, attention = self.attention(self.norm1(x), return_attention=True)"
ATTENDED = "x = x + self.dropout(attended)"
FED_FORWARD = "x = x + self.dropout(self.feedforward(self.norm2(x)))"
COLLECTED = "maps.append(attention)"
CHAINED = "x, attention = block(x, return_attention=True)"

MODEL_MUTANTS = [
    Mutant(3, "mean of the patches", ((READOUT, "return self.head(self.final_norm(x[:, 1:].mean(dim=1)))"),),
           _probes.MEAN_PATCHES),
    Mutant(3, "mean of all tokens", ((READOUT, "return self.head(self.final_norm(x.mean(dim=1)))"),),
           _probes.MEAN_TOKENS),
    Mutant(3, "last token", ((READOUT, "return self.head(self.final_norm(x[:, -1]))"),), _probes.LAST_TOKEN),
    Mutant(3, "missing final norm", ((READOUT, "return self.head(x[:, 0])"),), _probes.NO_FINAL_NORM),
    Mutant(3, "final norm before the blocks",
           ((EMBED_THEN_BLOCKS, EMBED_THEN_BLOCKS.replace("x = self.patch_embedding(images)",
                                                          "x = self.final_norm(self.patch_embedding(images))")),
            (READOUT, "return self.head(x[:, 0])")), _probes.FINAL_NORM_FIRST),
    Mutant(3, "head on every token", ((READOUT, "return self.head(self.final_norm(x))"),), _model.HEAD_EVERY_TOKEN),
    Mutant(3, "post-norm blocks", ((PRE_ATTENTION, PRE_ATTENTION.replace("self.norm1(x)", "x")),
                                   (ATTENDED, "x = self.norm1(x + self.dropout(attended))"),
                                   (FED_FORWARD, "x = self.norm2(x + self.dropout(self.feedforward(x)))")),
           _probes.POST_NORM),
    Mutant(3, "blocks sharing one module",
           ((BLOCKS, "nn.ModuleList([PreNormBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout)] * "
                     "num_layers)"),), _model.SHARED_BLOCKS),
    Mutant(3, "dropout applied at eval",
           ((HEAD_INIT, HEAD_INIT + "\n        self.dropout = dropout"),
            (EMBED_THEN_BLOCKS, EMBED_THEN_BLOCKS.replace(
                "x = self.patch_embedding(images)", "x = nn.functional.dropout(self.patch_embedding(images), "
                                                    "self.dropout)"))), _model.DROPOUT_AT_EVAL),
    Mutant(3, "dropout not passed to the blocks", ((BLOCKS, BLOCKS.replace(", dropout=dropout)", ")")),),
           _model.DROPOUT_NOT_PASSED),
    Mutant(3, "maps in reverse order", (("return maps\n", "return maps[::-1]\n"),), _model.REVERSED),
    Mutant(3, "only the last block's map", (("return maps\n", "return [maps[-1]]\n"),), _model.ONLY_LAST),
    Mutant(3, "maps averaged over heads", ((COLLECTED, "maps.append(attention.mean(dim=1))"),),
           _model.HEADS_AVERAGED),
    Mutant(3, "forward_attention does not chain the blocks",
           ((CHAINED, CHAINED.replace("x, attention", "_, attention")),), _model.DISAGREES),
]

# ---- Task 5: attention_rollout (the vit-model helper's block) ----
HEADS_MEAN = "mixed = attention.mean(dim=1)  # (B, T, T), the heads averaged"
IDENTITY = ("        mixed = mixed + torch.eye(mixed.size(-1), dtype=mixed.dtype, device=mixed.device)  "
            "# the residual path\n")
RENORMALISED = "        mixed = mixed / mixed.sum(dim=-1, keepdim=True)  # (B, T, T), rows sum to 1 again\n"
ROLLED = "rollout = mixed if rollout is None else mixed @ rollout  # (B, T, T)"

ROLLOUT_MUTANTS = [
    Mutant(5, "no identity for the residual", ((IDENTITY, ""),), _rollout.NO_IDENTITY),
    Mutant(5, "rows not renormalised", ((RENORMALISED, ""),), _rollout.NOT_RENORMALISED),
    Mutant(5, "identity added after renormalising", ((IDENTITY + RENORMALISED, RENORMALISED + IDENTITY),),
           _rollout.NOT_RENORMALISED),
    Mutant(5, "columns renormalised", ((RENORMALISED, RENORMALISED.replace("dim=-1", "dim=-2")),), _rollout.COLUMNS),
    Mutant(5, "layers multiplied in the wrong order", ((ROLLED, ROLLED.replace("mixed @ rollout", "rollout @ mixed")),),
           _rollout.WRONG_ORDER),
    Mutant(5, "max over heads", ((HEADS_MEAN, HEADS_MEAN.replace(".mean(dim=1)", ".amax(dim=1)")),),
           _rollout.MAX_HEADS),
    Mutant(5, "heads summed", ((HEADS_MEAN, HEADS_MEAN.replace(".mean(dim=1)", ".sum(dim=1)")),), _rollout.SUM_HEADS),
    Mutant(5, "last layer only", ((ROLLED, "rollout = mixed"),), _rollout.LAST_LAYER),
    Mutant(5, "first layer only", ((ROLLED, "rollout = mixed if rollout is None else rollout"),),
           _rollout.FIRST_LAYER),
    Mutant(5, "only the [CLS] row", (("    return rollout\n", "    return rollout[:, 0]\n"),), _rollout.CLS_ROW),
    Mutant(5, "identity of a fixed dtype", ((IDENTITY, IDENTITY.replace("dtype=mixed.dtype", "dtype=torch.float64")),),
           "the dtype should follow the input"),
    Mutant(5, "maps detached", ((HEADS_MEAN, HEADS_MEAN.replace("attention.mean", "attention.detach().mean")),),
           _rollout.DETACHED),
]

MUTANTS = [*PATCHES_MUTANTS, *EMBEDDING_MUTANTS, *MODEL_MUTANTS, *ROLLOUT_MUTANTS]
