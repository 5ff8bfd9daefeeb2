"""Task 6's probes of a blockwise (online-softmax) attention function whose output is wrong, generic over how it is
written: the attention weights it applies, read back by giving it the identity as values, and the exponents it
passes to exp. Each returns one sentence, or None when it found nothing."""
import math

import torch
from torch.overrides import TorchFunctionMode

from .._probes import temperature

_EXPS = (torch.exp, torch.Tensor.exp)


class _ExpSpy(TorchFunctionMode):
    """Records (shape, largest argument, whether every argument is 0) of every exp call, NaNs left out."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if any(func is op for op in _EXPS) and args and isinstance(args[0], torch.Tensor) and args[0].numel():
            argument = args[0].detach()
            kept = argument[~torch.isnan(argument)]
            largest = float(kept.max()) if kept.numel() else float("nan")
            self.seen.append((tuple(argument.shape), largest, bool((argument == 0).all())))
        return func(*args, **(kwargs or {}))


def exponents(run):
    """What the arguments of run()'s exp calls say, or None: in an online softmax every exponent is a score or the old
    running max minus the NEW running max, so none is above 0, and the rescaling's is below 0 when the max grows."""
    spy = _ExpSpy()
    try:
        with spy, torch.no_grad():
            run()
    except Exception:  # noqa: BLE001 -- only a probe
        pass
    rescaling = [seen for seen in spy.seen if seen[0][-1:] == (1,)]  # one value per query row
    if rescaling and rescaling[0][1] == float("inf"):
        return (f"exp was given +inf on a tensor of shape {rescaling[0][0]} (one value per query row) at the first "
                "block: the rescaling's exponent is reversed; it is exp(m_old - m_new) <= 1, which is 0 at the first "
                "block, where m_old = -inf.")
    if any(largest > 1e-9 for _, largest, _ in rescaling):
        return ("exp was given a value > 0 on a tensor of one value per query row: the new max fell below the old "
                "one, so m_new is not a running max: m_new = max(m_old, the block's row max).")
    if len(rescaling) > 1 and all(zero for _, _, zero in rescaling):
        return ("the rescaling exp(m_old - m_new) is exp(0) = 1 at every block, although the max grows: m_old is "
                "overwritten by m_new before the rescaling is computed; compute it first, then update the max.")
    scores = next(((shape, largest) for shape, largest, _ in spy.seen if largest > 1e-9), None)
    if scores:
        return (f"exp was given {scores[1]:.3g} > 0 on the block's scores (shape {scores[0]}): take them against the "
                "NEW running max, exp(scores - m_new) with m_new = max(m_old, the block's row max), which keeps every "
                "exponent <= 0.")
    return None


def _weights_of(tiled_attention, length, block_size, causal):
    """(query, key, the weights tiled_attention applies): with value the identity (L × L), output row i is query i's
    weights over the keys; None when the call fails or gives another shape."""
    generator = torch.Generator().manual_seed(6)
    query, key = (torch.randn(1, 1, length, length, generator=generator, dtype=torch.float64) for _ in range(2))
    value = torch.eye(length, dtype=torch.float64).expand(1, 1, length, length)
    try:
        with torch.no_grad():
            weights = tiled_attention(query.clone(), key.clone(), value.clone(), block_size, causal)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    ok = isinstance(weights, torch.Tensor) and weights.shape == value.shape and torch.isfinite(weights).all()
    return (query, key, weights.detach().double()[0, 0]) if ok else None


def _softmax_weights(query, key, causal):
    """The weights exact attention gives: softmax over the keys of query · key / √head_dim, masked when causal."""
    scores = (query @ key.transpose(-2, -1))[0, 0] / math.sqrt(query.size(-1))
    if causal:
        scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(dim=-1)


def applied_weights(tiled_attention, block_size, causal, length=12):
    """What the weights tiled_attention applies (L = 12, head_dim = 12, blocks of block_size) say is wrong, or None."""
    block_size = min(block_size, 5)  # several blocks, the last one partial
    found = _weights_of(tiled_attention, length, block_size, causal)
    if found is None:
        return None
    query, key, got = found
    expected = _softmax_weights(query, key, causal)
    if torch.allclose(got, expected, atol=1e-9):
        return None
    for probe in (_mask, _values_unused, _row_sums, _blocks_weighted, _scale):
        sentence = probe(got, expected, block_size, causal)
        if sentence:
            return sentence
    return None


def _mask(got, expected, block_size, causal):
    future = torch.ones_like(got, dtype=torch.bool).triu(1)  # key j > query i
    seen = (got.abs() > 1e-12) & future
    if not causal and not seen.any():
        return ("with causal=False no query gets weight from the keys after it: the mask is applied although "
                "causal is False; mask only when causal is True (`if causal:`).")
    if causal and seen.any():
        pairs = seen.nonzero().tolist()
        if all(j == i + 1 for i, j in pairs):
            return ("with causal=True query i also gets weight from key i + 1: the mask is off by one; hide key j "
                    "when j > i, so that a query sees the keys up to itself.")
        return (f"with causal=True query {pairs[0][0]} gets weight from key {pairs[0][1]}, after it: hide every key "
                "whose position (block start + index in the block) is greater than the query's.")
    return None


