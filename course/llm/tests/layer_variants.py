"""Valid RMSNorm and SwiGLU answers written another way (from the layers prototype's alternatives): each must pass."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RsqrtRMSNorm(nn.Module):
    """x * rsqrt(mean(x²) + eps) * weight."""

    def __init__(self, embed_dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(embed_dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class TorchRMSNorm(RsqrtRMSNorm):
    """torch's own F.rms_norm (torch >= 2.4) with the layer's weight and eps."""

    def forward(self, x):
        return F.rms_norm(x, (x.size(-1),), self.weight, self.eps)


class UpcastRMSNorm(nn.Module):
    """Llama's layout: eps stored as variance_epsilon, arguments by keyword, the statistic in float32 or wider."""

    def __init__(self, embed_dim=None, eps=1e-6):
        super().__init__()
        self.variance_epsilon = eps
        self.weight = nn.Parameter(torch.ones(embed_dim))

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))


class SequentialGateSwiGLU(nn.Module):
    """An nn.SiLU module as the gate's activation, the projections created in another order."""

    def __init__(self, embed_dim, hidden_dim):
        super().__init__()
        self.down_proj = nn.Linear(hidden_dim, embed_dim, bias=False)
        self.up_proj = nn.Linear(embed_dim, hidden_dim, bias=False)
        self.gate_proj = nn.Linear(embed_dim, hidden_dim, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class HandSiluSwiGLU(SequentialGateSwiGLU):
    """silu written out: g * sigmoid(g)."""

    def forward(self, x):
        gate = self.gate_proj(x)
        return self.down_proj(gate * torch.sigmoid(gate) * self.up_proj(x))
