"""The gpt assignment's data and defaults: the addition language (token ids, data, the answer loss and exact-answer
accuracy) and the notebook's default data, model and training settings (the bench and checks use them too).

A problem a + b with n-digit operands is written as one sequence of 3n + 3 tokens, every number least significant
digit first: 37 + 45 = 82 with n = 3 is "730+540=2800" (037 -> 730, 045 -> 540, 0082 -> 2800). The first 2n + 2
tokens are the prompt, the last n + 1 the answer. Written this way, each answer digit depends only on the digits at
the same distances behind it (and the carry just before it), which relative positions such as RoPE express directly.
Shared by the notebook, the checkers and the grader, so all three agree on the format. The settings were chosen by
measurement on a 2-core CPU; the steps and seconds they take, and the machine's load when measured, are stated in
the notebook's Task 7 and in docs/bench.md.
"""

import math

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

from .calls import student_call

# Data

PLUS_ID, EQUALS_ID = 10, 11  # the digits 0..9 are their own ids
VOCAB_SIZE = 12
ALPHABET = "0123456789+="
NUM_DIGITS = 3
PROMPT_LEN = 2 * NUM_DIGITS + 2  # "730+540=": 8 tokens
SEQ_LEN = 3 * NUM_DIGITS + 3  # prompt and the n + 1 answer digits: 12 tokens


def digits_of(numbers, width):
    """numbers (N,) -> (N, width) their decimal digits, least significant first, zero-padded."""
    powers = 10 ** torch.arange(width, device=numbers.device)  # (width,)
    return numbers[:, None] // powers % 10  # (N, width)


def addition_sequences(num_sequences, generator, num_digits=NUM_DIGITS):
    """Draw N problems uniformly over all pairs of n-digit operands -> LongTensor (N, 3n + 3)."""
    a = torch.randint(10 ** num_digits, (num_sequences,), generator=generator)  # (N,)
    b = torch.randint(10 ** num_digits, (num_sequences,), generator=generator)  # (N,)
    plus = torch.full((num_sequences, 1), PLUS_ID)  # (N, 1)
    equals = torch.full((num_sequences, 1), EQUALS_ID)  # (N, 1)
    answer = digits_of(a + b, num_digits + 1)  # (N, n + 1)
    return torch.cat([digits_of(a, num_digits), plus, digits_of(b, num_digits), equals, answer], dim=1)


def answer_logits(model, sequences, prompt_len=PROMPT_LEN):
    """Teacher-forced logits at the answer positions (N, n + 1, V) and the answer tokens (N, n + 1).

    One pass over every position at once: position t's logits predict token t + 1, so the answer's first digit is
    predicted at the prompt's last position ('=').
    """
    logits, _ = model(sequences[:, :-1])  # (N, L - 1, V)
    return logits[:, prompt_len - 1:], sequences[:, prompt_len:]  # (N, n + 1, V), (N, n + 1)


@student_call
def answer_loss(model, inputs, targets, prompt_len=PROMPT_LEN):
    """The training loss of one batch: cross-entropy of the next token, over the answer positions only.

    Args:
        model: maps tokens (N, L) to (logits (N, L, V), cache).
        inputs, targets: (N, L - 1) each, a sequence without its last token and without its first (next tokens).
    Returns:
        scalar tensor; the operands' digits are random, so predicting them would only add noise.
    """
    logits, _ = model(inputs)  # (N, L - 1, V)
    start = prompt_len - 1  # the position of '=', which predicts the first answer digit
    return F.cross_entropy(logits[:, start:].flatten(0, 1), targets[:, start:].flatten())


