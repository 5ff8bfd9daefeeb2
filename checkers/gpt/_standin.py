"""What the grader's sampling and generation cases pass to a student's function, and what they read back afterwards.

A case's arguments are plain data; these are made from it inside the probe: a seeded torch.Generator, and (in
checkers.gpt._scripted) the fixed-logits stand-in model. After the call, the reports below say, as plain data, how
the call used them, so the grader can compare that with what the reference did.
"""
import torch


def seeded_generator(seed):
    """A torch.Generator in the state manual_seed(seed) gives."""
    return torch.Generator().manual_seed(seed)


def generator_used(generator):
    """What a call left of a generator: its next uniform draw, which differs when the call drew another number of
    times (or not at all)."""
    return {"generator": torch.rand(1, generator=generator, dtype=torch.float64).item()}


def observed(model):
    """How a decoding loop drove a FixedLogitsModel: per call the positions fed and the cached positions given,
    whether any call ran in train mode or with gradients, and the mode it was left in."""
    return {"fed": [[call["fed"], call["past"]] for call in model.calls],
            "train_mode": any(call["training"] for call in model.calls),
            "gradients": any(call["grad"] for call in model.calls),
            "mode_after": model.training}
