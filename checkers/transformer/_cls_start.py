"""How a classifier's [CLS] embedding starts: drawn like N(0, 1), as Task 5's text asks, or not (zeros, a small or a
uniform draw). Task 5's check and the grader's fact (_facts.cls_start) both read it here, so both judge alike."""
import math

import torch

from .._core import Task
from .._modules import build

MODELS = 32  # fresh models built; each gives its embed_dim starting values of cls_token
SEED = 5  # the draws are seeded (the global generator is restored after), so a verdict is the same on every run
SIGMAS = 6  # how many standard errors a right start may stray: it fails with a probability under 1e-8
TRUNCATED_STD = 0.88  # the standard deviation of nn.init.trunc_normal_(std=1), which cuts N(0, 1) at ±2


def cls_start(cls, name, config, task=None):
    """(mean, standard deviation, count) of the cls_token values of MODELS fresh models cls(**config) built in a row
    from one seed, or None when one has no tensor cls_token (its own checks say so)."""
    task = task or Task(5, __package__)
    values = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        for _ in range(MODELS):
            token = getattr(build(task, cls, name, **config), "cls_token", None)
            if not isinstance(token, torch.Tensor) or not token.is_floating_point():
                return None
            values.append(token.detach().reshape(-1).double())
    values = torch.cat(values)
    return values.mean().item(), values.std().item(), values.numel()


def like_standard_normal(mean, std, count):
    """Whether count values of this mean and standard deviation may be draws of N(0, 1).

    The bounds come from the sample size n = count: the mean of n draws of N(0, 1) has a standard deviation of 1/√n,
    their sample standard deviation one of about 1/√(2n); SIGMAS of these either side, below the truncated normal's
    0.88 for the lower bound, keep torch.randn, nn.init.normal_ and nn.init.trunc_normal_(std=1) in with
    overwhelming probability (n = 256: |mean| <= 0.38, 0.62 <= std <= 1.27), while zeros (std 0), 0.02 * torch.rand
    (std 0.006) and torch.rand (std 0.29) stay out.
    """
    spread = SIGMAS / math.sqrt(2 * count)
    return abs(mean) <= SIGMAS / math.sqrt(count) and TRUNCATED_STD - spread <= std <= 1 + spread
