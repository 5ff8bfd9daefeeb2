"""Correct answers to vit Tasks 3 and 5 written differently from the reference: each must pass its check.

Every model builder takes the reference namespace (for the provided PreNormBlock and Task 2's PatchEmbedding) and
returns the student's class; every rollout variant is the student's function.
"""
import functools

import torch
import torch.nn as nn


# ----- Task 3: VisionTransformer ----------------------------------------------------------------------------------

def model_with_a_shared_helper(ns):
    """forward and forward_attention share one helper; the head created first, num_patches stored, dropout on the
    embeddings, the [CLS] state taken with select()."""
    embedding_class, block_class = ns["PatchEmbedding"], ns["PreNormBlock"]

    class Model(nn.Module):
        def __init__(self, image_size, patch_size, in_channels, num_classes, embed_dim, num_heads, feedforward_dim,
                     num_layers, dropout=0.0):
            super().__init__()
            self.head = nn.Linear(embed_dim, num_classes)
            self.num_patches = (image_size // patch_size) ** 2
            self.final_norm = nn.LayerNorm(embed_dim)
            self.embedding_dropout = nn.Dropout(dropout)
            self.blocks = nn.ModuleList()
            for _ in range(num_layers):
                self.blocks.append(block_class(embed_dim, num_heads, feedforward_dim, activation=nn.GELU,
                                               dropout=dropout))
            self.patch_embedding = embedding_class(image_size, patch_size, in_channels, embed_dim)

        def _run(self, images):
            x, maps = self.embedding_dropout(self.patch_embedding(images)), []
            for block in self.blocks:
                x, attention = block(x, return_attention=True)
                maps.append(attention)
            return x, maps

        def forward(self, images):
            return self.head(self.final_norm(self._run(images)[0].select(1, 0)))

        def forward_attention(self, images):
            return self._run(images)[1]

    return Model


def model_with_hooks(ns):
    """Blocks in an nn.Sequential run as one module; forward_attention records each block's attention with forward
    hooks during forward; the [CLS] token split off with x[:, :1].squeeze(1)."""
    embedding_class, block_class = ns["PatchEmbedding"], ns["PreNormBlock"]

    class Model(nn.Module):
        def __init__(self, image_size, patch_size, in_channels, num_classes, embed_dim, num_heads, feedforward_dim,
                     num_layers, dropout=0.0):
            super().__init__()
            self.patch_embedding = embedding_class(image_size, patch_size, in_channels, embed_dim)
            self.blocks = nn.Sequential(*[block_class(embed_dim, num_heads, feedforward_dim, dropout=dropout)
                                          for _ in range(num_layers)])
            self.final_norm = nn.LayerNorm(embed_dim)
            self.head = nn.Linear(embed_dim, num_classes)

        def forward(self, images):
            x = self.blocks(self.patch_embedding(images))
            cls_state, _patches = x[:, :1].squeeze(1), x[:, 1:]
            return self.head(self.final_norm(cls_state))

        def forward_attention(self, images):
            maps = []
            hooks = [block.attention.register_forward_hook(lambda module, args, output: maps.append(output[1]))
                     for block in self.blocks]
            try:
                self(images)
            finally:
                for hook in hooks:
                    hook.remove()
            return maps

    return Model


def model_norming_every_token(ns):
    """final_norm and head applied to every token, then the [CLS] row kept (LayerNorm and Linear act per token, so
    the [CLS] logits are the same); blocks of the student's own pre-norm class built on the provided attention."""
    return model_with_its_own_blocks(ns, post_norm=False)


def model_with_its_own_blocks(ns, post_norm):
    """model_norming_every_token's model; with post_norm, a mistake: its own block normalises after each residual."""
    embedding_class, attention_class = ns["PatchEmbedding"], ns["MultiheadAttention"]

    class OwnPreNormBlock(nn.Module):
        def __init__(self, embed_dim, num_heads, feedforward_dim, dropout):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(embed_dim), nn.LayerNorm(embed_dim)
            self.attention = attention_class(embed_dim, num_heads)
            self.feedforward = nn.Sequential(nn.Linear(embed_dim, feedforward_dim), nn.GELU(), nn.Dropout(0.0),
                                             nn.Linear(feedforward_dim, embed_dim))
            self.dropout = nn.Dropout(dropout)

        def forward(self, x, return_attention=False):
            if post_norm:
                attended, attention = self.attention(x, return_attention=True)
                x = self.norm1(x + self.dropout(attended))
                x = self.norm2(x + self.dropout(self.feedforward(x)))
                return (x, attention) if return_attention else x
            attended, attention = self.attention(self.norm1(x), return_attention=True)
            x = x + self.dropout(attended)
            x = x + self.dropout(self.feedforward(self.norm2(x)))
            return (x, attention) if return_attention else x

    class Model(nn.Module):
        def __init__(self, image_size, patch_size, in_channels, num_classes, embed_dim, num_heads, feedforward_dim,
                     num_layers, dropout=0.0):
            super().__init__()
            self.patch_embedding = embedding_class(image_size, patch_size, in_channels, embed_dim)
            self.blocks = nn.ModuleList([OwnPreNormBlock(embed_dim, num_heads, feedforward_dim, dropout)
                                         for _ in range(num_layers)])
            self.final_norm = nn.LayerNorm(embed_dim)
            self.head = nn.Linear(embed_dim, num_classes)

        def forward(self, images):
            x = self.patch_embedding(images)
            for block in self.blocks:
                x = block(x)
            return self.head(self.final_norm(x))[:, 0]

        def forward_attention(self, images):
            x, maps = self.patch_embedding(images), []
            for block in self.blocks:
                x, attention = block(x, return_attention=True)
                maps += [attention]
            return tuple(maps)

    return Model


# ----- Task 5: attention_rollout ----------------------------------------------------------------------------------

def rollout_half_and_half(attention_maps):
    """0.5 * A + 0.5 * I: the same as renormalising A + I when A's rows sum to 1."""
    rollout = None
    for attention in attention_maps:
        eye = torch.eye(attention.size(-1), dtype=attention.dtype)
        mixed = 0.5 * attention.mean(dim=1) + 0.5 * eye
        rollout = mixed if rollout is None else torch.bmm(mixed, rollout)
    return rollout


def rollout_from_the_identity(attention_maps):
    """R_0 = I, then R_l = A_l @ R_(l-1) for every layer, on the stacked maps, with einsum."""
    stacked = torch.stack(list(attention_maps))  # (L, B, H, T, T)
    mixed = stacked.mean(dim=2) + torch.eye(stacked.size(-1)).to(stacked)  # (L, B, T, T)
    mixed = mixed / mixed.sum(dim=-1, keepdim=True)
    rollout = torch.eye(stacked.size(-1)).to(stacked).expand_as(mixed[0])  # (B, T, T)
    for layer in mixed:
        rollout = torch.einsum("bij,bjk->bik", layer, rollout)
    return rollout


def rollout_by_reduce(attention_maps):
    """functools.reduce over the renormalised maps; the identity built with diag_embed."""
    def renormalised(attention):
        mixed = attention.mean(dim=1)
        mixed = mixed + torch.diag_embed(torch.ones_like(mixed[..., 0]))
        return mixed / mixed.sum(dim=-1, keepdim=True)
    return functools.reduce(lambda rollout, mixed: mixed @ rollout, map(renormalised, attention_maps))
