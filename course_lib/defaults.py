"""The notebook's default data, model and training settings, in one place (the bench uses them too).

Chosen by measurement on a 2-core CPU; the steps and times they take, and the machine's load when measured,
are in docs/bench.md.
"""
import torch.nn as nn

from .data import VOCAB_SIZE

SEQ_LEN = 32  # tokens per sequence, [CLS] not counted; also the length checks 6 and 8 evaluate
TRAIN_SIZE = 60_000  # sequences drawn for training; far more than one run consumes
VAL_SIZE = 1_000
BATCH_SIZE = 32

CLASSIFIER = dict(input_dim=VOCAB_SIZE, num_classes=1, embed_dim=16, num_heads=2, feedforward_dim=32,
                  num_layers=2, activation=nn.ReLU)
LINFORMER = dict(CLASSIFIER, sequence_length=SEQ_LEN + 1, proj_dim=8)

# Many epochs keep the cosine schedule near its peak through the plateau; training stops
# at the accuracy target (stop_at_accuracy); pass max_seconds=... to train() to cap the time.
TRAINING = dict(num_epochs=20, lr=1e-3, warmup_steps=100)
STOP_AT_ACCURACY = 0.98


def describe(config):
    """One readable line for a settings dict: classes by name, e.g. "embed_dim=16, activation=ReLU"."""
    return ", ".join(f"{name}={getattr(value, '__name__', value)}" for name, value in config.items())
