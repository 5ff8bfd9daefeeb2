"""BPE on the training topics: CPU/wall seconds per vocab size, tokens per byte on train and held-out text."""
import time

from common import bpe, get_merges, n_bytes, split_topics, uptime

train_text, test_text, names = split_topics()
print(uptime())
print(f"held out ({len(names)} topics): {names}")
print(f"training text {n_bytes(train_text):,} bytes, held-out {n_bytes(test_text):,} bytes")
for V in (512, 768, 1024, 1536):
    c0, w0 = time.process_time(), time.perf_counter()
    merges = get_merges(V, text=train_text)
    c, w = time.process_time() - c0, time.perf_counter() - w0
    tok = bpe.BPETokenizer(merges)
    tr, te = tok.encode(train_text), tok.encode(test_text)
    assert tok.decode(te) == test_text
    print(f"V={V}: train_bpe {c:.2f} s CPU {w:.2f} s wall, {len(merges)} merges; tokens/byte train "
          f"{len(tr)/n_bytes(train_text):.4f} ({len(tr):,} tokens), held-out {len(te)/n_bytes(test_text):.4f} "
          f"({len(te):,} tokens)")
print(uptime())
