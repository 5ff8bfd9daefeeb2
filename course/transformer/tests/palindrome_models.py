"""A perfect palindrome classifier built by hand: an independent route to a correct 'trained' model."""
import torch
import torch.nn as nn


def mirror_logits(x, scale=10.0):
    """One logit per sequence, positive exactly when the one-hot x (B, L, V) equals its reversal. Returns (B, 1)."""
    mismatch = (x - x.flip(1)).abs().sum((1, 2))  # (B,): 0 exactly for palindromes
    return (scale * (0.5 - mismatch.clamp(max=1.0))).unsqueeze(1)


class MirrorModel(nn.Module):
    """nn.Module around mirror_logits.

    Args:
        flip_every: if set, negate every flip_every-th answer (wrong on a known share of the examples).
        seq_len: if set, add an e_proj = nn.Linear(seq_len + 1, 4), from which the Linformer check reads the length.
    """

    def __init__(self, flip_every=0, seq_len=None):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(10.0))
        self.flip_every = flip_every
        if seq_len is not None:
            self.e_proj = nn.Linear(seq_len + 1, 4)

    def forward(self, x):
        logits = mirror_logits(x, self.scale)  # (B, 1)
        if self.flip_every:
            logits[:: self.flip_every] *= -1
        return logits
