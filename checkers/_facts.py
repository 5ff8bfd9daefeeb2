"""Read facts of a module as plain data (ints, strings, booleans, lists), for the grader's records.

These readers name no attribute of their own: an assignment's facts module (checkers/<assignment>/_facts.py) binds
them to its pinned attribute names, and a case names that module's function as "module:function".
"""
import torch
import torch.nn as nn


def plain(value):
    """A plain int or str as data; anything else (a str subclass, a float, an object) as its type's name."""
    if type(value) in (int, str, bool):
        return value
    return {"type": type(value).__name__}


def parameter_facts(module, name):
    """How the module keeps its tensor attribute `name`: a tensor at all, an nn.Parameter, trainable, how many
    numbers it holds."""
    tensor = getattr(module, name, None)
    if not isinstance(tensor, torch.Tensor):
        return {"tensor": False}
    return {"tensor": True, "parameter": isinstance(tensor, nn.Parameter), "trainable": tensor.requires_grad,
            "numel": tensor.numel()}
