"""Name the weights of a student's RMSNorm and SwiGLU by their pinned roles, so fixed test weights load into them."""
import torch.nn as nn

from .._weights import MissingPart, _child, _linear

SWIGLU_LINEARS = ("gate_proj", "up_proj", "down_proj")


def rms_norm_slots(norm):
    """{"weight": the parameter} of an RMSNorm."""
    weight = getattr(norm, "weight", None)
    if not isinstance(weight, nn.Parameter):
        found = "nothing" if weight is None else type(weight).__name__
        raise MissingPart(f"`weight` should be an nn.Parameter, found {found}")
    return {"weight": weight}


def swiglu_slots(ffn):
    """{"gate_proj.weight": ..., ...} of a SwiGLU (a bias, if any, under "<name>.bias")."""
    slots = {}
    for name in SWIGLU_LINEARS:
        slots.update(_linear(_child(ffn, name, nn.Linear, ""), name))
    return slots
