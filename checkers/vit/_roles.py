"""Name the weights of a student's PatchEmbedding and VisionTransformer by their role, so fixed test weights can be
loaded into them.

Roles follow the pinned API (projection, cls_token, position_embedding; patch_embedding.*, blocks.<i>, final_norm,
head), not parameter registration order.
"""
import re

import torch
import torch.nn as nn

from .._weights import MissingPart, _child, _linear, block_slots, encoder_blocks

__all__ = ["MissingPart", "attribute_path", "patch_embedding_slots", "vit_blocks", "vit_slots"]


def _parameter(module, name, path):
    part = getattr(module, name, None)
    if not isinstance(part, torch.Tensor):
        found = "nothing" if part is None else type(part).__name__
        raise MissingPart(f"`{path}{name}` should be an nn.Parameter, found {found}")
    return part


def patch_embedding_slots(embedding, path=""):
    """Role name -> tensor for a PatchEmbedding: projection.weight and .bias, cls_token, position_embedding."""
    slots = _linear(_child(embedding, "projection", nn.Linear, path), f"{path}projection")
    for name in ("cls_token", "position_embedding"):
        slots[f"{path}{name}"] = _parameter(embedding, name, path)
    return slots


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
