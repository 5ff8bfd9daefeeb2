"""The seq2seq assignment's data and defaults: the sequence-reversal task (token ids, data, teacher forcing, loss and
accuracy) and the notebook's default data, model and training settings, in one place (the bench uses them too).

Shared by the notebook, the checkers and the grader, so all three agree on what PAD, BOS and EOS are. The settings
were chosen by measurement on a 2-core CPU; the steps and seconds they take, and the machine's load when measured,
are stated in the notebook's Task 7 and in docs/bench.md.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset

from .calls import student_call

# Data

PAD_ID, BOS_ID, EOS_ID = 0, 1, 2  # PAD = 0, so nn.Embedding(padding_idx=0) and zero-filled tensors agree
FIRST_SYMBOL = 3  # the symbols are FIRST_SYMBOL .. VOCAB_SIZE - 1
NUM_SYMBOLS = 10
VOCAB_SIZE = FIRST_SYMBOL + NUM_SYMBOLS  # 13
MIN_LEN, MAX_LEN = 1, 12  # source lengths, both included; a target is one token longer (EOS)
ALPHABET = "_<>" + "abcdefghijklmnopqrstuvwxyz"  # one printable character per token id: PAD, BOS, EOS, symbols


def random_sources(num_sequences, generator, min_len=MIN_LEN, max_len=MAX_LEN, num_symbols=NUM_SYMBOLS):
    """Draw source sequences of random symbols and random lengths, padded on the right.

    Args:
        num_sequences: how many sequences N to draw.
        generator: torch.Generator that makes the draw reproducible.
        min_len, max_len: the range of lengths, both included.
        num_symbols: symbols are drawn uniformly from FIRST_SYMBOL .. FIRST_SYMBOL + num_symbols - 1.

    Returns:
        LongTensor (N, max_len), PAD_ID after each sequence's end.
    """
    lengths = torch.randint(min_len, max_len + 1, (num_sequences, 1), generator=generator)  # (N, 1)
    symbols = torch.randint(num_symbols, (num_sequences, max_len), generator=generator) + FIRST_SYMBOL  # (N, S)
    return symbols.masked_fill(torch.arange(max_len) >= lengths, PAD_ID)  # (N, S)


def reversal_targets(sources):
    """sources (N, S) padded with PAD_ID -> targets (N, S + 1): each sequence reversed, then EOS, then PAD."""
    seq_len = sources.size(1)
    lengths = (sources != PAD_ID).sum(dim=1, keepdim=True)  # (N, 1)
    index = lengths - 1 - torch.arange(seq_len + 1, device=sources.device)  # (N, S + 1): where each token comes from
    reversed_tokens = sources.gather(1, index.clamp(0, seq_len - 1))  # (N, S + 1)
    targets = reversed_tokens.masked_fill(index < 0, PAD_ID)  # (N, S + 1)
    return targets.scatter(1, lengths, EOS_ID)  # (N, S + 1)


@student_call
def teacher_forcing_input(targets):
    """targets (N, T) -> decoder input (N, T): BOS followed by targets[:, :-1], the target shifted right."""
    bos = torch.full_like(targets[:, :1], BOS_ID)  # (N, 1)
    return torch.cat([bos, targets[:, :-1]], dim=1)  # (N, T)


@student_call
def sequence_loss(logits, targets):
    """Mean cross-entropy over the real target tokens: logits (N, T, V), targets (N, T); PAD positions ignored."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=PAD_ID)


@student_call
def teacher_forcing_loss(model, sources, targets):
    """The training loss of a seq2seq model on one batch: sources (N, S), targets (N, T) -> scalar tensor."""
    return sequence_loss(model(sources, teacher_forcing_input(targets)), targets)


@student_call
def exact_match(predicted, targets):
    """Fraction of rows of predicted (N, T') equal to targets (N, T) token for token, PAD-padded to one width."""
    width = max(predicted.size(1), targets.size(1))
    predicted = F.pad(predicted, (0, width - predicted.size(1)), value=PAD_ID)  # (N, width)
    targets = F.pad(targets.to(predicted.device), (0, width - targets.size(1)), value=PAD_ID)  # (N, width)
    return (predicted == targets).all(dim=1).float().mean().item()


