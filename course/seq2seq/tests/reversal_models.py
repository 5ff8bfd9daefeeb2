"""Models of the reversal task for the Task 7 tests: the reference trained as the notebook trains it, and cheats."""
import functools

import torch.nn.functional as F
from torch.utils.data import DataLoader

from course_lib import seed_everything, stop_at_accuracy, train
from course_lib import seq2seq as seq2seq_defaults
from course_lib.seq2seq import (EOS_ID, PAD_ID, ReversalDataset, decoding_accuracy, init_embedding,
                                reversal_targets, teacher_forcing_loss)
from trained_cache import trained_once


@functools.lru_cache(maxsize=None)
def trained_reference():
    """train_reference on the seq2seq reference namespace, once per test run (about 10 s on 2 cores)."""
    from .checks import reference, source
    return trained_on(reference(), source())


def trained_on(namespace, code):
    """train_reference on namespace, the namespace of code (the reference's or a mutant's), once per test run."""
    return trained_once("seq2seq", code, lambda: namespace["Seq2SeqTransformer"](**seq2seq_defaults.MODEL),
                        train_reference, namespace)


def train_reference(ref):
    """The reference Seq2SeqTransformer trained with the notebook's defaults, seeds and stopping rule."""
    train_data = ReversalDataset(seq2seq_defaults.TRAIN_SIZE, seed=1)
    val_data = ReversalDataset(seq2seq_defaults.VAL_SIZE, seed=2)
    seed_everything(0)
    loader = DataLoader(train_data, batch_size=seq2seq_defaults.BATCH_SIZE, shuffle=True)
    model = init_embedding(ref["Seq2SeqTransformer"](**seq2seq_defaults.MODEL))
    train(model, loader, None, **seq2seq_defaults.TRAINING, batch_loss=teacher_forcing_loss,
          evaluate_fn=lambda m: decoding_accuracy(m, val_data.sources, val_data.targets),
          callbacks=[stop_at_accuracy(seq2seq_defaults.STOP_AT_ACCURACY)])
    return model.eval()


def reversal_logits(source, length, scale=10.0):
    """(B, length, vocab) logits whose argmax at position t is the t-th token of source's reversal + EOS."""
    targets = reversal_targets(source)  # (B, S + 1)
    targets = F.pad(targets, (0, max(0, length - targets.size(1))), value=PAD_ID)[:, :length]  # (B, length)
    return F.one_hot(targets, int(source.max()) + 1 if source.numel() else EOS_ID + 1).float() * scale


def source_reader(ref):
    """A reference model whose decode reads the answer from `source` (given for the padding mask): a cheat."""
    class SourceReader(ref["Seq2SeqTransformer"]):
        def decode(self, target_input, memory, source, attention=None):
            honest = super().decode(target_input, memory, source, attention)  # (B, T, V)
            cheat = reversal_logits(source, target_input.size(1))  # (B, T, V')
            return honest * 0 + F.pad(cheat, (0, honest.size(-1) - cheat.size(-1)))

    return SourceReader(**seq2seq_defaults.MODEL).eval()


def memory_copier(ref):
    """A model that writes the source into its memory by hand and reverses it in decode, whatever its weights."""
    class MemoryCopier(ref["Seq2SeqTransformer"]):
        def encode(self, source, attention=None):
            super().encode(source, attention)
            return F.one_hot(source, self.embed_dim).float()  # (B, S, D): the tokens, not an encoding

        def decode(self, target_input, memory, source, attention=None):
            honest = super().decode(target_input, memory, source, attention)  # (B, T, V)
            tokens = memory.argmax(-1)  # (B, S): read back from the memory, not from source
            cheat = reversal_logits(tokens, target_input.size(1))
            return honest * 0 + F.pad(cheat, (0, honest.size(-1) - cheat.size(-1)))

    return MemoryCopier(**seq2seq_defaults.MODEL).eval()


def future_reader(ref):
    """A model whose decoder sees the whole target (no causal mask): teacher forcing would flatter it."""
    class FutureReader(ref["Seq2SeqTransformer"]):
        def decode(self, target_input, memory, source, attention=None):
            honest = super().decode(target_input, memory, source, attention)  # (B, T, V)
            shifted = F.pad(target_input[:, 1:], (0, 1), value=EOS_ID)  # (B, T): the next input token
            return honest + F.one_hot(shifted, honest.size(-1)).to(honest.dtype) * 100

    return FutureReader(**seq2seq_defaults.MODEL).eval()
