"""Learning-rate schedule: linear warm-up followed by cosine decay."""
import math

from torch.optim.lr_scheduler import LambdaLR


def warmup_cosine_factor(step, warmup_steps, max_steps):
    """Multiplier of the base learning rate at a given optimizer step.

    The warm-up ramps linearly from 1/warmup_steps (never 0, so the first step
    already learns) to 1; the cosine then decays from 1 to 0 at max_steps.

    Args:
        step: optimizer steps taken so far (0 for the first step).
        warmup_steps: length of the warm-up; 0 disables it.
        max_steps: step at which the factor reaches 0.

    Returns:
        float in (0, 1] for step < max_steps, 0 from max_steps on.
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    decay_steps = max(max_steps - warmup_steps, 1)
    progress = min((step - warmup_steps) / decay_steps, 1.0)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


class WarmupCosineSchedule(LambdaLR):
    """LambdaLR that applies warmup_cosine_factor; call .step() after every optimizer step.

    Args:
        optimizer: the optimizer whose learning rates are scaled.
        warmup_steps: number of warm-up steps (0 allowed).
        max_steps: total number of optimizer steps of the run.
    """

    def __init__(self, optimizer, warmup_steps, max_steps):
        if not 0 <= warmup_steps <= max_steps:
            raise ValueError(f"need 0 <= warmup_steps <= max_steps, got {warmup_steps} and {max_steps}")
        self.warmup_steps, self.max_steps = warmup_steps, max_steps
        super().__init__(optimizer, lambda step: warmup_cosine_factor(step, warmup_steps, max_steps))
