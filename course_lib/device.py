"""Device choice and seeding, so the same notebook runs on a laptop CPU, Colab or a GPU box."""
import random

import numpy as np
import torch


def get_device():
    """Return the CUDA device when one is available, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed):
    """Seed Python, NumPy and PyTorch (all devices) so runs repeat."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
