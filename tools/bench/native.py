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


def encoder_layer(reference, num_heads, feedforward_dim, activation, norm_first=False):
    """nn.TransformerEncoderLayer (batch first, no dropout) with a reference encoder block's weights.

    Args:
        reference: the reference block (attention, feedforward with two Linears, norm1, norm2), post-norm or
            pre-norm.
        num_heads, feedforward_dim: what the reference block was built with.
        activation: nn.TransformerEncoderLayer's activation, as it takes it: "gelu", "relu" or a module instance.
        norm_first: True for a pre-norm block (x + attention(norm1(x))), False for a post-norm one.

    Returns:
        The nn.TransformerEncoderLayer, mapping (B, L, D) to (B, L, D).
    """
    embed_dim = reference.norm1.normalized_shape[0]
    layer = nn.TransformerEncoderLayer(embed_dim, num_heads, feedforward_dim, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first)
    load_attention(layer.self_attn, reference.attention)
    first, last = [m for m in reference.feedforward.modules() if isinstance(m, nn.Linear)]
    for native, ours in ((layer.linear1, first), (layer.linear2, last), (layer.norm1, reference.norm1),
                         (layer.norm2, reference.norm2)):
        native.load_state_dict(ours.state_dict())
    return layer


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
