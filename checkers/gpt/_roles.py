"""Name the weights of a student's GPTBlock and GPT by their role, so fixed test weights can be loaded into them.

Roles follow the pinned API (attention.q_proj, feedforward, norm1, norm2, token_embedding, blocks.<i>, final_norm),
not parameter registration order. The head is tied to the token embedding, so it has no role of its own.
"""
import torch
import torch.nn as nn

from .._weights import _child, block_slots, encoder_blocks

__all__ = ["block_slots", "gpt_slots", "gpt_blocks", "same_cache"]


def gpt_blocks(model):
    """The blocks of model.blocks (an nn.ModuleList or nn.Sequential), a block listed twice included."""
    return encoder_blocks(model, "blocks")


def gpt_slots(model):
    """Role name -> parameter for a GPT: token_embedding.weight, blocks.<i>.*, final_norm.weight and .bias."""
    slots = {"token_embedding.weight": _child(model, "token_embedding", nn.Embedding, "").weight}
    for index, block in enumerate(gpt_blocks(model)):
        slots.update(block_slots(block, f"blocks.{index}."))
    norm = _child(model, "final_norm", nn.LayerNorm, "")
    slots.update({f"final_norm.{key}": value for key, value in (("weight", norm.weight), ("bias", norm.bias))
                  if value is not None})
    return slots


def same_cache(got, given):
    """Whether got is the cache given, or holds the same tensors (a tuple rebuilt from its parts is the same cache)."""
    if got is given:
        return True
    if isinstance(got, (tuple, list)) and isinstance(given, (tuple, list)) and len(got) == len(given):
        return all(same_cache(a, b) for a, b in zip(got, given))
    return isinstance(got, torch.Tensor) and isinstance(given, torch.Tensor) and got.shape == given.shape \
        and torch.equal(got, given)
