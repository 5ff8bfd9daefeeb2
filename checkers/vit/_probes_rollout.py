"""Probes of an attention_rollout that is wrong (Task 5), run on stacks of maps they build themselves.

Each probe changes one thing (a layer, the heads after the first, a size) and watches the student's output, so it
names what the function does with its maps whatever code produced it. A probe returns a sentence or None.
"""
import torch

from .._compare import matches
from ._probes_dependence import ATOL, RTOL, output_or_none, sizes_that_run, unread_items


def random_stack(layers, batch, heads, tokens, dtype=torch.float64, seed=0):
    """layers random row-stochastic maps (B, H, T, T), drawn from their own generator."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.softmax(2 * torch.randn(batch, heads, tokens, tokens, generator=generator, dtype=dtype), dim=-1)
            for _ in range(layers)]


def one_layer(attention):
    """The rollout of a single map (B, H, T, T): its head average with the residual's identity, rows summing to 1."""
    average = attention.mean(dim=1)  # (B, T, T)
    with_residual = average + torch.eye(average.size(-1), dtype=average.dtype, device=average.device)
    return with_residual / with_residual.sum(-1, keepdim=True)


def skipped_layers(attention_rollout, maps):
    """A sentence when the output ignores some layers of a stack of three (changing that map changes nothing)."""
    stack = random_stack(3, 2, 3, 5, maps[0].dtype, seed=1)
    other = random_stack(3, 2, 3, 5, maps[0].dtype, seed=2)
    unread = unread_items(attention_rollout, stack, lambda index: other[index])
    if not unread or len(unread) == len(stack):
        return None
    listed = " and ".join(f"attention_maps[{index}]" for index in unread)
    return (f"on three layers its output does not change when {listed} changes: that layer is left out of the "
            "product; multiply every map in, from the first, R_1 = A_1 then R_l = A_l @ R_(l-1).")


def none_for_one_layer(attention_rollout, maps):
    """A sentence for a function that returns None on one map: whether it reads the first map of a longer stack."""
    sentence = skipped_layers(attention_rollout, maps)
    if sentence and "attention_maps[0]" in sentence:
        return f"it returns None for a single map, and {sentence}"
    return None


def only_first_head(attention_rollout, maps):
    """A sentence when the output does not change as the heads after the first change (only head 0 is read)."""
    if maps[0].size(1) < 2:
        return None
    other = random_stack(len(maps), *maps[0].shape[:2], maps[0].size(-1), maps[0].dtype, seed=3)
    changed = [torch.cat([attention[:, :1], replacement[:, 1:]], dim=1) for attention, replacement in zip(maps, other)]
    before, after = output_or_none(attention_rollout, list(maps)), output_or_none(attention_rollout, changed)
    if before is None or after is None or before.shape != after.shape or not matches(after, before, ATOL, RTOL):
        return None
    return ("its output does not change when heads 1 to H - 1 change: only head 0 (attention[:, 0]) is read; "
            "average all the heads, attention.mean(dim=1).")


def first_layer_apart(attention_rollout, maps):
    """A sentence when two layers give later_layer @ (the function's own rollout of the first layer alone) and that
    one-layer rollout is wrong: the first layer is treated unlike the later ones."""
    first, second = random_stack(2, 2, 3, 5, maps[0].dtype, seed=4)
    alone, both = output_or_none(attention_rollout, [first]), output_or_none(attention_rollout, [first, second])
    if alone is None or both is None or alone.shape != both.shape or alone.shape != first.shape[:1] + first.shape[2:]:
        return None
    if matches(alone, one_layer(first), ATOL, RTOL) or not matches(both, one_layer(second) @ alone, ATOL, RTOL):
        return None
    if matches(alone, first.mean(dim=1), ATOL, RTOL):
        return ("the first layer enters as its head average alone, R_1 = mean of A_1, while every later layer "
                "gets the identity added and its rows renormalised: do the same for the first, "
                "R_1 = (A_1 + I) with each row divided by its sum.")
    return ("the later layers are multiplied in right, but the first layer alone gives a wrong rollout: treat the "
            "first map like every other, its head average plus I, rows renormalised.")


def transposed(got, expected):
    """A sentence when got is expected with its last two axes swapped (and is not symmetric)."""
    flipped = got.transpose(-2, -1)
    if matches(got, expected, ATOL, RTOL) or not matches(flipped, expected, ATOL, RTOL):
        return None
    return ("it is the transpose of the rollout: entry (i, j) should say how much token i's output draws on input "
            "j, so that each row sums to 1; yours has that in entry (j, i) (its columns sum to 1): return it "
            "untransposed.")


def whole_matrix_normalised(got, num_layers):
    """A sentence when one layer's rollout sums to 1 over the whole (T, T) matrix instead of over each row."""
    if num_layers != 1:
        return None
    totals, rows = got.sum(dim=(-2, -1)), got.sum(dim=-1)
    if not torch.allclose(totals, torch.ones_like(totals), atol=1e-6) or \
            torch.allclose(rows, torch.ones_like(rows), atol=1e-6):
        return None
    return (f"its rows sum to {rows.mean().item():.4g} = 1 / T and the whole (T, T) matrix to 1: A + I is divided "
            "by the sum of the whole matrix; divide each row by its own sum, .sum(dim=-1, keepdim=True).")


def explain_raise(attention_rollout, maps):
    """A sentence naming the axis that meets another when the function raises on these maps but runs once the batch
    or the number of heads is 1 or T (a (B, T) or (B, H, T) tensor broadcast against a (B, T, T) one)."""
    batch, heads, tokens = maps[0].shape[:3]
    sizes = dict(layers=len(maps), batch=batch, heads=heads, tokens=tokens)
    tried = {"batch": sorted({1, tokens} - {batch}), "heads": sorted({1, tokens} - {heads})}
    ran = sizes_that_run(attention_rollout, lambda **size: [random_stack(**size, dtype=maps[0].dtype)], sizes, tried)
    if tried["batch"] and ran["batch"] == tried["batch"] and not ran["heads"]:
        return (f"it raises on a batch of {batch} but runs on a batch of 1 or of T = {tokens}: a (B, T) tensor meets a "
                "(B, T, T) one, as when a sum over each row loses its axis; keep it, .sum(dim=-1, keepdim=True).")
    if tried["heads"] and ran["heads"] == tried["heads"] and not ran["batch"]:
        return (f"it raises with {heads} heads but runs with 1 head or with H = T = {tokens} heads: the axis of the "
                "heads meets an axis of the tokens, as when the mean is taken over another axis than the heads'; "
                "average the heads, attention.mean(dim=1).")
    return None
