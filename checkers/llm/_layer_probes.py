"""Probes of a student's RMSNorm and SwiGLU whose values differ and match no known mistake: fixed weights and inputs
that isolate one part (the norm's denominator, the gate's nonlinearity), read against what the task's formula gives.
They name a mistake only when the part's values match it, and otherwise say nothing (the check then shows the
values that differ)."""
import math

import torch
import torch.nn.functional as F

from .._core import Diagnosis
from .._modules import build, load
from ._roles import rms_norm_slots, swiglu_slots

RMS_MEAN_ABS = Diagnosis(
    "rms-mean-abs",
    "the norm divides by the mean of |x|: a row with one non-zero entry comes out D times it, where x / sqrt(mean(x²)) "
    "gives √D times it; divide by torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps).")
RMS_LENGTH = Diagnosis(
    "rms-vector-length",
    "the norm divides by the row's length, sqrt(sum(x²)), not by the root of the mean square: the output is √D times "
    "too small; take the mean over the last dimension, not the sum.")
GATES = {"tanh": torch.tanh, "ReLU": F.relu, "GELU": F.gelu, "no nonlinearity": lambda g: g}
SWIGLU_OTHER_GATE = Diagnosis(
    "swiglu-other-gate",
    "the gate applies {gate} where SwiGLU's gate is silu(g) = g·sigmoid(g): use F.silu(self.gate_proj(x)).")

SWIGLU_SILU_ON_INPUT = Diagnosis(
    "swiglu-silu-on-input",
    "silu is applied to x before gate_proj (gate_proj(silu(x))): apply it to gate_proj's output, "
    "F.silu(self.gate_proj(x)).")


def rms_denominator(task, RMSNorm, embed_dim):
    """The diagnosis of an RMSNorm that divides by something else than the root mean square, or None: a row with
    one non-zero entry c, weight ones, gives √D (the task's), D (mean |x|) or 1 (the row's length) at that entry."""
    norm = load(task, build(task, RMSNorm, "RMSNorm", embed_dim, eps=1e-12), rms_norm_slots,
                {"weight": torch.ones(embed_dim)}, "RMSNorm")
    row = torch.zeros(1, embed_dim)
    row[0, 0] = 3.0
    with torch.no_grad():
        got = float(task.call("RMSNorm on a row with one non-zero entry", norm, row)[0, 0])
    for value, diagnosis in ((embed_dim, RMS_MEAN_ABS), (1.0, RMS_LENGTH)):
        if math.isclose(got, value, rel_tol=1e-3) and not math.isclose(value, math.sqrt(embed_dim)):
            return diagnosis
    return None


def swiglu_gate(task, SwiGLU, embed_dim, hidden_dim):
    """The diagnosis of a SwiGLU whose gate is another nonlinearity, or None: gate_proj reads x[0], up_proj reads
    x[1] (fed 1), down_proj writes hidden unit 0 to output 0, so output 0 is gate(2 x[0])."""
    weights = {name: torch.zeros(shape) for name, shape in (("gate_proj.weight", (hidden_dim, embed_dim)),
                                                            ("up_proj.weight", (hidden_dim, embed_dim)),
                                                            ("down_proj.weight", (embed_dim, hidden_dim)))}
    weights["up_proj.weight"][0, 1] = weights["down_proj.weight"][0, 0] = 1.0
    weights["gate_proj.weight"][0, 0] = 2.0  # x[0] = g / 2: silu of the gate's output tells silu of its input
    ffn = load(task, build(task, SwiGLU, "SwiGLU", embed_dim, hidden_dim), swiglu_slots, weights, "SwiGLU")
    g = torch.linspace(-3, 3, 13, dtype=torch.float64)  # (13,)
    x = torch.zeros(13, embed_dim, dtype=torch.float64)
    x[:, 0], x[:, 1] = g / 2, 1.0
    with torch.no_grad():
        got = task.call("SwiGLU on inputs that isolate the gate", ffn.double(), x)[:, 0]  # (13,)
    if torch.allclose(got, F.silu(g), atol=1e-6):
        return None
    if torch.allclose(got, 2 * F.silu(g / 2), atol=1e-6):
        return SWIGLU_SILU_ON_INPUT
    gate = next((name for name, fn in GATES.items() if torch.allclose(got, fn(g), atol=1e-4)), None)
    return SWIGLU_OTHER_GATE.format(gate=gate) if gate else None
