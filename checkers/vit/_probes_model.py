"""Probes of a VisionTransformer whose parts or outputs are wrong (Task 3), each read off the student's own model.

How many blocks it builds for several num_layers, which constructor argument a wrong size equals, which slice of its
last block's output its head reads, and what its attention maps are computed from. A probe returns a sentence or None.
"""
import torch.nn as nn

from .._compare import matches
from ._build_probes import _feedforward_width
from ._probes_dependence import output_or_none

ATOL, RTOL = 1e-6, 1e-6


def count_rule(build, config, key, count):
    """A clause saying how count(model) follows config[key] when it is off by the same number for 1, 2 and the
    config's own value (or the same whatever the value), else None.

    Args:
        build: config -> the student's model (raising as it does); count: model -> the number to explain.
    """
    found = {}
    for value in sorted({1, 2, config[key]}):
        try:
            found[value] = count(build(dict(config, **{key: value})))
        except Exception:  # noqa: BLE001 -- only a probe
            return None
    offsets = {got - value for value, got in found.items()}
    seen = ", ".join(f"{key}={value} gives {got}" for value, got in found.items())
    if len(set(found.values())) == 1:
        return f"{seen}: the number is fixed instead of following {key}"
    if len(offsets) == 1 and offsets != {0}:
        (offset,) = offsets
        return f"{seen}: always {abs(offset)} {'more' if offset > 0 else 'fewer'} than {key}"
    return None


def plain_list(blocks):
    """A sentence when blocks is a plain Python list or tuple of modules (not registered as submodules)."""
    if not isinstance(blocks, (list, tuple)) or not blocks or not all(isinstance(b, nn.Module) for b in blocks):
        return None
    return (f"should be an nn.ModuleList, not a plain Python {type(blocks).__name__} of {len(blocks)} blocks: "
            "modules kept in a list are not registered, so their weights are not the model's parameters (not "
            "trained, saved or moved by .to); wrap the list, nn.ModuleList([...]).")


def equal_arguments(found, config, wanted):
    """The constructor arguments other than `wanted` whose value is `found`, e.g. ['embed_dim']."""
    return [key for key, value in config.items() if key != wanted and value == found and not isinstance(value, bool)]


def feedforward_from(model, config):
    """A sentence when the blocks' feed-forward width is not feedforward_dim but equals exactly one other argument."""
    width = _feedforward_width(model)
    if width is None or width == config["feedforward_dim"]:
        return None
    same = equal_arguments(width, config, "feedforward_dim")
    if len(same) != 1:
        return None
    return (f"its blocks' feed-forward layer has {width} hidden units, the value of {same[0]}, not feedforward_dim = "
            f"{config['feedforward_dim']}: pass feedforward_dim on, PreNormBlock(embed_dim, num_heads, "
            "feedforward_dim, dropout=dropout).")


READOUTS = {  # how a wrong-shaped readout of the last block's output x (B, T, D) is said
    "x[:, :1]": "the [CLS] token is read with the slice x[:, :1], which keeps a token axis of size 1, (B, 1, K): "
                "index it, head(final_norm(x[:, 0])) -> (B, num_classes)",
    "x[0]": "the head reads x[0], every token of the first image, one row per token: read the [CLS] token of "
            "every image, head(final_norm(x[:, 0])) -> (B, num_classes)",
}


def readout_of(model, last, logits):
    """The sentence of READOUTS whose readout of last (B, T, D) through the student's final_norm and head gives
    logits, or None."""
    norm, head = getattr(model, "final_norm", None), getattr(model, "head", None)
    if not (callable(norm) and callable(head)):
        return None
    slices = {"x[:, :1]": lambda: last[:, :1], "x[0]": lambda: last[0]}
    for name, part in slices.items():
        value = output_or_none(lambda: head(norm(part())))
        if value is not None and value.shape == logits.shape and matches(logits, value, ATOL, RTOL):
            return READOUTS[name]
    return None


def maps_without_norm(blocks, inputs, got):
    """A sentence when each map equals the block's attention run on the block's raw input instead of norm1's output.

    Args:
        blocks: the model's blocks; inputs: what each received during forward (B, T, D); got: the maps (L, B, H, T, T).
    """
    if len(inputs) != len(blocks) or len(got) != len(blocks):
        return None
    for block, x, attention in zip(blocks, inputs, got):
        run = getattr(block, "attention", None)
        raw = output_or_none(lambda run=run, x=x: run(x, return_attention=True)[1]) if callable(run) else None
        if x is None or raw is None or raw.shape != attention.shape or not matches(attention, raw, ATOL, RTOL):
            return None
    return ("its maps are block.attention's weights on the un-normalised tokens, but the block attends to norm1(x): "
            "take the maps the block itself returns, x, attention = block(x, return_attention=True).")


def batch_of_one(model, images, expected):
    """A sentence when one image gives logits without their batch axis, (K,) instead of (1, K)."""
    logits = output_or_none(model, images[:1])
    if logits is None or tuple(logits.shape) != tuple(expected.shape[1:]):
        return None
    return (f"on a batch of one image it returns logits of shape {tuple(logits.shape)}, not "
            f"{(1, *expected.shape[1:])}: the batch axis is dropped (a .squeeze() drops every axis of size 1); keep "
            "it, head(final_norm(x[:, 0])) is already (B, num_classes).")
