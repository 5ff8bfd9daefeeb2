"""LoRA vs full fine-tuning of the trained model on a second stdlib-shipped text: the stdlib's own docstrings.

usage: python lora.py CKPT [lora_seconds]
"""
import ast
import copy
import os
import sys
import sysconfig
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from common import (RandomWindows, bits_per_byte, count_params, layers, lm_loss, n_bytes, prepare, train, uptime)

torch.set_num_threads(1)
ckpt = torch.load(sys.argv[1])
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 15.0
cfg = ckpt["cfg"]
from common import Llama, MODEL_KEYS  # noqa: E402

base = Llama(**{k: cfg[k] for k in MODEL_KEYS})
base.load_state_dict(ckpt["state"])
tok, _, topic_ids, topic_bytes = prepare(cfg["vocab_size"])
W = cfg["max_len"]


def docstrings():
    """Module, class and function docstrings of the stdlib's .py files (sorted paths; no test/idlelib/site-packages),
    the pieces of text.stdlib_docstrings without its size limit."""
    root = sysconfig.get_paths()["stdlib"]
    pieces, files = [], 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "test", "tests", "idlelib"))
        for name in sorted(f for f in names if f.endswith(".py")):
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            files += 1
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    doc = ast.get_docstring(node)
                    if doc:
                        pieces.append(doc)
    return pieces, files


print(uptime())
c0 = time.process_time()
pieces, files = docstrings()
all_text = "\n".join(pieces)
print(f"stdlib docstrings: {files} files, {len(pieces):,} docstrings, {n_bytes(all_text):,} bytes "
      f"({time.process_time() - c0:.1f} s CPU to collect)")
# split: docstring i is held out when i % 8 == 7; both sides capped (training 300 kB, held-out 40 kB)
train_doc = "\n".join(p for i, p in enumerate(pieces) if i % 8 != 7)
test_doc = "\n".join(p for i, p in enumerate(pieces) if i % 8 == 7)
train_doc = train_doc.encode()[:300_000].decode(errors="ignore")
test_doc = test_doc.encode()[:40_000].decode(errors="ignore")
doc_train_ids, doc_test_ids = tok.encode(train_doc), tok.encode(test_doc)
doc_bytes = n_bytes(test_doc)
print(f"used: training {n_bytes(train_doc):,} bytes ({len(doc_train_ids):,} tokens), held-out {doc_bytes:,} bytes "
      f"({len(doc_test_ids):,} tokens, {len(doc_test_ids) / doc_bytes:.4f} tokens/byte)")


def scores(model):
    return (bits_per_byte(model, doc_test_ids, doc_bytes, W), bits_per_byte(model, topic_ids, topic_bytes, W))


def add_lora(model, rank, alpha):
    model = copy.deepcopy(model)
    for p in model.parameters():
        p.requires_grad_(False)
    for block in model.blocks:
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            setattr(block.attention, name, layers.LoRALinear(getattr(block.attention, name), rank, alpha))
    return model


def merged(model):
    model = copy.deepcopy(model)
    for block in model.blocks:
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            setattr(block.attention, name, getattr(block.attention, name).merge())
    return model


def step_cpu(model, batch):
    """CPU seconds of one training step (median of 3 after 1 warm-up), to size a run to SECONDS."""
    x = torch.as_tensor(doc_train_ids[:batch * (W + 1)]).view(batch, W + 1)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.0)
    times = []
    for _ in range(4):
        c = time.process_time()
        loss = lm_loss(model, x[:, :-1], x[:, 1:]); opt.zero_grad(); loss.backward(); opt.step()
        times.append(time.process_time() - c)
    return sorted(times[1:])[1]


def finetune(model, lr, seed=0):
    batch = cfg["batch_size"]
    steps = max(10, int(SECONDS / step_cpu(model, batch)))
    loader = DataLoader(RandomWindows(doc_train_ids, W, steps * batch, seed), batch_size=batch)
    c0, w0 = time.process_time(), time.perf_counter()
    history = train(model, loader, None, num_epochs=1, lr=lr, warmup_steps=max(1, steps // 10), eval_every=10**9,
                    threads=1, batch_loss=lm_loss, evaluate_fn=lambda m: (0.0, 0.0))
    return steps, history.seconds[-1], time.process_time() - c0, time.perf_counter() - w0


before = scores(base)
print(f"base model ({count_params(base):,} params): docstrings {before[0]:.4f} bpb, topics {before[1]:.4f} bpb")
for rank, alpha, lr in ((8, 16, 1e-2), (4, 8, 1e-2), (8, 16, 3e-3)):
    torch.manual_seed(0)
    lora = add_lora(base, rank, alpha)
    n_train = count_params(lora, trainable_only=True)
    steps, secs, cpu, wall = finetune(lora, lr)
    after = scores(lora)
    m = merged(lora)
    after_m = scores(m)
    print(f"LoRA r={rank} alpha={alpha} lr={lr:g} on q/k/v/o: {n_train:,} trainable params "
          f"({n_train / count_params(base):.1%}), {steps} steps, {secs:.1f} s train wall, {cpu:.1f} s CPU "
          f"| docstrings {after[0]:.4f} bpb, topics {after[1]:.4f} | merged: docstrings {after_m[0]:.4f}, "
          f"topics {after_m[1]:.4f} (|diff| {abs(after_m[0] - after[0]):.2e}, {abs(after_m[1] - after[1]):.2e}); "
          f"merged model has {sum(isinstance(x, layers.LoRALinear) for x in m.modules())} LoRALinear left, "
          f"{count_params(m):,} params | {uptime()[-17:]}", flush=True)
for lr in (3e-3, 1e-3):
    full = copy.deepcopy(base)
    n_train = count_params(full, trainable_only=True)
    steps, secs, cpu, wall = finetune(full, lr)
    after = scores(full)
    print(f"full fine-tuning lr={lr:g}: {n_train:,} trainable params, {steps} steps, {secs:.1f} s train wall, "
          f"{cpu:.1f} s CPU | docstrings {after[0]:.4f} bpb, topics {after[1]:.4f} | {uptime()[-17:]}", flush=True)
print(uptime())
