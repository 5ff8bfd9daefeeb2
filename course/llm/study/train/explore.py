"""Run named configurations (seeds from --seeds, torch threads from --threads); append JSON lines to results.jsonl.

usage: python explore.py [--threads 1] [--seeds 0] NAME [NAME ...]
"""
import argparse
import json

from common import run

BASE = dict(vocab_size=1024, embed_dim=64, num_heads=4, num_kv_heads=2, hidden_dim=176, num_layers=2, max_len=128,
            batch_size=16, lr=3e-3, warmup=40, steps=400, weight_decay=0.0, embed_std=0.02)
CONFIGS = {
    "d64l2_e1": dict(BASE, embed_std=None),  # nn.Embedding's N(0, 1), as gpt's GPT
    "d64l2": dict(BASE),
    "d64l2_lr6": dict(BASE, lr=6e-3),
    "d64l2_lr10": dict(BASE, lr=1e-2),
    "d64l2_lr6_b8": dict(BASE, lr=6e-3, batch_size=8, steps=700, warmup=70),
    "d64l2_lr6_b4": dict(BASE, lr=6e-3, batch_size=4, steps=1200, warmup=120),
    "d64l2_lr6_b8_1100": dict(BASE, lr=6e-3, batch_size=8, steps=1100, warmup=110),
    "V512d64l2_lr6": dict(BASE, vocab_size=512, steps=440, lr=6e-3),
    "d64l4": dict(BASE, num_layers=4, steps=235),
    "d96l3": dict(BASE, embed_dim=96, hidden_dim=256, num_layers=3, steps=215),
    "d128l2": dict(BASE, embed_dim=128, hidden_dim=352, steps=220),
    "V512d96l3": dict(BASE, vocab_size=512, embed_dim=96, hidden_dim=256, num_layers=3, steps=300),
    "V512d64l2": dict(BASE, vocab_size=512, steps=440),
    "d64l2c256": dict(BASE, max_len=256, batch_size=8, steps=290),
}

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--set", default="", help="overrides, e.g. lr=5e-3,steps=300")
    parser.add_argument("--save", action="store_true", help="save each model to ckpt_<name>_s<seed>.pt")
    parser.add_argument("--out", default="results.jsonl")
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    for name in args.names:
        cfg = dict(CONFIGS[name])
        for item in filter(None, args.set.split(",")):
            key, value = item.split("=")
            cfg[key] = type(BASE.get(key, 0.0))(float(value)) if key in BASE else float(value)
        for seed in map(int, args.seeds.split(",")):
            model, out = run(cfg, seed, threads=args.threads)
            if args.save:
                import torch
                torch.save({"cfg": cfg, "state": model.state_dict()}, f"ckpt_{name}_s{seed}.pt")
            out.update(name=name + (f"[{args.set}]" if args.set else ""), cfg=cfg)
            print(json.dumps(out), flush=True)
            with open(args.out, "a") as f:
                f.write(json.dumps(out) + "\n")
