"""Facts the grader records of the gpt assignment's modules, as plain data (how to read them, nothing of what they
should be): a case names one as "checkers.gpt._facts:<function>"."""
import torch

from .._facts import plain


def rotary(module):
    """How a rotary embedding module keeps its tables `cos` and `sin`: registered buffers, left out of the
    state_dict, their dtype and shape (each a pair, cos then sin)."""
    names, buffers, saved = ("cos", "sin"), dict(module.named_buffers(recurse=False)), module.state_dict()
    tables = [getattr(module, name, None) for name in names]
    return {"buffers": [name in buffers for name in names], "saved": [name in saved for name in names],
            "dtype": [str(t.dtype) if isinstance(t, torch.Tensor) else None for t in tables],
            "shape": [list(t.shape) if isinstance(t, torch.Tensor) else None for t in tables]}


def max_len(module):
    """The model's `max_len` attribute (a generation loop may read it), as plain data."""
    return {"value": plain(getattr(module, "max_len", None))}


def rotary_pairs(attention):
    """The width of an attention module's rotary table `rotary.cos` (head_dim // 2 for the pinned RoPE), or None."""
    cos = getattr(getattr(attention, "rotary", None), "cos", None)
    return int(cos.shape[-1]) if isinstance(cos, torch.Tensor) and cos.dim() == 2 else None


def rotary_tables(attention):
    """The shape of an attention module's rotary table `rotary.cos` ((max_len, head_dim // 2) for the pinned RoPE)."""
    cos = getattr(getattr(attention, "rotary", None), "cos", None)
    return {"shape": list(cos.shape) if isinstance(cos, torch.Tensor) else None}
