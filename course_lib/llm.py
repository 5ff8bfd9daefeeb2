"""The llm assignment's data and defaults: Python's help topics as training text, the pre-tokenizer students are given,
the held-out rule, and the default sizes the notebook and its checks use.

Work in progress: the assignment is not in course.toml yet (the trained model's section is a placeholder). The text
is `pydoc_data.topics.topics`, which ships with every Python: a dict {topic name: help text} (79 topics in 3.11). Its
size and contents follow the Python version, so nothing here or in the checks depends on its bytes: the held-out
topics are chosen by a rule over the sorted names, never by a list.
"""
import re

# Data

# The pre-tokenizer of OpenAI's 2019 byte-level BPE (tiktoken's "gpt2" encoding),
# 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+, written for the built-in `re`
# (which has no \p{...}): [^\W\d_] for a letter, \d for a digit, (?:[^\s\w]|_) for anything else that is not a
# space. Every character matches a branch, so the words join back to the text exactly. One known difference from
# the original: non-decimal numerics ('²', '½') count as letters here.
PRETOKENIZE = re.compile(r"""'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")
HELD_OUT_EVERY = 10  # placeholder rule, pinned with the trained model: every 10th topic (sorted) is held out


def help_topics():
    """{topic name: help text} of this Python's help topics, sorted by name."""
    from pydoc_data.topics import topics
    return {name: topics[name] for name in sorted(topics)}


def split_topics(topics=None, every=HELD_OUT_EVERY):
    """(training text, held-out text): the topics joined by "\\n" in sorted order, every `every`-th one held out.

    Args:
        topics: {name: text} (default: this Python's help topics).
        every: hold out topics 0, every, 2 * every, ... of the sorted names.
    Returns:
        two str, the training topics' texts and the held-out ones', each joined by "\\n".
    """
    topics = help_topics() if topics is None else dict(sorted(topics.items()))
    texts = list(topics.values())
    held_out = [text for index, text in enumerate(texts) if index % every == 0]
    training = [text for index, text in enumerate(texts) if index % every != 0]
    return "\n".join(training), "\n".join(held_out)


def utf8_size(text):
    """Bytes of text in UTF-8, lone surrogates kept (as the tokenizer counts them)."""
    return len(text.encode("utf-8", errors="surrogatepass"))


# Defaults: the notebook's tokenizer examples

VOCAB_SIZE = 1000  # 256 bytes + 744 merges: the tokenizer the notebook trains on the help topics
EXAMPLE_MERGES_SHOWN = 20  # the first merges the notebook prints

# Defaults: the checks' sizes

# The trainer check's timed text: 20,000 characters of made-up words (drawn from torch's generator, so every
# Python gets the same text, which the help topics are not) to 150 merges.
SPEED_CHARS = 20_000
SPEED_VOCAB_SIZE = 406
