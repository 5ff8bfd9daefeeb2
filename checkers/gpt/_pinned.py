"""The constructors this assignment's tasks pin, in order, with their defaults (see checkers/_modules.py: build)."""
import torch.nn as nn

from .._modules import REQUIRED

PINNED = {
    # Tasks 1-3
    "RotaryEmbedding": dict(head_dim=REQUIRED, max_len=2048, base=10000.0),
    "CausalSelfAttention": dict(embed_dim=REQUIRED, num_heads=REQUIRED, max_len=REQUIRED, rope=True),
    # Tasks 4-5
    "GPTBlock": dict(embed_dim=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED, max_len=REQUIRED,
                     activation=nn.GELU, dropout=0.0),
    "GPT": dict(vocab_size=REQUIRED, embed_dim=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED,
                num_layers=REQUIRED, max_len=REQUIRED, dropout=0.0),
}
