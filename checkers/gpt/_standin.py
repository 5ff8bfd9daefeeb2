"""A stand-in language model for sampling and generation cases, whose next-token logits are known and not one-hot.

An untrained tied GPT gives nearly one-hot logits, which hide temperature and generator mistakes; this model's
logits at a position are a fixed random row chosen by a hash of every token up to it, so they depend on the whole
prefix, are the same with and without a cache, and are far from one-hot. Its cache has the pinned form (a list with
one (keys, values) per block) and holds the tokens seen so far. It notes what each call got, so a case can compare
how a decoding loop drives it: positions fed per call, the length of the cache it was given, mode and gradients.
"""
import torch
import torch.nn as nn

HASH_SIZE = 4099  # rows of the logits table (a prime, so the hash spreads)


def seeded_generator(seed):
    """A torch.Generator in the state manual_seed(seed) gives (a case's argument, made in the probe)."""
    return torch.Generator().manual_seed(seed)


def generator_used(generator):
    """What a call left of a generator, as plain data: its next uniform draw, which differs when the call drew
    another number of times (or not at all)."""
    return {"generator": torch.rand(1, generator=generator, dtype=torch.float64).item()}


class ScriptedLM(nn.Module):
    """tokens (B, L), cache -> (logits (B, L, vocab_size), new_cache); logits from a hash of each prefix.

    Args:
        vocab_size: token ids 0 .. vocab_size - 1.
        max_len: the longest sequence it accepts (generate reads model.max_len).
        seed: seeds the logits table; scale: the logits' spread (about 1: far from one-hot).
    """

    def __init__(self, vocab_size, max_len, seed=0, scale=1.0):
        super().__init__()
        self.max_len = max_len
        table = torch.randn(HASH_SIZE, vocab_size, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        self.register_buffer("table", table * scale)
        self.gain = nn.Parameter(torch.ones((), dtype=torch.float64))  # a parameter, so next(parameters()) works
        self.calls = []

    def forward(self, tokens, cache=None):
        """The logits of the new positions; the cache's tokens come first (positions L_past ..)."""
        past = torch.zeros(tokens.size(0), 0, dtype=torch.long, device=tokens.device)  # (B, 0)
        if cache is not None:
            past = cache[0][0][:, 0, :, 0].round().long()  # (B, L_past): the tokens the cache holds
        history = torch.cat([past, tokens.long()], dim=1)  # (B, L_past + L)
        if history.size(1) > self.max_len:
            raise ValueError(f"ScriptedLM: {history.size(1)} positions exceed max_len {self.max_len}")
        self.calls.append({"fed": tokens.size(1), "past": past.size(1), "training": self.training,
                           "grad": torch.is_grad_enabled()})
        hashes, code = [], torch.zeros(tokens.size(0), dtype=torch.long, device=tokens.device)  # (B,)
        for position in range(history.size(1)):
            code = (code * 31 + history[:, position] + 1) % HASH_SIZE  # (B,)
            hashes.append(code)
        rows = torch.stack(hashes[past.size(1):], dim=1)  # (B, L)
        logits = self.table[rows] * self.gain  # (B, L, V)
        stored = history.to(torch.float64)[:, None, :, None]  # (B, 1, L_past + L, 1): one block's "keys"
        return logits, [(stored, stored.clone())]


def observed(model):
    """What a decoding loop did with a ScriptedLM, as plain data: per call the positions fed and the cached
    positions given, whether any call ran in train mode or with gradients, and the mode it was left in."""
    return {"fed": [[call["fed"], call["past"]] for call in model.calls],
            "train_mode": any(call["training"] for call in model.calls),
            "gradients": any(call["grad"] for call in model.calls),
            "mode_after": model.training}
