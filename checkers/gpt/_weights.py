"""Name the weights of a student's GPT by their role, so fixed test weights (or trained ones) can be loaded into it.

Roles follow the pinned API of the gpt assignment (token_embedding, blocks.<i>.attention.q_proj, ..., final_norm);
the head has no role of its own: its weight *is* the embedding's (tied), and a head that is not is a MissingPart.
"""
import torch.nn as nn

from .._weights import MissingPart, _child, block_slots, encoder_blocks

__all__ = ["MissingPart", "gpt_slots", "untied"]


def untied(model):
    """Why model's lm_head is not the pinned tied head (a sentence), or None when it is."""
    head, embedding = getattr(model, "lm_head", None), getattr(model, "token_embedding", None)
    if not isinstance(head, nn.Linear):
        return f"`lm_head` should be an nn.Linear, found {'nothing' if head is None else type(head).__name__}"
    if head.bias is not None:
        return "`lm_head` has a bias; the pinned head is nn.Linear(embed_dim, vocab_size, bias=False)"
    if isinstance(embedding, nn.Embedding) and head.weight is not embedding.weight:
        return ("`lm_head.weight` is not `token_embedding.weight` (the head is untied): assign the parameter itself, "
                "`self.lm_head.weight = self.token_embedding.weight`")
    return None


def _distinct(slots):
    """Fail when two roles share one tensor: one block listed twice in `blocks` shares its weights."""
    seen = {}
    for role, value in slots.items():
        if id(value) in seen:
            raise MissingPart(f"`{role}` is the same tensor as `{seen[id(value)]}`: each block needs its own layers")
        seen[id(value)] = role
    return slots


def gpt_slots(model):
    """Role name -> parameter for a GPT (token_embedding, blocks.<i>, final_norm; the tied head has no role)."""
    slots = {"token_embedding.weight": _child(model, "token_embedding", nn.Embedding, "").weight}
    for index, block in enumerate(encoder_blocks(model, "blocks")):
        slots.update(block_slots(block, f"blocks.{index}."))
    norm = _child(model, "final_norm", nn.LayerNorm, "")
    slots.update({f"final_norm.{key}": value for key, value in (("weight", norm.weight), ("bias", norm.bias))
                  if value is not None})
    problem = untied(model)
    if problem:
        raise MissingPart(problem)
    return _distinct(slots)
