"""The llm assignment's data and defaults: Python's help topics as training text, the pre-tokenizer students are given,
the held-out rule, the default sizes the notebook and its checks use, and the trained model's data, loss and score
(bits per byte), shared by the notebook, the check and the grader.

The text is `pydoc_data.topics.topics`, which ships with every Python: a dict {topic name: help text} (79 topics in
3.11). Its size and contents follow the Python version, so nothing here or in the checks depends on its bytes: the
held-out topics are chosen by a rule over each topic's name, never by a list.
"""
import ast
import math
import re
import sysconfig
import zlib
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

from .calls import student_call

# Data

# The pre-tokenizer of OpenAI's 2019 byte-level BPE (tiktoken's "gpt2" encoding),
# 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+, written for the built-in `re`
# (which has no \p{...}): [^\W\d_] for a letter, \d for a digit, (?:[^\s\w]|_) for anything else that is not a
# space. Every character matches a branch, so the words join back to the text exactly. One known difference from
# the original: non-decimal numerics ('²', '½') count as letters here.
PRETOKENIZE = re.compile(r"""'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")
# A topic is held out when the CRC-32 of its name is 5 mod 8: the rule reads the name alone, so a topic that another
# Python version adds or drops moves no other topic across the split (a rule over sorted positions would reshuffle
# them all). In 3.11.7 it holds out 13 of 79 topics, 47,771 bytes, the largest 9.2 kB; "every 8th sorted" would
# hold out 36 kB of which 25 kB is the one `string-methods` topic.
HELD_OUT_MODULUS, HELD_OUT_RESIDUE = 8, 5


def help_topics():
    """{topic name: help text} of this Python's help topics, sorted by name."""
    from pydoc_data.topics import topics
    return {name: topics[name] for name in sorted(topics)}


def is_held_out(name):
    """Whether the topic called name is held out: the CRC-32 of its UTF-8 name is HELD_OUT_RESIDUE mod 8."""
    return zlib.crc32(name.encode("utf-8")) % HELD_OUT_MODULUS == HELD_OUT_RESIDUE


@student_call
def split_topics(topics=None):
    """(training text, held-out text): each side's topics joined by "\\n" in sorted-name order.

    Args:
        topics: {name: text} (default: this Python's help topics).
    Returns:
        two str, the training topics' texts and the held-out ones' (is_held_out of their names).
    """
    topics = help_topics() if topics is None else dict(sorted(topics.items()))
    training = [text for name, text in topics.items() if not is_held_out(name)]
    held_out = [text for name, text in topics.items() if is_held_out(name)]
    return "\n".join(training), "\n".join(held_out)


@student_call
def utf8_size(text):
    """Bytes of text in UTF-8, lone surrogates kept (as the tokenizer counts them)."""
    return len(text.encode("utf-8", errors="surrogatepass"))


# Defaults: the notebook's tokenizer examples

VOCAB_SIZE = 1024  # 256 bytes + 768 merges: the tokenizer the notebook trains on the help topics
EXAMPLE_MERGES_SHOWN = 20  # the first merges the notebook prints

# Defaults: the checks' sizes

# The trainer check's timed text: 20,000 characters of made-up words (drawn from torch's generator, so every
# Python gets the same text, which the help topics are not) to 150 merges.
SPEED_CHARS = 20_000
SPEED_VOCAB_SIZE = 406

# Defaults: the trained model (measured on a 2-core CPU: course/llm/study/train/FINDINGS.md and the notebook)

# 2 blocks of width 64 (158,016 parameters with the tied head): at about a minute of CPU, more optimizer steps on a
# small model beat every wider or deeper one tried (width 96 or 128, 3 or 4 blocks); hidden 176 ≈ 8/3 · 64 as Llama
MODEL = dict(vocab_size=VOCAB_SIZE, embed_dim=64, num_heads=4, num_kv_heads=2, hidden_dim=176, num_layers=2,
             max_len=128)
BATCH_SIZE = 8  # windows per step; 16 per step ended 0.23 bits per byte worse in the same time
STEPS = 1_100  # one pass over STEPS * BATCH_SIZE random windows; about 52 s at 2 threads on a quiet 2-core CPU
WINDOWS_SEED = 1  # the windows' offsets
# lr 6e-3 beat 3e-3 and 1e-2; warm-up a tenth of the steps, then cosine to 0
TRAINING = dict(num_epochs=1, lr=6e-3, warmup_steps=110, weight_decay=0.0, betas=(0.9, 0.98), eval_every=100)
EVAL_CHARS = 12_000  # the part of the held-out text the training curves and the check score (the first characters)
# The live curves: no accuracy target (the check asks for bits per byte), the loss of a uniform guess, and the data
# scored named as the notebook names it: the held-out part, not a validation set
CURVES = dict(target_accuracy=None, chance_loss=math.log(VOCAB_SIZE), chance_label=f"ln {VOCAB_SIZE} (uniform token)",
              eval_label=f"held-out part ({EVAL_CHARS:,} characters)",
              accuracy_title="Next-token accuracy on the held-out part")


class TextWindows(Dataset):
    """Windows of max_len + 1 consecutive token ids at random offsets, drawn once from a seed; an item is (inputs,
    targets), the window without its last id and without its first.

    Args:
        ids: the token ids of the training text (a list or a LongTensor (N,)).
        max_len: the predictions per window.
        count: the number of windows.
        seed: the draw's seed (the same seed gives the same windows).
    """

    @student_call
    def __init__(self, ids, max_len, count, seed=WINDOWS_SEED):
        self.ids = torch.as_tensor(ids, dtype=torch.long)  # (N,)
        self.max_len = max_len
        generator = torch.Generator().manual_seed(seed)
        self.starts = torch.randint(len(self.ids) - max_len, (count,), generator=generator)  # (count,)

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, index):
        start = int(self.starts[index])
        window = self.ids[start:start + self.max_len + 1]  # (max_len + 1,)
        return window[:-1], window[1:]  # (max_len,), (max_len,)


