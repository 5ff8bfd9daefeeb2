"""Torch-native layers holding a reference layer's weights, shared by the assignments' bench modules."""
import torch
import torch.nn as nn


def load_attention(native, reference):
    """Copy the reference's q/k/v/o projections into an nn.MultiheadAttention.

    nn.MultiheadAttention keeps q, k and v stacked in that order in in_proj_weight (3D, D) and splits
    it the same way, so the stacked copy computes the same heads.
    """
    projections = (reference.q_proj, reference.k_proj, reference.v_proj)
    with torch.no_grad():
        native.in_proj_weight.copy_(torch.cat([p.weight for p in projections]))
        native.in_proj_bias.copy_(torch.cat([p.bias for p in projections]))
        native.out_proj.load_state_dict(reference.o_proj.state_dict())


class Bound(nn.Module):
    """A layer called on one input x, its other arguments fixed (tensors kept as buffers, so .to() moves them).

    The bench's checks and timings (tools/bench/timing.py) call a module on one tensor; a decoder block or a
    cross-attention also needs a memory and masks, bound here.

    Args:
        layer: the module to call as layer(x, **arguments).
        **arguments: keyword arguments of every call (tensors or None).
    """

    def __init__(self, layer, **arguments):
        super().__init__()
        self.layer, self.names = layer, list(arguments)
        for name, value in arguments.items():
            self.register_buffer(name, value, persistent=False)

    def forward(self, x):
        """x -> layer(x, **arguments)."""
        return self.layer(x, **{name: getattr(self, name) for name in self.names})
