"""Task 7 prototype: data split, BPE, the Llama model, bits-per-byte evaluation, training with course_lib.train.

Imports (read-only) /work/llm-proto/bpe/reference.py, bpe/text.py, layers/reference.py and /work/main's course_lib.
"""
import importlib.util
import json
import math
import os
import sys
import time
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.dirname(HERE)
sys.path.insert(0, "/work/main")
import functools  # noqa: E402

import tqdm  # noqa: E402

tqdm.tqdm.__init__ = functools.partialmethod(tqdm.tqdm.__init__, disable=True)  # no progress bars in logs
from course_lib.training import train  # noqa: E402


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bpe = _load("bpe_reference", os.path.join(PROTO, "bpe", "reference.py"))
text_mod = _load("bpe_text", os.path.join(PROTO, "bpe", "text.py"))
layers = _load("layers_reference", os.path.join(PROTO, "layers", "reference.py"))


# ---------------------------------------------------------------- data
HOLD_OUT_MOD, HOLD_OUT_REST = 8, 5


def held_out(name):
    """The proposed rule: a topic is held out when crc32 of its name (UTF-8) is 5 mod 8. Depends on the name only,
    so a topic added or removed in another Python version never moves the others between the two sides."""
    return zlib.crc32(name.encode("utf-8")) % HOLD_OUT_MOD == HOLD_OUT_REST


def split_topics():
    """(training text, held-out text): topics in sorted-name order, joined by '\\n', each side on its own."""
    from pydoc_data.topics import topics
    names = sorted(topics)
    train_text = "\n".join(topics[n] for n in names if not held_out(n))
    test_text = "\n".join(topics[n] for n in names if held_out(n))
    return train_text, test_text, [n for n in names if held_out(n)]


def n_bytes(text):
    return len(text.encode("utf-8", errors="surrogatepass"))


def get_merges(vocab_size, text=None):
    """Merges learnt by the reference train_bpe on the training topics (cached in merges_<V>.json)."""
    path = os.path.join(HERE, f"merges_{vocab_size}.json")
    if text is None and os.path.exists(path):
        with open(path) as f:
            return [tuple(p) for p in json.load(f)]
    text = text if text is not None else split_topics()[0]
    merges = bpe.train_bpe(text, vocab_size)
    with open(path, "w") as f:
        json.dump(merges, f)
    return merges


# ---------------------------------------------------------------- model
class LlamaBlock(nn.Module):
    def __init__(self, embed_dim, num_heads, num_kv_heads, hidden_dim, max_len):
        super().__init__()
        self.attention_norm = layers.RMSNorm(embed_dim)
        self.attention = layers.GroupedQueryAttention(embed_dim, num_heads, num_kv_heads, max_len)
        self.feedforward_norm = layers.RMSNorm(embed_dim)
        self.feedforward = layers.SwiGLU(embed_dim, hidden_dim)

    def forward(self, x, cache=None):
        attended, new_cache = self.attention(self.attention_norm(x), cache=cache)
        x = x + attended
        return x + self.feedforward(self.feedforward_norm(x)), new_cache


class Llama(nn.Module):
    """Token embedding, blocks, final RMSNorm, head tied to the embedding; forward(tokens, cache) -> (logits, cache).

    embed_std: None keeps nn.Embedding's N(0, 1) (what gpt's GPT does); a number redraws the (tied) embedding
    with that standard deviation.
    """

    def __init__(self, vocab_size, embed_dim, num_heads, num_kv_heads, hidden_dim, num_layers, max_len,
                 embed_std=None):
        super().__init__()
        self.max_len = max_len
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        self.blocks = nn.ModuleList([LlamaBlock(embed_dim, num_heads, num_kv_heads, hidden_dim, max_len)
                                     for _ in range(num_layers)])
        self.final_norm = layers.RMSNorm(embed_dim)
        self.lm_head = nn.Linear(embed_dim, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight
        if embed_std is not None:
            nn.init.normal_(self.token_embedding.weight, std=embed_std)

    def forward(self, tokens, cache=None):
        x = self.token_embedding(tokens)
        new_cache = []
        for index, block in enumerate(self.blocks):
            x, block_cache = block(x, cache=None if cache is None else cache[index])
            new_cache.append(block_cache)
        return self.lm_head(self.final_norm(x)), new_cache


def count_params(model, trainable_only=False):
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) in seen or (trainable_only and not p.requires_grad):
            continue
        seen.add(id(p))
        total += p.numel()
    return total


