"""Task 1's probe of a student's wrong merge: the pair counts of the check's text after the merges before it (the
fixture's, computed from the reference), which tell whether the merge joined a pair the text no longer holds, and
why: a pair merged before whose count fell to 0, or a token the merge should have taken out; and, when the pair is
there, whether it tied with the expected one."""
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
TIE_SECOND_IGNORED = Diagnosis(
    "tie-second-ignored",
    "a tie between two pairs that start with the same bytes was broken on the first token alone: compare the second "
    "token's bytes too, max by (count, vocab[a], vocab[b]).")


def counts_after(probe, k):
    """{(a, b): occurrences} of the probe's text after its first k right merges, or None when the fixture has none
    (the timed text)."""
    table = probe.get("counts")
    if table is None:
        return None
    rows = table[table[:, 0] == k].tolist()
    return {(a, b): count for _, a, b, count in rows}


def absent_diagnosis(merges, k, counts):
    """Why merge k of merges, whose first k are right, joins a pair the text holds no more (counts: after those k), or
    None when the pair is there. A pair merged before is picked again only after every count fell to 0 when the
    count-0 pairs are kept (ZERO_COUNT_PICKED, k past the merges due); before that, a merge that left some of its
    occurrences, or counts not brought up to date, do it too (ABSENT_PAIR: no cause singled out)."""
    pair = merges[k]
    if counts.get(pair, 0) > 0:
        return None
    if pair in merges[:k] and not any(count > 0 for count in counts.values()):
        return ZERO_COUNT_PICKED
    made = merges[pair[0] - 256] if 256 <= pair[0] < 256 + k else None
    return WORD_KEEPS_SECOND if made is not None and made[1] == pair[1] else ABSENT_PAIR
