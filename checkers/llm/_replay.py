"""Task 1's probe of a student's merges: replay them on the text with a correct merge, and find the first merge that
joins a pair the text no longer holds (its count is 0 there), which tells how the student's trainer went wrong."""
from collections import Counter

from course_lib.llm import PRETOKENIZE

from .._core import Diagnosis

ZERO_COUNT_PICKED = Diagnosis(
    "zero-count-picked",
    "it merges a pair whose count has fallen to 0 (the pair no longer occurs in the text): drop such pairs before "
    "picking the next (counts = +counts), and stop when none is left.")
WORD_KEEPS_SECOND = Diagnosis(
    "word-keeps-second",
    "after a merge the words still hold the pair's second token: merge_word must replace both ids of each "
    "occurrence by the new id and skip past both.")
ABSENT_PAIR = Diagnosis(
    "absent-pair",
    "it merges a pair that does not occur in the text after the merges before it: the stored words and the pair "
    "counts disagree (are merged words stored back, and are the counts of exactly those words updated?).")


def merged(word, pair, new_id):
    """word with every occurrence of pair, from the left and without overlap, replaced by new_id."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


TIE_SECOND_IGNORED = Diagnosis(
    "tie-second-ignored",
    "a tie between two pairs that start with the same bytes was broken on the first token alone: compare the second "
    "token's bytes too, max by (count, vocab[a], vocab[b]).")


def words_of(text):
    """{word as a tuple of byte ids: how often it occurs} of the text, split as training splits it."""
    return dict(Counter(tuple(word.encode("utf-8", errors="surrogatepass")) for word in PRETOKENIZE.findall(text)))


def pair_counts(text, merges):
    """Counter {pair: occurrences, each word weighted by its frequency} of the text after merges done right."""
    words = words_of(text)
    for k, pair in enumerate(merges):
        words = {tuple(merged(list(word), pair, 256 + k)): count for word, count in words.items()}
    counts = Counter()
    for word, count in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] += count
    return counts


def first_absent(text, merges):
    """(k, the diagnosis) of the first merge k that joins a pair the text, after merges[:k] done right, does not hold;
    None when every merge joins a pair that is there."""
    words = words_of(text)
    for k, pair in enumerate(merges):
        present = any(pair == (word[i], word[i + 1]) for word in words for i in range(len(word) - 1))
        if not present:
            earlier = merges[pair[0] - 256] if 256 <= pair[0] < 256 + k else None
            if pair in merges[:k]:
                return k, ZERO_COUNT_PICKED
            return k, WORD_KEEPS_SECOND if earlier is not None and earlier[1] == pair[1] else ABSENT_PAIR
        words = {tuple(merged(list(word), pair, 256 + k)): count for word, count in words.items()}
    return None
