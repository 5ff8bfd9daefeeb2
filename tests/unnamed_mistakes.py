"""Plausible student mistakes that no planted mistake (tools/mistakes.py) and no stored output describes.

Each is written independently of the reference, the way a student might; the checkers must still say which
property fails (tests/test_checker_properties.py), not only that the values differ.
"""
import math

import torch
import torch.nn as nn


# ----- Task 1: scaled_softmax_attention -----------------------------------------------------------

def _masked(scores, mask):
    return scores if mask is None else scores.masked_fill(mask == 0, float("-inf"))


def attention_softmax_dim_1(query, key, value, mask=None):
    """softmax(dim=1): the last axis only for 2-D inputs."""
    attention = torch.softmax(_masked(query @ key.transpose(-2, -1) / math.sqrt(query.size(-1)), mask), dim=1)
    return attention @ value, attention


def attention_scale_shape_1(query, key, value, mask=None):
    """sqrt(query.shape[1]): the feature size only for 2-D inputs."""
    attention = torch.softmax(_masked(query @ key.transpose(-2, -1) / math.sqrt(query.shape[1]), mask), dim=-1)
    return attention @ value, attention


def attention_dot_T(query, key, value, mask=None):
    """key.T: reverses every axis of a batched key."""
    attention = torch.softmax(_masked(query @ key.T / math.sqrt(query.size(-1)), mask), dim=-1)
    return attention @ value, attention


def attention_scale_by_value_width(query, key, value, mask=None):
    """Scaled by the width of the values instead of the queries' feature size."""
    attention = torch.softmax(_masked(query @ key.transpose(-2, -1) / math.sqrt(value.size(-1)), mask), dim=-1)
    return attention @ value, attention
