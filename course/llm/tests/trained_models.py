"""Models of the help topics for the Task 7 tests (and the grading tests): the reference Llama trained as the notebook
trains it, from the reference tokenizer's merges, once per test run."""
import functools

from torch.utils.data import DataLoader

from course_lib import seed_everything, train
from course_lib import llm as llm_defaults
from course_lib.llm import TextWindows, next_token_loss, split_topics

from trained_cache import trained_once

from .checks import reference, source


@functools.lru_cache(maxsize=None)
def reference_merges():
    """The merges the reference train_bpe learns on the training topics, as the notebook does (about 2 s)."""
    return reference()["train_bpe"](split_topics()[0], llm_defaults.VOCAB_SIZE)


@functools.lru_cache(maxsize=None)
def reference_tokenizer():
    """The reference BPETokenizer with reference_merges()."""
    return reference()["BPETokenizer"](reference_merges())


def trained_reference(seed=0, steps=llm_defaults.STEPS):
    """train_reference on the reference namespace, once per test run (about 90 s of CPU at one thread)."""
    ref, config = reference(), llm_defaults.MODEL
    return trained_once(f"llm seed {seed} steps {steps}", source(), lambda: ref["Llama"](**config), train_reference,
                        ref, reference_tokenizer(), seed, steps)


def train_reference(ref, tokenizer, seed=0, steps=llm_defaults.STEPS):
    """The reference Llama trained as the notebook trains it (seed 0 there), for steps steps of the schedule."""
    config = llm_defaults.MODEL
    windows = TextWindows(tokenizer.encode(split_topics()[0]), config["max_len"], steps * llm_defaults.BATCH_SIZE)
    seed_everything(seed)
    model = ref["Llama"](**config)
    training = dict(llm_defaults.TRAINING, warmup_steps=min(llm_defaults.TRAINING["warmup_steps"], steps // 10))
    train(model, DataLoader(windows, batch_size=llm_defaults.BATCH_SIZE), None, **training,
          batch_loss=next_token_loss, evaluate_fn=lambda model: (0.0, 0.0))
    return model.eval()
