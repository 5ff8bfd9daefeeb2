"""Valid LoRALinear (Task 8) answers written another way, from the student notebook's task text alone: each must pass
the check and earn the grader's points."""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LinearModulesLoRA(nn.Module):
    """PEFT's layout: A and B as bias-free nn.Linear (A kaiming-uniform as nn.Linear draws it, B zeroed); merge adds
    the update into a deepcopy of base, in place."""

    def __init__(self, base, rank, alpha):
        super().__init__()
        self.base = base
        self.base.requires_grad_(False)
        self.A = nn.Linear(base.in_features, rank, bias=False)  # weight (r, in)
        self.B = nn.Linear(rank, base.out_features, bias=False)  # weight (out, r)
        nn.init.zeros_(self.B.weight)
        self.alpha, self.rank = alpha, rank

    def forward(self, x):
        return self.base(x) + self.B(self.A(x)) * (self.alpha / self.rank)  # (..., in) -> (..., r) -> (..., out)

    def merge(self):
        merged = copy.deepcopy(self.base)
        with torch.no_grad():
            merged.weight.add_(self.B.weight @ self.A.weight, alpha=self.alpha / self.rank)  # (out, in)
        return merged


class MergedWeightLoRA(nn.Module):
    """forward through the merged weight, F.linear(x, W + s B A, b); A drawn from N(0, 1/r²) (PEFT's gaussian);
    merge a new nn.Linear of base's dtype whose Parameters are built from the same weight."""

    def __init__(self, base, rank, alpha):
        super().__init__()
        self.base = base
        for parameter in base.parameters():
            parameter.requires_grad = False
        self.A = nn.Parameter(torch.empty(rank, base.in_features))  # (r, in)
        nn.init.normal_(self.A, std=1 / rank)
        self.B = nn.Parameter(torch.zeros(base.out_features, rank))  # (out, r)
        self.scale = alpha / rank

    def weight(self):
        """W + (alpha / r) B A: (out, in)."""
        return self.base.weight + self.scale * (self.B @ self.A)  # (out, in)

    def forward(self, x):
        return F.linear(x, self.weight(), self.base.bias)  # (..., in) -> (..., out)

    def merge(self):
        merged = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None,
                           dtype=self.base.weight.dtype, device=self.base.weight.device)
        merged.weight = nn.Parameter(self.weight().detach().clone())
        if self.base.bias is not None:
            merged.bias = nn.Parameter(self.base.bias.detach().clone())
        return merged


class EinsumLoRA(nn.Module):
    """The update as one einsum with the scaling on x Aᵀ (the rank-r side); A = randn / √in; merge by
    nn.Linear(...).to(base.weight) and load_state_dict of the summed weight."""

    def __init__(self, base, rank, alpha):
        super().__init__()
        self.base = base.requires_grad_(False)
        self.A = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))  # (r, in)
        self.B = nn.Parameter(torch.zeros(base.out_features, rank))  # (out, r)
        self.scaling = alpha / rank

    def forward(self, x):
        low = torch.einsum("...i,ri->...r", x, self.A) * self.scaling  # (..., r)
        return self.base(x) + torch.einsum("...r,or->...o", low, self.B)  # (..., out)

    def merge(self):
        merged = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None)
        merged = merged.to(self.base.weight)  # the base's dtype and device
        state = {name: value.detach().clone() for name, value in self.base.state_dict().items()}
        state["weight"] = state["weight"] + self.scaling * (self.B @ self.A).detach()  # (out, in)
        merged.load_state_dict(state)
        return merged


class DeepcopyLoRA(nn.Module):
    """The prototype's layout: A and B Parameters, the update as F.linear twice, merge by deepcopy."""

    def __init__(self, base, rank, alpha):
        super().__init__()
        self.base = base
        for parameter in base.parameters():
            parameter.requires_grad = False
        self.A = nn.Parameter(torch.empty(rank, base.in_features))
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
        self.B = nn.Parameter(torch.zeros(base.out_features, rank))
        self.scale = alpha / rank

    def forward(self, x):
        return self.base(x) + nn.functional.linear(nn.functional.linear(x, self.A), self.B) * self.scale

    def merge(self):
        merged = copy.deepcopy(self.base)
        with torch.no_grad():
            merged.weight += self.scale * self.B @ self.A
        return merged


LORA_VARIANTS = [DeepcopyLoRA, LinearModulesLoRA, MergedWeightLoRA, EinsumLoRA]
