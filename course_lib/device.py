"""Device choice, CPU threads and seeding, so the same notebook runs on a laptop CPU, Colab or a GPU box."""
import random
from contextlib import contextmanager

import numpy as np
import torch

from .calls import student_call


@student_call
def get_device():
    """Return the CUDA device when one is available, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@student_call
def seed_everything(seed):
    """Seed Python, NumPy and PyTorch (all devices) so runs repeat."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@student_call
@contextmanager
def cpu_threads(count):
    """Run torch on `count` CPU threads inside the block (None: leave torch's setting), then restore the setting."""
    previous = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
