"""Property probes of a LinformerAttention whose weights are wrong: what its sequence projections E (e_proj) and
F (f_proj) may and may not change. They run inside explain_heads (its `variant`), once the heads are split right.
"""
import torch

from .._probes import _with_change


def explain_compressions(task, what, layer, x, attention, slots, generator, num_heads):
    """Changing E (e_proj) must change the attention weights, changing F (f_proj) must not."""
    if "e_proj.weight" not in slots or "f_proj.weight" not in slots:
        return
    bump = lambda weight: weight + torch.randn(weight.shape, generator=generator, dtype=weight.dtype)
    moved = {}
    for role in ("e_proj", "f_proj"):
        changed = _with_change(layer, x, {slots[f"{role}.weight"]: bump})
        if changed is None:
            return
        moved[role] = not torch.allclose(changed[1], attention, atol=1e-9)
    if moved["f_proj"] or not moved["e_proj"]:
        observed = "changing f_proj changes the attention weights" if moved["f_proj"] else \
            "changing e_proj changes no attention weight"
        task.fail(f"{what}: {observed}: compress the keys with e_proj (E), which the weights depend "
                  "on, and the values with f_proj (F), which they do not.")
    _explain_mixed_key_features(task, what, layer, x, slots, num_heads)


def _explain_mixed_key_features(task, what, layer, x, slots, num_heads):
    """When the queries have one nonzero feature per head, the other key features must not matter."""
    head_dim, generator = x.size(-1) // num_heads, torch.Generator().manual_seed(1)
    others = torch.ones(x.size(-1), dtype=torch.bool)
    others[::head_dim] = False  # feature 0 of every head

    def keep_first(parameter):
        return parameter.masked_fill(others.view(-1, *[1] * (parameter.dim() - 1)), 0)

    def bump_others(weight):
        return weight + others.view(-1, 1) * torch.randn(weight.shape, generator=generator, dtype=weight.dtype)

    first = {slots[role]: keep_first for role in ("q_proj.weight", "q_proj.bias") if role in slots}
    before = _with_change(layer, x, first)
    after = _with_change(layer, x, {**first, slots["k_proj.weight"]: bump_others})
    if before is not None and after is not None and not torch.allclose(before[1], after[1], atol=1e-9):
        task.fail(f"{what}: with queries that are zero except in feature 0 of each head, changing the keys' other "
                  "features changed the attention weights, so the compression mixes features: lay the keys out as "
                  "(B, H, head_dim, L) with transpose, apply e_proj, then transpose (not reshape) back to "
                  "(B, H, proj_dim, head_dim).")
