"""Name the weights of a student's GPTBlock and GPT by their role, so fixed test weights can be loaded into them.

Roles follow the pinned API (attention.q_proj, feedforward, norm1, norm2, token_embedding, blocks.<i>, final_norm),
not parameter registration order. The head is tied to the token embedding, so it has no role of its own: a head that
is not tied (or has a bias) is a MissingPart for a trained GPT (tied_gpt_slots), whose weights would otherwise be
silently left out of what is judged.
"""
import torch
import torch.nn as nn

from .._weights import MissingPart, _child, attention_slots, block_slots, encoder_blocks

__all__ = ["MissingPart", "attention_slots", "block_slots", "gpt_slots", "gpt_blocks", "same_cache", "tied_gpt_slots",
           "untied"]


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


def tied_gpt_slots(model):
    """Role name -> parameter for a GPT whose head is tied (gpt_slots' roles); MissingPart names what is not."""
    slots = gpt_slots(model)
    problem = untied(model)
    if problem:
        raise MissingPart(problem)
    return slots
