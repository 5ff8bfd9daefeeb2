"""Facts the grader records of the transformer assignment's modules, as plain data (how to read them, nothing of what
they should be): a case names one as "checkers.transformer._facts:<function>"."""
import torch
import torch.nn as nn

from .._core import Task, load_fixture
from .._facts import parameter_facts
from .._weights import encoder_blocks
from . import _cls_start
from ._probes_generic import parts_unchanged_by
from ._student_errors import build


def pe(module):
    """How a positional encoding keeps its table `pe`: a tensor, a registered buffer, trainable."""
    table = getattr(module, "pe", None)
    if not isinstance(table, torch.Tensor):
        return {"tensor": False}
    return {"tensor": True, "buffer": any(buffer is table for buffer in module.buffers()),
            "trainable": isinstance(table, nn.Parameter) or table.requires_grad}


def cls_token(module):
    """How a classifier keeps its [CLS] embedding `cls_token` (see parameter_facts)."""
    return parameter_facts(module, "cls_token")


def cls_start(module):
    """Whether fresh models of the module's class, built with Task 5's check's small config, start cls_token like
    N(0, 1) (see _cls_start): {"standard_normal": True or False}, or None when they cannot be built."""
    try:
        start = _cls_start.cls_start(type(module), "TransformerForSequenceClassification",
                          load_fixture(__package__, 5)["config"], Task(5, __package__))
    except Exception:  # noqa: BLE001 -- the student's class may raise anything: nothing to read
        start = None
    return {"standard_normal": None if start is None else _cls_start.like_standard_normal(*start)}


def encoder(module):
    """How many blocks the model's `encoder` holds, and how many of them are distinct objects."""
    blocks = encoder_blocks(module)
    return {"blocks": len(blocks), "distinct": len({id(block) for block in blocks})}


def max_len_used(module):
    """Whether models of the module's class, built with Task 5's check's config and two values of max_len, differ in
    their parameters' and buffers' shapes: {"used": True or False}, or None when they cannot be built."""
    config, task = load_fixture(__package__, 5)["config"], Task(5, __package__)
    make = lambda **changed: build(task, type(module), "TransformerForSequenceClassification",
                                   **dict(config, **changed))
    try:
        unchanged = parts_unchanged_by(make, "max_len", (16, 24))
    except Exception:  # noqa: BLE001 -- the student's class may raise anything: nothing to read
        unchanged = None
    return {"used": None if unchanged is None else not unchanged}