@student_call
@torch.no_grad()
def answer_accuracy(model, sequences, prompt_len=PROMPT_LEN):
    """(loss, fraction of answers entirely right) as greedy decoding would score them, from one teacher-forced pass.

    Greedy decoding writes an answer exactly right if and only if, at every answer position, the most likely token
    given the true prefix is the true token; a causal model gives all those predictions in one pass, so nothing is
    generated here. The model is evaluated in eval mode and left in the mode it was in.

    Args:
        model: maps tokens (N, L) to (logits (N, L, V), cache); sequences: (N, L) from addition_sequences.
    Returns:
        (mean answer cross-entropy, exact-answer accuracy) as Python floats.
    """
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters(), sequences).device
        logits, answer = answer_logits(model, sequences.to(device), prompt_len)  # (N, n + 1, V), (N, n + 1)
        loss = F.cross_entropy(logits.flatten(0, 1), answer.flatten()).item()
        return loss, (logits.argmax(dim=-1) == answer).all(dim=1).float().mean().item()
    finally:
        model.train(was_training)


class AdditionDataset(Dataset):
    """Addition sequences drawn once from a seed; an item is (inputs, targets): the sequence shifted by one.

    Args:
        size: number of problems N; seed: the draw's seed (the same seed gives the same problems).
    """

    @student_call
    def __init__(self, size, seed=0, num_digits=NUM_DIGITS):
        self.sequences = addition_sequences(size, torch.Generator().manual_seed(seed), num_digits)  # (N, L)

    def __len__(self):
        return len(self.sequences)

    def __getitem__(self, index):
        sequence = self.sequences[index]  # (L,)
        return sequence[:-1], sequence[1:]  # (L - 1,), (L - 1,)


@student_call
def show(tokens):
    """A token sequence (L,) as written, e.g. '730+540=2800' (every number least significant digit first)."""
    return "".join(ALPHABET[token] if 0 <= token < len(ALPHABET) else "?" for token in tokens.tolist())


@student_call
def as_sum(tokens, num_digits=NUM_DIGITS):
    """A sequence or a prompt (L,) as a person writes it, e.g. '37 + 45 = 82' (answer digits as far as given)."""
    digits = [str(token) if token < PLUS_ID else "?" for token in tokens.tolist()]
    a = "".join(reversed(digits[:num_digits])).lstrip("0") or "0"
    b = "".join(reversed(digits[num_digits + 1:2 * num_digits + 1])).lstrip("0") or "0"
    answer = "".join(reversed(digits[2 * num_digits + 2:]))
    return f"{a} + {b} = {answer.lstrip('0') or ('0' if answer else '')}"


# Default settings

BATCH_SIZE = 64
MAX_STEPS = 6_000  # the cosine schedule reaches 0 here; training stops at the target well before (550-1,400 steps)
TRAIN_SIZE = BATCH_SIZE * MAX_STEPS  # one pass over freshly drawn problems: none is seen twice
VAL_SIZE = 1_000

# max_len 512 covers Task 8's timings (a prompt and up to 256 generated tokens); RoPE tables cost nothing to train
MODEL = dict(vocab_size=VOCAB_SIZE, embed_dim=32, num_heads=4, feedforward_dim=128, num_layers=2, max_len=512,
             dropout=0.0)
# lr 1e-2 with a 3,000-step cosine left 2 of 7 runs below 95% at its end; 5e-3 over 6,000 steps reached 95% in
# 16 of 16 (8 seeds of the reference, 8 of a student's own implementation; see the notebook's Task 7)
TRAINING = dict(num_epochs=1, lr=5e-3, warmup_steps=100, eval_every=50)
STOP_AT_ACCURACY = 0.99  # above the 95% check_task_7 asks for on its own fresh problems
CHECK_ACCURACY = 0.95  # what check_task_7 asks (checkers.gpt.trained.TARGET_ACCURACY), drawn beside the stop
# The live training curves: this task's stop line and the check's bar, and the loss of a uniform guess over the digits.
CURVES = dict(target_accuracy=STOP_AT_ACCURACY, target_label="training stops at", check_accuracy=CHECK_ACCURACY,
              chance_loss=math.log(10), chance_label="ln 10 (uniform digit)")
