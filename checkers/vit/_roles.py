"""Name the weights of a student's PatchEmbedding and VisionTransformer by their role, so fixed test weights can be
loaded into them (and a trained model's weights read out by role).

Roles follow the pinned API (projection, cls_token, position_embedding), not parameter registration order.
"""
import torch
import torch.nn as nn

from .._weights import MissingPart, _child, _linear, block_slots, encoder_blocks

__all__ = ["MissingPart", "patch_embedding_slots", "vision_transformer_slots"]


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


def vision_transformer_slots(model):
    """Role name -> parameter for a VisionTransformer: patch_embedding.*, blocks.<i>.* (attention.q_proj ...,
    feedforward.in/.out, norm1, norm2), final_norm.weight and .bias, head.weight and .bias."""
    slots = patch_embedding_slots(_child(model, "patch_embedding", nn.Module, ""), "patch_embedding.")
    for index, block in enumerate(encoder_blocks(model, "blocks")):
        slots.update(block_slots(block, f"blocks.{index}."))
    norm = _child(model, "final_norm", nn.LayerNorm, "")
    slots.update({f"final_norm.{key}": value for key, value in (("weight", norm.weight), ("bias", norm.bias))
                  if value is not None})
    slots.update(_linear(_child(model, "head", nn.Linear, ""), "head"))
    return slots
