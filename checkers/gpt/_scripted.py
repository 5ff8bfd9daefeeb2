"""A fixed-logits stand-in for a GPT, on which Task 8's check runs a student's generate.

Its next-token logits depend only on the current token: row `token` of a fixed (V, V) table (a bigram model), so
every draw of a sampler is a known function of the temperature, top_k and the generator's state. An untrained GPT
cannot serve here: its tied head makes its distributions nearly one-hot, which hides temperature and generator
mistakes. The cache it returns counts the positions it has seen, and every call records what a check needs: how many
positions were fed, how many the cache held, the mode, whether gradients were on.
"""
import torch
import torch.nn as nn


class FixedLogitsModel(nn.Module):
    """forward(tokens (B, L), cache=None) -> (logits (B, L, V), [positions seen]) with logits table[tokens].

    Args:
        table: (V, V) logits; row t holds the next-token logits after token t.
        max_len: the longest sequence generate may ask for (read by generate as model.max_len).
        fail_at: raise a RuntimeError at this call (0-based), to see whether generate restores the mode after an error.
    """

    def __init__(self, table, max_len, fail_at=None):
        super().__init__()
        self.register_buffer("table", table.clone())
        self.scale = nn.Parameter(torch.ones((), dtype=table.dtype))  # so a forward with gradients on builds a graph
        vocab_size = table.size(0)
        # unused by forward; there for a generate that reads the vocabulary size or device from GPT's pinned parts
        self.token_embedding = nn.Embedding(vocab_size, 1, _weight=torch.zeros(vocab_size, 1, dtype=table.dtype))
        self.lm_head = nn.utils.skip_init(nn.Linear, 1, vocab_size, bias=False)  # no draw from the global RNG
        self.lm_head.weight = self.token_embedding.weight
        self.max_len, self.fail_at = max_len, fail_at
        self.calls = []  # one dict per forward

    def forward(self, tokens, cache=None):
        past = 0 if cache is None else int(cache[0])
        self.calls.append(dict(fed=tokens.size(-1), past=past, training=self.training, grad=torch.is_grad_enabled(),
                               dtype=tokens.dtype))
        if self.fail_at is not None and len(self.calls) > self.fail_at:
            raise RuntimeError("FixedLogitsModel: a planted failure (the check tests that the mode is restored)")
        logits = self.table[tokens] * self.scale  # (B, L, V)
        return logits, [torch.tensor(past + tokens.size(-1))]

