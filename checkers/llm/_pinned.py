"""The constructors this assignment's tasks pin, in order, with their defaults (see checkers/_modules.py: build)."""
from .._modules import REQUIRED

PINNED = {
    # Tasks 3-5, 8
    "RMSNorm": dict(embed_dim=REQUIRED, eps=1e-6),
    "SwiGLU": dict(embed_dim=REQUIRED, hidden_dim=REQUIRED),
    "GroupedQueryAttention": dict(embed_dim=REQUIRED, num_heads=REQUIRED, num_kv_heads=REQUIRED, max_len=REQUIRED),
    "LoRALinear": dict(base=REQUIRED, rank=REQUIRED, alpha=REQUIRED),
}