# ---------------------------------------------------------------- evaluation
@torch.no_grad()
def bits_per_byte(model, ids, num_bytes, window, batch_size=32):
    """Total cross-entropy in bits of tokens 1..N-1 of `ids` / num_bytes (UTF-8 bytes of the whole held-out text).

    Windowing: non-overlapping windows of `window` predictions: window k feeds ids[k*W : k*W + W] and predicts
    ids[k*W + 1 : k*W + W + 1] (the last window is shorter), so every token but the first is predicted exactly
    once, with 0 .. W-1 tokens of context from its own window (no context carried across windows).
    """
    was_training = model.training
    model.eval()
    ids = torch.as_tensor(ids, dtype=torch.long)
    total = 0.0
    starts = list(range(0, len(ids) - 1, window))
    full = [s for s in starts if s + window + 1 <= len(ids)]
    for i in range(0, len(full), batch_size):
        chunk = torch.stack([ids[s:s + window + 1] for s in full[i:i + batch_size]])
        logits, _ = model(chunk[:, :-1])
        total += F.cross_entropy(logits.flatten(0, 1).float(), chunk[:, 1:].flatten(), reduction="sum").item()
    for s in starts[len(full):]:  # the partial last window
        chunk = ids[s:][None]
        logits, _ = model(chunk[:, :-1])
        total += F.cross_entropy(logits.flatten(0, 1).float(), chunk[:, 1:].flatten(), reduction="sum").item()
    model.train(was_training)
    return total / math.log(2) / num_bytes


# ---------------------------------------------------------------- training
class RandomWindows(Dataset):
    """`count` windows of context+1 tokens at random offsets (drawn once from `seed`)."""

    def __init__(self, ids, context, count, seed):
        self.ids = torch.as_tensor(ids, dtype=torch.long)
        g = torch.Generator().manual_seed(seed)
        self.starts = torch.randint(0, len(self.ids) - context - 1, (count,), generator=g)
        self.context = context

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, i):
        s = int(self.starts[i])
        w = self.ids[s:s + self.context + 1]
        return w[:-1], w[1:]


def lm_loss(model, inputs, labels):
    logits, _ = model(inputs)
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


MODEL_KEYS = ("vocab_size", "embed_dim", "num_heads", "num_kv_heads", "hidden_dim", "num_layers", "max_len")


def build(cfg, seed):
    torch.manual_seed(seed)
    return Llama(**{k: cfg[k] for k in MODEL_KEYS}, embed_std=cfg.get("embed_std"))


def uptime():
    return os.popen("uptime").read().strip()


def run(cfg, seed, threads=2, eval_points=6, data=None, log=print):
    """Train one model with course_lib.train for cfg['steps'] steps; returns dict with the bpb curve."""
    if data is None:
        data = prepare(cfg["vocab_size"])
    tok, train_ids, test_ids, test_bytes = data
    model = build(cfg, seed)
    steps, batch = cfg["steps"], cfg["batch_size"]
    loader = DataLoader(RandomWindows(train_ids, cfg["max_len"], steps * batch, seed + 1000), batch_size=batch)
    eval_every = max(1, steps // eval_points)
    eval_cpu = [0.0]

    def evaluate(m):
        c0 = time.process_time()
        value = bits_per_byte(m, test_ids, test_bytes, cfg["max_len"])
        eval_cpu[0] += time.process_time() - c0
        return value, 0.0
    load_before = uptime()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    history = train(model, loader, None, num_epochs=1, lr=cfg["lr"], warmup_steps=cfg["warmup"],
                    weight_decay=cfg.get("weight_decay", 0.0), betas=cfg.get("betas", (0.9, 0.98)),
                    eval_every=eval_every, threads=threads, batch_loss=lm_loss, evaluate_fn=evaluate,
                    max_seconds=cfg.get("max_seconds"))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    out = dict(seed=seed, threads=threads, steps=history.step[-1], train_seconds=history.seconds[-1],
               total_wall=wall, total_cpu=cpu, train_cpu=cpu - eval_cpu[0], final_bpb=history.val_loss[-1],
               curve=[(s, round(t, 1), round(v, 4)) for s, t, v in zip(history.step, history.seconds,
                                                                       history.val_loss)],
               train_loss_last=history.train_loss[-1], params=count_params(model),
               uptime_before=load_before, uptime_after=uptime())
    return model, out


_cache = {}


def prepare(vocab_size):
    if vocab_size in _cache:
        return _cache[vocab_size]
    train_text, test_text, _ = split_topics()
    tok = bpe.BPETokenizer(get_merges(vocab_size))
    train_ids = tok.encode(train_text)
    test_ids = tok.encode(test_text)
    _cache[vocab_size] = (tok, train_ids, test_ids, n_bytes(test_text))
    return _cache[vocab_size]
