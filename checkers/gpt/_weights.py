"""A trained GPT's weights by role, with its head checked to be the pinned tied one (Task 7 and its grading).

The roles are those of checkers.gpt._roles.gpt_slots (token_embedding, blocks.<i>, final_norm); the head has no role
of its own because its weight *is* the embedding's, so a head that is not tied (or has a bias) is a MissingPart here:
its weights would otherwise be silently left out of what is judged.
"""
import torch.nn as nn

from .._weights import MissingPart
from ._roles import gpt_slots

__all__ = ["MissingPart", "tied_gpt_slots", "untied"]


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
