"""Models of the addition task for the Task 7 tests and the grading tests: the reference trained as the notebook
trains it, and cheats that answer without having learned (each keeps the pinned GPT layout)."""
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from course_lib import seed_everything, stop_at_accuracy, train
from course_lib import gpt as gpt_defaults
from course_lib.gpt import (NUM_DIGITS, PLUS_ID, PROMPT_LEN, VOCAB_SIZE, AdditionDataset, answer_accuracy,
                            answer_loss)

from trained_cache import trained_once

from .checks import reference, source


@functools.lru_cache(maxsize=None)
def trained_reference():
    """train_reference on the gpt reference namespace, once per test run (about 10 s on 2 cores)."""
    return trained_on(reference(), source())


def trained_on(namespace, code):
    """train_reference on namespace, the namespace of code (the reference's or a mutant's), once per test run."""
    return trained_once("gpt", code, lambda: namespace["GPT"](**gpt_defaults.MODEL), train_reference, namespace)


def train_reference(ref):
    """The reference GPT trained with the notebook's defaults, seeds and stopping rule."""
    train_data = AdditionDataset(gpt_defaults.TRAIN_SIZE, seed=1)
    val_data = AdditionDataset(gpt_defaults.VAL_SIZE, seed=2)
    seed_everything(0)
    loader = DataLoader(train_data, batch_size=gpt_defaults.BATCH_SIZE, shuffle=True)
    model = ref["GPT"](**gpt_defaults.MODEL)
    train(model, loader, None, **gpt_defaults.TRAINING, batch_loss=answer_loss,
          evaluate_fn=lambda m: answer_accuracy(m, val_data.sequences),
          callbacks=[stop_at_accuracy(gpt_defaults.STOP_AT_ACCURACY)])
    return model.eval()


def true_answer_logits(tokens, scale=30.0):
    """(B, L, V) logits whose argmax at each answer-predicting position is the true next answer digit of the sum of
    the prompt's operands (written in tokens), computed by arithmetic: what a lookup or a calculator would give."""
    digits = tokens[:, :PROMPT_LEN].clamp(max=9)  # (B, P): the operands' digits (+ and = are ignored below)
    powers = 10 ** torch.arange(NUM_DIGITS, device=tokens.device)  # (n,)
    a = (digits[:, :NUM_DIGITS] * powers).sum(1)  # (B,)
    b = (digits[:, NUM_DIGITS + 1:2 * NUM_DIGITS + 1] * powers).sum(1)  # (B,)
    answer = (a + b)[:, None] // 10 ** torch.arange(NUM_DIGITS + 1, device=tokens.device) % 10  # (B, n + 1)
    targets = torch.full(tokens.shape, PLUS_ID, device=tokens.device)  # (B, L)
    width = min(tokens.size(1) - PROMPT_LEN + 1, NUM_DIGITS + 1)
    if width > 0:
        targets[:, PROMPT_LEN - 1:PROMPT_LEN - 1 + width] = answer[:, :width]
    return F.one_hot(targets, VOCAB_SIZE).to(torch.get_default_dtype()) * scale  # (B, L, V)


def calculator(ref):
    """An untrained reference GPT whose forward adds the operands by arithmetic (causal: it reads only the prompt):
    the same answers whatever its weights, so re-drawing them changes nothing."""
    class Calculator(ref["GPT"]):
        def forward(self, tokens, cache=None):
            logits, new_cache = super().forward(tokens, cache)  # (B, L, V)
            return logits * 0 + true_answer_logits(tokens), new_cache

    torch.manual_seed(0)
    return Calculator(**gpt_defaults.MODEL).eval()


def memoriser(ref, seed, size, as_parameter=True):
    """A GPT with an extra table of the answers to the problems of one seed (the check's, if it knew it), read in
    forward at the answer positions only (so it stays causal); the table is an nn.Parameter or a buffer."""
    from course_lib.gpt import addition_sequences

    class Memoriser(ref["GPT"]):
        def __init__(self, **config):
            super().__init__(**config)
            sequences = addition_sequences(size, torch.Generator().manual_seed(seed))  # (N, L)
            table = F.one_hot(sequences, VOCAB_SIZE).float() * 30  # (N, L, V)
            if as_parameter:
                self.table = nn.Parameter(table)
            else:
                self.register_buffer("table", table)
            self.prompts = sequences[:, :PROMPT_LEN]  # (N, P)

        def forward(self, tokens, cache=None):
            logits, new_cache = super().forward(tokens, cache)  # (B, L, V)
            match = (tokens[:, None, :PROMPT_LEN] == self.prompts[None]).all(-1).float()  # (B, N)
            known = (match @ self.table[:, 1:tokens.size(1) + 1].flatten(1)).view_as(logits)  # (B, L, V)
            known[:, :PROMPT_LEN - 1] = 0  # before '=', a position cannot know the prompt's end yet
            return logits * 0 + known, new_cache

    torch.manual_seed(0)
    return Memoriser(**gpt_defaults.MODEL).eval()


def future_reader(ref):
    """The trained reference whose logits at each position also see the next token: not causal."""
    model = trained_reference()

    class FutureReader(ref["GPT"]):
        def forward(self, tokens, cache=None):
            logits, new_cache = super().forward(tokens, cache)  # (B, L, V)
            ahead = torch.roll(tokens, -1, dims=1)  # (B, L): the token after each position
            return logits + F.one_hot(ahead, VOCAB_SIZE).to(logits.dtype) * 1e-2, new_cache

    reader = FutureReader(**gpt_defaults.MODEL)
    reader.load_state_dict(model.state_dict())
    return reader.eval()


def untied(ref):
    """The trained reference with its head untied: a copy of the embedding's values in a parameter of its own."""
    model = trained_reference()
    copy = ref["GPT"](**gpt_defaults.MODEL)
    copy.load_state_dict(model.state_dict())
    copy.lm_head.weight = nn.Parameter(model.token_embedding.weight.detach().clone())
    return copy.eval()