@student_call
def next_token_loss(model, inputs, targets):
    """The training loss of one batch: the cross-entropy of every next token (nats per token).

    Args:
        model: maps tokens (B, L) to (logits (B, L, V), cache).
        inputs, targets: (B, L) each, windows without their last id and without their first.
    Returns:
        scalar tensor.
    """
    logits, _ = model(inputs)  # (B, L, V)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


@student_call
def bits_per_byte(model, ids, num_bytes, max_len, batch_size=32):
    """The bits the model needs per byte of a text: the sum over ids 1 .. N - 1 of -log2 p(id | the ids before it in
    its window), divided by the text's UTF-8 bytes.

    Non-overlapping windows of max_len predictions: window k reads ids[k max_len : (k + 1) max_len] and predicts
    ids[k max_len + 1 : (k + 1) max_len + 1] (the last window shorter), so every id but the first is predicted once,
    from 0 to max_len - 1 ids of its own window. Bits per byte compare models whatever their tokenizers: a tokenizer
    with longer tokens has fewer, harder predictions. The model is evaluated in eval mode and left in its mode.

    Args:
        model: maps tokens (B, L) to (logits (B, L, V), cache), L up to max_len.
        ids: the text's token ids (a list or a LongTensor (N,)), N >= 2.
        num_bytes: the text's UTF-8 bytes (utf8_size).
        max_len: the predictions per window.
        batch_size: full windows per forward pass.
    Returns:
        bits per byte, a Python float.
    """
    nats, _, _ = _window_totals(model, ids, max_len, batch_size)
    return nats / math.log(2) / num_bytes


@student_call
def next_token_scores(model, ids, max_len, batch_size=32):
    """(mean cross-entropy in nats, fraction of ids that are the most likely token) over ids 1 .. N - 1, windowed as
    bits_per_byte: a train() evaluate_fn's (loss, accuracy)."""
    nats, correct, count = _window_totals(model, ids, max_len, batch_size)
    return nats / count, correct / count


@torch.no_grad()
def _window_totals(model, ids, max_len, batch_size):
    """(summed cross-entropy in nats, ids predicted right, ids predicted) over bits_per_byte's windows."""
    ids = torch.as_tensor(ids, dtype=torch.long)  # (N,)
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters(), ids).device
        full = (len(ids) - 1) // max_len  # windows of max_len predictions
        windows = ids[:full * max_len + 1].unfold(0, max_len + 1, max_len) if full else ids[:0, None]  # (full, W + 1)
        chunks = [*windows.split(batch_size), ids[full * max_len:][None]]  # and the last, shorter window
        totals = [_chunk_totals(model, chunk.to(device)) for chunk in chunks if chunk.size(1) > 1]
        return tuple(sum(values) for values in zip(*totals))
    finally:
        model.train(was_training)


def _chunk_totals(model, windows):
    """windows (B, W + 1) -> (summed cross-entropy (nats), ids right, ids) of ids 1 .. W given the ones before."""
    logits, _ = model(windows[:, :-1])  # (B, W, V)
    logits, targets = logits.flatten(0, 1).float(), windows[:, 1:].flatten()  # (B W, V), (B W,)
    nats = F.cross_entropy(logits, targets, reduction="sum").item()
    return nats, (logits.argmax(dim=-1) == targets).sum().item(), targets.numel()


# A second text for adapting the trained model: the docstrings of the standard library's own modules, which ship with
# every Python too (their contents follow the version, as the help topics' do)

ADAPT_CHARS = (200_000, 25_000)  # the training side's and the held-out side's characters
ADAPT_HELD_OUT_EVERY = 8  # docstring i is held out when i % 8 == 7


@student_call
def stdlib_docstrings(chars=ADAPT_CHARS):
    """(training text, held-out text): the module, class and function docstrings of the standard library's top-level
    modules (sorted by file name), every ADAPT_HELD_OUT_EVERY-th held out, each side joined by "\\n\\n" and cut.

    Args:
        chars: (training characters, held-out characters); files are read only until both sides have them.
    Returns:
        two str.
    """
    sides, count = ([], []), 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):  # a file of another Python's syntax, or not UTF-8
            continue
        for node in ast.walk(tree):
            text = isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and ast.get_docstring(node)
            if text:
                sides[count % ADAPT_HELD_OUT_EVERY == ADAPT_HELD_OUT_EVERY - 1].append(text)
                count += 1
        if all(sum(map(len, side)) >= size for side, size in zip(sides, chars)):
            break
    return tuple("\n\n".join(side)[:size] for side, size in zip(sides, chars))


# LoRA on the docstrings: rank 8 on the attention's four projections; 161 steps at lr 1e-2 took 12.7 s of CPU time
# in the design study and gained more than rank 4 or lr 3e-3 (course/llm/study/train/FINDINGS.md, section 4)
LORA = dict(rank=8, alpha=16, targets=("q_proj", "k_proj", "v_proj", "o_proj"))
LORA_STEPS = 200
LORA_TRAINING = dict(num_epochs=1, lr=1e-2, warmup_steps=20, weight_decay=0.0, betas=(0.9, 0.98), eval_every=50)
