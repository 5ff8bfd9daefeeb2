"""Reference points for the bound: byte-unigram, token-unigram, uniform-over-vocab and untrained (fresh) models."""
import math
import sys
from collections import Counter

import torch

from common import bits_per_byte, build, n_bytes, prepare, split_topics, uptime
from explore import CONFIGS

torch.set_num_threads(1)
print(uptime())
train_text, test_text, _ = split_topics()
tb, hb = train_text.encode("utf-8"), test_text.encode("utf-8")
counts = Counter(tb)
bits = -sum(math.log2((counts[b] + 1) / (len(tb) + 256)) for b in hb)
print(f"byte unigram (add-one, trained on the training topics): {bits / len(hb):.4f} bits/byte")
for name in sys.argv[1:] or ["d64l2"]:
    cfg = CONFIGS[name]
    V = cfg["vocab_size"]
    tok, train_ids, test_ids, test_bytes = prepare(V)
    c = Counter(train_ids)
    bits = -sum(math.log2((c[t] + 1) / (len(train_ids) + V)) for t in test_ids[1:])
    tpb = len(test_ids) / test_bytes
    print(f"V={V}: tokens/byte held-out {tpb:.4f}; token unigram {bits / test_bytes:.4f} bpb; "
          f"uniform log2(V)*tokens/byte {math.log2(V) * tpb:.4f} bpb")
    for seed in (0, 1, 2):
        model = build(cfg, 100 + seed)
        print(f"  {name} fresh weights seed {100 + seed}: {bits_per_byte(model, test_ids, test_bytes, cfg['max_len']):.3f} bpb"
              + (f" (embed_std {cfg.get('embed_std')})"))
print(uptime())

# token bigram, interpolated with the add-one unigram: p(b|a) = lam * c(a,b)/c(a) + (1 - lam) * p_uni(b);
# lam picked on the held-out text itself (optimistic for the baseline)
for name in sys.argv[1:] or ["d64l2"]:
    V = CONFIGS[name]["vocab_size"]
    tok, train_ids, test_ids, test_bytes = prepare(V)
    uni = Counter(train_ids)
    big = Counter(zip(train_ids, train_ids[1:]))
    best = None
    for lam in (0.5, 0.6, 0.7, 0.8, 0.9):
        bits = 0.0
        for a, b in zip(test_ids, test_ids[1:]):
            pu = (uni[b] + 1) / (len(train_ids) + V)
            pb = big[(a, b)] / uni[a] if uni[a] else 0.0
            bits -= math.log2(lam * pb + (1 - lam) * pu)
        best = min(best or (9e9, 0), (bits / test_bytes, lam))
    print(f"V={V}: token bigram (interpolated, lam={best[1]}) {best[0]:.4f} bpb")
