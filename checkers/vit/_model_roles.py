"""Name the weights of a student's VisionTransformer by their role, so fixed test weights can be loaded into it.

Roles follow the pinned API (patch_embedding.projection, .cls_token, .position_embedding, blocks.<i>, final_norm,
head), not parameter registration order.
"""
import re

import torch.nn as nn

from .._weights import MissingPart, _child, _linear, block_slots, encoder_blocks
from ._roles import patch_embedding_slots

__all__ = ["MissingPart", "attribute_path", "vit_blocks", "vit_slots"]


def vit_blocks(model):
    """The blocks of model.blocks (an nn.ModuleList or nn.Sequential), a block listed twice included."""
    return encoder_blocks(model, "blocks")


def vit_slots(model):
    """Role name -> parameter for a VisionTransformer: patch_embedding.*, blocks.<i>.*, final_norm.*, head.*."""
    embedding = _child(model, "patch_embedding", nn.Module, "")
    slots = patch_embedding_slots(embedding, "patch_embedding.")
    for index, block in enumerate(vit_blocks(model)):
        slots.update(block_slots(block, f"blocks.{index}."))
    norm = _child(model, "final_norm", nn.LayerNorm, "")
    slots.update({f"final_norm.{key}": value for key, value in (("weight", norm.weight), ("bias", norm.bias))
                  if value is not None})
    slots.update(_linear(_child(model, "head", nn.Linear, ""), "head"))
    return slots


def attribute_path(model, tensor, role):
    """The student's own path to tensor in model, indices in brackets (blocks[0].feedforward[0].weight); else role."""
    for name, candidate in [*model.named_parameters(), *model.named_buffers()]:
        if candidate is tensor:
            return re.sub(r"\.(\d+)", r"[\1]", name)
    return role
