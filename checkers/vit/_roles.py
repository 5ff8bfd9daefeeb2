"""Name the weights of a student's PatchEmbedding by their role, so fixed test weights can be loaded into it.

Roles follow the pinned API (projection, cls_token, position_embedding), not parameter registration order.
"""
import torch
import torch.nn as nn

from .._weights import MissingPart, _child, _linear

__all__ = ["MissingPart", "patch_embedding_slots"]


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
