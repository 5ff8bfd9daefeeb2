"""ms per training step (fwd+bwd+AdamW) for candidate shapes, torch threads from argv[1]."""
import sys
import time

import torch

from common import build, count_params, lm_loss, uptime

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
torch.set_num_threads(threads)
CANDIDATES = [
    # name, V, D, H, Hkv, hidden, layers, ctx, batch
    ("V1024 d64 l2 c128 b16", 1024, 64, 4, 2, 176, 2, 128, 16),
    ("V1024 d64 l4 c128 b16", 1024, 64, 4, 2, 176, 4, 128, 16),
    ("V1024 d96 l3 c128 b16", 1024, 96, 4, 2, 256, 3, 128, 16),
    ("V1024 d128 l2 c128 b16", 1024, 128, 4, 2, 352, 2, 128, 16),
    ("V1024 d128 l4 c128 b16", 1024, 128, 4, 2, 352, 4, 128, 16),
    ("V512 d64 l2 c128 b16", 512, 64, 4, 2, 176, 2, 128, 16),
    ("V512 d96 l3 c128 b16", 512, 96, 4, 2, 256, 3, 128, 16),
    ("V1024 d64 l2 c256 b8", 1024, 64, 4, 2, 176, 2, 256, 8),
    ("V768 d96 l3 c128 b16", 768, 96, 4, 2, 256, 3, 128, 16),
]
print(uptime(), "threads", threads)
for name, V, D, H, Hkv, F, Lyr, ctx, B in CANDIDATES:
    cfg = dict(vocab_size=V, embed_dim=D, num_heads=H, num_kv_heads=Hkv, hidden_dim=F, num_layers=Lyr, max_len=ctx)
    model = build(cfg, 0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(V, (B, ctx)); y = torch.randint(V, (B, ctx))
    times = []
    for i in range(12):
        c0, t0 = time.process_time(), time.perf_counter()
        loss = lm_loss(model, x, y); opt.zero_grad(); loss.backward(); opt.step()
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    w = sorted(t[0] for t in times[2:])[len(times[2:]) // 2]
    c = sorted(t[1] for t in times[2:])[len(times[2:]) // 2]
    print(f"{name}: {count_params(model):,} params, {w*1000:.0f} ms/step wall ({c*1000:.0f} CPU), "
          f"{B*ctx/w:,.0f} tokens/s, steps in 60 CPU s: {60/c:.0f}")
print(uptime())