def _values_unused(got, expected, block_size, causal):
    silent = ((got.abs() <= 1e-12).all(dim=0) & (expected > 1e-9).any(dim=0)).nonzero().flatten().tolist()
    if not silent:
        return None
    if silent == list(range(block_size, got.size(-1))):
        return (f"with value the identity, the values of keys {block_size} to {got.size(-1) - 1} never reach the "
                "output, only the first block's do: each block's probabilities multiply that block's own values, "
                "probs @ value[..., start:end, :].")
    blocks = [list(range(start, min(start + block_size, got.size(-1)))) for start in range(0, got.size(-1), block_size)]
    if silent == blocks[0]:
        return (f"with value the identity, the values of the first block's keys (0 to {block_size - 1}) never reach "
                "the output: either the first block is never added, or the rescaling factor exp(m_old - m_new), "
                "which is 0 at the first block (m_old = -inf), multiplies the accumulator after that block was added "
                "instead of before.")
    if any(block and set(block) <= set(silent) for block in blocks) and \
            all(set(block) <= set(silent) or not set(block) & set(silent) for block in blocks):
        return (f"with value the identity, the values of keys {', '.join(map(str, silent))} (whole blocks) never "
                "reach the output: add every block's probs @ value[..., start:end, :] to the accumulator.")
    return (f"with value the identity, the values of keys {', '.join(map(str, silent))} never reach the output: "
            "their weight ends as 0 (a factor of 0, such as exp(-inf), multiplies them after they were added?).")


def _row_sums(got, expected, block_size, causal):
    ratio = got / expected.clamp_min(1e-300)
    relevant = expected > 1e-9
    rows = [ratio[i][relevant[i]] for i in range(got.size(0))]
    if not all(torch.allclose(row, row[0].expand_as(row), rtol=1e-6) for row in rows):
        return None
    sums = got.sum(-1)
    return (f"each query's weights are the right ones times a factor of its own (the rows sum to "
            f"{float(sums.min()):.3g} to {float(sums.max()):.3g}, not 1): divide the accumulator by the final running "
            "sum once, after the "
            "last block.")


def _blocks_weighted(got, expected, block_size, causal):
    ratio = got / expected.clamp_min(1e-300)
    relevant = expected > 1e-9
    for start in range(0, got.size(-1), block_size):
        for i in range(got.size(0)):
            inside = ratio[i, start:start + block_size][relevant[i, start:start + block_size]]
            if inside.numel() > 1 and not torch.allclose(inside, inside[0].expand_as(inside), rtol=1e-6):
                return None
    sums = got.sum(-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-9):
        return (f"within each key block the weights are right up to a factor, and the rows sum to "
                f"{float(sums.min()):.3g} to {float(sums.max()):.3g}, not 1: is each block normalised on its own? "
                "Accumulate the unnormalised exp(scores - m_new) @ V and divide by the running sum once, at the end.")
    return ("within each key block the weights are right up to a factor, but the blocks are weighted against each "
            "other wrongly: every block's exp must use the running max m_new, and the accumulator and the sum be "
            "rescaled by exp(m_old - m_new) whenever the max grows.")


def _scale(got, expected, block_size, causal):
    ratio = temperature(got.clamp_min(1e-300), expected) if not causal else None
    if ratio is None or abs(ratio - 1) < 1e-3:
        return None
    head_dim = got.size(-1)
    divisor = math.sqrt(head_dim) / ratio
    named = " = head_dim" if abs(divisor - head_dim) < 1e-3 * head_dim else " (no scaling)" if abs(divisor - 1) < 1e-3 \
        else ""
    return (f"the scores are divided by {divisor:.4g}{named} instead of √head_dim = {math.sqrt(head_dim):.4g} "
            f"(head_dim {head_dim}).")


_REDUCTIONS = {torch.sum: "sum", torch.Tensor.sum: "sum", torch.amax: "amax", torch.Tensor.amax: "amax",
               torch.max: "max", torch.Tensor.max: "max", torch.logsumexp: "logsumexp"}


class _ReductionSpy(TorchFunctionMode):
    """Records (name, input shape, dim) of every sum, amax, max and logsumexp given a dim."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = next((label for op, label in _REDUCTIONS.items() if func is op), None)
        dim = (kwargs or {}).get("dim", args[1] if len(args) > 1 else None)
        if name and args and isinstance(args[0], torch.Tensor) and isinstance(dim, int):
            self.seen.append((name, tuple(args[0].shape), dim))
        return func(*args, **(kwargs or {}))


def reduced_over_queries(run, length):
    """What a reduction over the queries axis (size length, second to last) in run() says, or None: softmax statistics
    are one per query row, reduced over the keys."""
    spy = _ReductionSpy()
    try:
        with spy, torch.no_grad():
            run()
    except Exception:  # noqa: BLE001 -- only a probe
        pass
    for name, shape, dim in spy.seen:
        if len(shape) >= 2 and shape[-2] == length != shape[-1] and dim % len(shape) == len(shape) - 2:
            return (f"{name}(dim={dim}) reduces a tensor of shape {shape} over its queries axis: the running max and "
                    "sum are one per query row, reduced over the block's keys, dim=-1 with keepdim=True.")
    return None