@student_call
@torch.no_grad()
def decoding_accuracy(model, sources, targets):
    """(loss, accuracy) of a causal seq2seq model: accuracy is the exact match greedy decoding would score.

    Greedy decoding reproduces a target exactly if and only if, at every position up to its EOS, the most likely
    token given the true prefix is the true token. For a decoder that cannot see the future, one teacher-forced
    pass gives every one of those predictions at once, so nothing is generated here. The model is evaluated in
    eval mode and left in the mode it was in.

    Args:
        model: maps (sources (N, S), decoder input (N, T)) to logits (N, T, vocab_size).
        sources, targets: (N, S) and (N, T) token ids, as made by random_sources and reversal_targets.

    Returns:
        (mean loss over real tokens, fraction of sequences entirely right) as Python floats.
    """
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters(), sources).device  # a model without parameters yet fails in its forward
        sources, targets = sources.to(device), targets.to(device)
        logits = model(sources, teacher_forcing_input(targets))  # (N, T, vocab_size)
        right = (logits.argmax(dim=-1) == targets) | (targets == PAD_ID)  # (N, T): positions after EOS do not count
        return sequence_loss(logits, targets).item(), right.all(dim=1).float().mean().item()
    finally:
        model.train(was_training)


@student_call
def init_embedding(model):
    """Re-draw model.embedding as N(0, 1 / embed_dim), its padding row zero, so sqrt(embed_dim) scaling gives ~1.

    PyTorch's default N(0, 1), multiplied by sqrt(embed_dim), makes the tokens ~6x larger than the positional
    encoding at embed_dim 32; on the reversal task, with that default, two of three seeds were still below 99% exact
    match after 60 s of training on a 2-core CPU, and the third took 2,750 steps.

    Args:
        model: a module whose `embedding` is an nn.Embedding. Returns the model.
    """
    embedding = getattr(model, "embedding", None)
    if not isinstance(embedding, torch.nn.Embedding):
        raise NotImplementedError("init_embedding: the model has no `embedding` (an nn.Embedding) yet; "
                                  "Task 5 creates it")
    with torch.no_grad():
        embedding.weight.normal_(0.0, embedding.embedding_dim ** -0.5)
        if embedding.padding_idx is not None:
            embedding.weight[embedding.padding_idx].zero_()
    return model


class ReversalDataset(Dataset):
    """(source, target) pairs of the reversal task, drawn once from a seed.

    Args:
        size: number of pairs N.
        seed: seed of the draw; the same seed gives the same data.
        min_len, max_len, num_symbols: as in random_sources.
    """

    @student_call
    def __init__(self, size, seed=0, min_len=MIN_LEN, max_len=MAX_LEN, num_symbols=NUM_SYMBOLS):
        generator = torch.Generator().manual_seed(seed)
        self.sources = random_sources(size, generator, min_len, max_len, num_symbols)  # (N, max_len)
        self.targets = reversal_targets(self.sources)  # (N, max_len + 1)

    def __len__(self):
        return len(self.sources)

    def __getitem__(self, index):
        return self.sources[index], self.targets[index]


@student_call
def show(tokens):
    """A token sequence (L,) as a string, one character per token ('_' PAD, '<' BOS, '>' EOS)."""
    return "".join(ALPHABET[token] if 0 <= token < len(ALPHABET) else "?" for token in tokens.tolist())


# Default settings

BATCH_SIZE = 64
MAX_STEPS = 1_500  # the cosine schedule reaches 0 here; training stops at the target well before
TRAIN_SIZE = BATCH_SIZE * MAX_STEPS  # one pass over freshly drawn pairs: no pair is seen twice
VAL_SIZE = 1_000

MODEL = dict(vocab_size=VOCAB_SIZE, embed_dim=32, num_heads=4, feedforward_dim=64, num_encoder_layers=2,
             num_decoder_layers=2, activation=nn.ReLU, dropout=0.0, pad_id=PAD_ID)
TRAINING = dict(num_epochs=1, lr=3e-3, warmup_steps=100, eval_every=100)
STOP_AT_ACCURACY = 0.998  # safely above the 99% check_task_7 asks for on its own fresh sequences
CHECK_ACCURACY = 0.99  # what check_task_7 asks (checkers.seq2seq.trained.TARGET_ACCURACY), drawn beside the stop
# The live training curves: this task's stop line and the check's bar, and the loss of a uniform guess.
CURVES = dict(target_accuracy=STOP_AT_ACCURACY, target_label="training stops at", check_accuracy=CHECK_ACCURACY,
              chance_loss=math.log(VOCAB_SIZE), chance_label=f"ln {VOCAB_SIZE} (uniform guess)")
