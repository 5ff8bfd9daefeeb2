"""A scripted stand-in for a seq2seq model, on which Task 6's check runs a student's greedy decoder.

Its next token is a known function of the source and of the prefix it is given: the source's real tokens
reversed, then EOS, then FILLER for ever (a decoder must turn those into PAD itself). A prefix that does not start
with BOS or that departs from the script before its EOS gets WRONG instead, so feeding the model anything but the
tokens chosen so far shows. A call whose every prefix holds EOS already is idle: a loop that does not stop makes
such calls, one that decodes each sequence alone makes none. The runner-up of every step is RUNNER_UP, a token no
script holds, with a logit just below the chosen one's (growing slightly with the position), so a decoder that
samples instead of taking the argmax departs from the script within a few draws, and one that takes the argmax over
the positions gives the positions. Every call records what a check needs: the mode, whether gradients were on, the
dtype, device and shape of the decoder input, its first tokens and whether it was idle; the model also notes the
global random state when it is made, to tell whether the decoder drew from it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

FILLER, WRONG, RUNNER_UP = 13, 14, 15  # after its EOS, after a prefix it did not produce, the second most likely
VOCAB_SIZE = 16
LOGIT, RUNNER_UP_LOGIT = 8.0, 7.9  # the chosen token's logit and the runner-up's (about 47% of a draw); others 0
SLOPE = 1e-3  # the runner-up's logit grows by this per position, so an argmax over the positions picks the last one


class ScriptedModel(nn.Module):
    """encode / decode / forward / pad_id, with logits that make the greedy choice of every step known.

    Args:
        pad_id, bos_id, eos_id: the token ids this model uses (not necessarily the course's).
    """

    def __init__(self, pad_id, bos_id, eos_id):
        super().__init__()
        self.pad_id, self.bos_id, self.eos_id = pad_id, bos_id, eos_id
        self.scale = nn.Parameter(torch.ones(()))  # one weight, so a decoder run with gradients on builds a graph
        self.calls = []  # one dict per decode call
        self.random_state = torch.get_rng_state()  # the global generator's state before the decoder runs

    def encode(self, source):
        """source (B, S) -> memory (B, S, 1): the token ids as floats, the only place decode reads the source from."""
        return source.unsqueeze(-1).to(self.scale.dtype) * self.scale  # (B, S, 1)

    def script(self, source_row):
        """The tokens this model generates for one source row: its real tokens reversed, then EOS."""
        real = [token for token in source_row.tolist() if token != self.pad_id]
        return real[::-1] + [self.eos_id]

    def _next_token(self, script, prefix):
        if not prefix or prefix[0] != self.bos_id:
            return WRONG
        generated = prefix[1:]
        followed = generated[: len(script)] == script[: len(generated)]
        if not followed:
            return WRONG
        return script[len(generated)] if len(generated) < len(script) else FILLER

    def decode(self, target_input, memory, source):
        """target_input (B, T), memory (B, S, 1), source (B, S) -> logits (B, T, VOCAB_SIZE)."""
        rows = target_input.long().tolist()
        self.calls.append(dict(training=self.training, grad=torch.is_grad_enabled(), dtype=target_input.dtype,
                               device=target_input.device, shape=tuple(target_input.shape),
                               idle=all(self.eos_id in row[1:] for row in rows),
                               first=sorted({row[0] for row in rows if row})))
        tokens = memory.detach().squeeze(-1).round().long()  # (B, S)
        next_tokens = [[self._next_token(self.script(tokens[b]), row[: i + 1]) for i in range(len(row))]
                       for b, row in enumerate(rows)]
        index = torch.tensor(next_tokens, dtype=torch.long, device=target_input.device).view(target_input.shape)
        logits = F.one_hot(index, VOCAB_SIZE).to(memory.dtype) * LOGIT  # (B, T, VOCAB_SIZE)
        positions = torch.arange(target_input.size(-1), device=target_input.device)
        logits[..., RUNNER_UP] = RUNNER_UP_LOGIT + SLOPE * positions.to(logits.dtype)
        return logits * self.scale  # (B, T, VOCAB_SIZE)

    def forward(self, source, target_input):
        memory = self.encode(source)  # (B, S, 1)
        return self.decode(target_input, memory, source)


def observed(model):
    """What a ScriptedModel saw during a call, as plain data (the grader compares it with the reference's run)."""
    return {"train_mode": any(call["training"] for call in model.calls),
            "gradients": any(call["grad"] for call in model.calls),
            "mode_after": bool(model.training), "idle_calls": idle_calls(model),
            "random_state_kept": random_state_kept(model)}


def idle_calls(model):
    """How many decode calls had every sequence of their batch past its EOS already (nothing left to generate)."""
    return sum(call["idle"] for call in model.calls)


def random_state_kept(model):
    """Whether the global random state is what it was when the model was made (greedy decoding draws nothing)."""
    return torch.equal(torch.get_rng_state(), model.random_state)
