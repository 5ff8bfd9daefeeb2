"""Probes of a BPE trainer or tokenizer that crashed or gave other ids, generic over how it is written: a KeyError's
key read as a token id or a pair, the helper merge_word (the notebook's pinned name) run on a word of its own, and the
bytes that a list of ids spells. Each returns one sentence, or None when it found nothing."""
import re

from course_lib.llm import PRETOKENIZE


def missing_id(error, first_new=256):
    """What a KeyError of a token id that merges make says, or None."""
    key = error.args[0] if isinstance(error, KeyError) and error.args else None
    if type(key) is not int or key < first_new:
        return None
    return (f"a table keyed by token id has no entry for {key}, the id merge {key - first_new} makes (merge k makes "
            f"{first_new} + k): record each new token when it is made, e.g. vocab[new_id] = vocab[a] + vocab[b], and "
            "number the new ids from 256.")


def unknown_pair(error):
    """What a KeyError of a pair (two ids) says, raised while encoding: a pair that has no merge was looked up."""
    key = error.args[0] if isinstance(error, KeyError) and error.args else None
    if not (isinstance(key, tuple) and len(key) == 2):
        return None
    return (f"encode looked up the pair {key}, which has no merge: stop merging a word when none of its adjacent "
            "pairs has a rank (e.g. take min over ranks.get(pair, inf) and stop when it is inf).")


def merge_word_fault(namespace):
    """What the helper merge_word (if the namespace has one) does wrong on [1, 2, 1, 2, 1] and the pair (1, 2), or
    None: [9, 9, 1] is due, the list given unchanged."""
    merge_word = namespace.get("merge_word") if isinstance(namespace, dict) else None
    if not callable(merge_word):
        return None
    word = [1, 2, 1, 2, 1]
    try:
        got = merge_word(word, (1, 2), 9)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    if word != [1, 2, 1, 2, 1]:
        return (f"merge_word([1, 2, 1, 2, 1], (1, 2), 9) changed the list it was given (to {word}): the trainer needs "
                "the word's old form to subtract its pairs; build and return a new list.")
    if list(got) == [9, 1, 2, 1]:
        return ("merge_word([1, 2, 1, 2, 1], (1, 2), 9) gave [9, 1, 2, 1]: it replaces only the first occurrence; "
                "replace every one, [9, 9, 1].")
    if list(got) != [9, 9, 1]:
        return f"merge_word([1, 2, 1, 2, 1], (1, 2), 9) gave {list(got)} where [9, 9, 1] is due."
    return None


def token_bytes(merges):
    """{id: bytes} of the 256 byte ids and each merge's new id (merge k makes 256 + k)."""
    vocab = {i: bytes([i]) for i in range(256)}
    for k, (a, b) in enumerate(merges):
        vocab[256 + k] = vocab.get(a, b"") + vocab.get(b, b"")
    return vocab


def lost_characters(ids, text, merges):
    """What characters ids (an encoding of text) leave out, as a sentence, or None when they spell text or more."""
    vocab = token_bytes(merges)
    if any(i not in vocab for i in ids):
        return None
    spelt = b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")
    if spelt == text:
        return None
    lost = text
    for char in spelt:  # spelt must be text with some characters left out
        index = lost.find(char)
        if index < 0:
            return None
        lost = lost[:index] + "\0" + lost[index + 1:]
    missing = sorted({c for c in lost if c != "\0"})
    if not missing or not re.fullmatch(r"\s+", "".join(missing)):
        return None
    return (f"the ids spell {spelt!r}: the whitespace {''.join(missing)!r} of the text is lost: split with "
            "PRETOKENIZE.findall(text), which keeps every character (a space goes with the word after it), not "
            "str.split().")


def merge_still_applies(ids, text, merges):
    """Which learnt merge still joins two adjacent ids inside one word of the encoding, as a sentence, or None."""
    vocab, ranks = token_bytes(merges), {tuple(pair): k for k, pair in enumerate(merges)}
    if any(i not in vocab for i in ids) or b"".join(vocab[i] for i in ids) != text.encode("utf-8", "surrogatepass"):
        return None
    ends, position = set(), 0
    for piece in PRETOKENIZE.findall(text):  # the words the pretokenizer makes, each ending at a byte position
        position += len(piece.encode("utf-8", "surrogatepass"))
        ends.add(position)
    position = 0
    for a, b in zip(ids, ids[1:]):
        position += len(vocab[a])
        if position not in ends and (a, b) in ranks:
            return (f"the pair ({a}, {b}), merge {ranks[(a, b)]}, still stands side by side inside one word: keep "
                    "merging each word, the learnt pair of lowest rank first, until none of its pairs has a merge.")
    return None


def reversed_token(tokenizer, merges):
    """The first merge whose new id decode spells as its two halves swapped, as a sentence, or None."""
    vocab = token_bytes(merges)
    for k, (a, b) in enumerate(merges[:20]):
        try:
            got = tokenizer.decode([256 + k])
        except Exception:  # noqa: BLE001 -- only a probe
            return None
        swapped = (vocab[b] + vocab[a]).decode("utf-8", errors="replace")
        if vocab[a] != vocab[b] and got == swapped != (vocab[a] + vocab[b]).decode("utf-8", errors="replace"):
            return (f"decode([{256 + k}]) gives {got!r} for the merge ({a}, {b}): a merged token's bytes are the "
                    "first token's then the second's, vocab[a] + vocab[b].")
    return None
