"""KV-cache bytes of a config at its context length, batch 1, float32: formula and measured from a forward pass."""
import sys

import torch

from common import build, uptime
from explore import CONFIGS

cfg = dict(CONFIGS[sys.argv[1] if len(sys.argv) > 1 else "d64l2"])
H, D, Lyr, L = cfg["num_heads"], cfg["embed_dim"], cfg["num_layers"], cfg["max_len"]
hd = D // H
print(uptime())
for kv in sorted({H, cfg["num_kv_heads"], 1}, reverse=True):
    c = dict(cfg, num_kv_heads=kv)
    model = build(c, 0).eval()
    with torch.no_grad():
        _, cache = model(torch.zeros(1, L, dtype=torch.long))
    measured = sum(t.numel() * t.element_size() for k, v in cache for t in (k, v))
    formula = 2 * Lyr * kv * hd * L * 4
    print(f"num_kv_heads={kv} (H={H}, head_dim={hd}, layers={Lyr}, L={L}): {measured:,} bytes measured = "
          f"{measured / 1024:.1f} KiB (formula 2*layers*kv*hd*L*4 = {formula:,}); per token {measured // L} B; "
          f"k/v_proj params per layer {2 * D * kv * hd:,}")
