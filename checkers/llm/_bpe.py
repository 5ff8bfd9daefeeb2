"""What the checks of Tasks 1 and 2 share: merge and id lists as padded tensors (the fixtures' form), their bytes,
and the diagnoses both tasks can give (a helper of Task 1 that Task 2's tokenizer calls)."""
import torch

from .._core import Diagnosis

NONE = -1  # padding of a merge list (rows) or an id list (entries) in the fixtures

MERGE_OVERLAPPING = Diagnosis(
    "merge-overlapping",
    "merging the pair (a, a) in [a, a, a] must give [aa, a]: after a merge skip past both tokens (i += 2); "
    "yours merges overlapping occurrences, making tokens the bytes do not hold.")
MERGE_RIGHT_TO_LEFT = Diagnosis(
    "merge-right-to-left",
    "merging the pair (a, a) in [a, a, a] gives [a, aa] instead of [aa, a]: replace the occurrences of a pair "
    "scanning the word from left to right.")
NO_SURROGATEPASS = Diagnosis(
    "no-surrogatepass",
    "a string holding a lone surrogate ('\\ud800') cannot be encoded with plain UTF-8: use "
    "text.encode(\"utf-8\", errors=\"surrogatepass\"), and decode with errors=\"surrogatepass\" first, so that every "
    "str survives.")


def padded_merges(merges, rows):
    """merges [(a, b), ...] as a LongTensor (rows, 2), cut or padded with NONE."""
    table = torch.full((rows, 2), NONE, dtype=torch.long)
    kept = [tuple(pair) for pair in list(merges)[:rows]]
    if kept:
        table[:len(kept)] = torch.tensor(kept, dtype=torch.long)
    return table


def padded_ids(ids, length):
    """ids [i, ...] as a LongTensor (length,), cut or padded with NONE."""
    row = torch.full((length,), NONE, dtype=torch.long)
    kept = list(ids)[:length]
    if kept:
        row[:len(kept)] = torch.tensor(kept, dtype=torch.long)
    return row


def unpadded(table):
    """A fixture's padded merges (rows, 2) or ids (length,) back as a list of tuples or of ints."""
    if table.dim() == 2:
        return [tuple(row) for row in table[table[:, 0] != NONE].tolist()]
    return table[table != NONE].tolist()


def token_bytes(merges):
    """{id: bytes} of the 256 bytes and of the tokens merges make (merge k makes 256 + k)."""
    vocab = {i: bytes([i]) for i in range(256)}
    for k, (a, b) in enumerate(merges):
        if a in vocab and b in vocab:
            vocab[256 + k] = vocab[a] + vocab[b]
    return vocab


def shown(pair, vocab):
    """A merge as the byte strings it joins, e.g. (b' t', b'he'); an id no merge made shows as itself."""
    return "(" + ", ".join(repr(vocab.get(i, i)) for i in pair) + ")"


def shorten(text, limit=40):
    """repr of text, cut to limit characters."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "…"


def listed(items, limit=8):
    """A list shown whole up to limit entries, then cut with "…"."""
    items = list(items)
    return str(items) if len(items) <= limit else str(items[:limit])[:-1] + ", …]"
