"""Name the weights of a student's TransformerForSequenceClassification and Linformer classes by their role.

Roles follow the pinned API: the shared attention and block roles, plus cls_token, input_embedding, encoder.<i> and
classifier for the model; a Linformer attention adds its sequence projections e_proj and f_proj.
"""
import torch.nn as nn

from .._weights import ATTENTION_PROJECTIONS, MissingPart, _child, _linear, attention_slots, block_slots, encoder_blocks

__all__ = ["LINFORMER_PROJECTIONS", "MissingPart", "attention_slots", "block_slots", "classifier_slots",
           "encoder_blocks", "linformer_attention_slots", "linformer_block_slots", "linformer_classifier_slots"]

LINFORMER_PROJECTIONS = ATTENTION_PROJECTIONS + ("e_proj", "f_proj")


def classifier_slots(model, projections=ATTENTION_PROJECTIONS):
    """Role name -> parameter for a sequence classifier with a [CLS] token."""
    cls_token = getattr(model, "cls_token", None)
    if not isinstance(cls_token, nn.Parameter):
        raise MissingPart(f"`cls_token` should be an nn.Parameter, found {type(cls_token).__name__}")
    slots = {"cls_token": cls_token}
    slots.update(_linear(_child(model, "input_embedding", nn.Linear, ""), "input_embedding"))
    for index, block in enumerate(encoder_blocks(model)):
        slots.update(block_slots(block, f"encoder.{index}.", projections))
    slots.update(_linear(_child(model, "classifier", nn.Linear, ""), "classifier"))
    return slots


def linformer_attention_slots(attention, path=""):
    """Role name -> parameter for a LinformerAttention: the attention roles and e_proj, f_proj."""
    return attention_slots(attention, path, LINFORMER_PROJECTIONS)


def linformer_block_slots(block, path=""):
    """Role name -> parameter for a LinformerBlock (its attention a LinformerAttention)."""
    return block_slots(block, path, LINFORMER_PROJECTIONS)


def linformer_classifier_slots(model):
    """Role name -> parameter for a LinformerForSequenceClassification."""
    return classifier_slots(model, LINFORMER_PROJECTIONS)
