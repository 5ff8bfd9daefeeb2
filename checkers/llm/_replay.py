"""Task 1's probe of a student's wrong merge: the pair counts of the check's text after the merges before it (the
fixture's, computed from the reference), which tell whether the merge joined a pair the text no longer holds, and
whether a token the merge should have taken out is still there."""
from .._core import Diagnosis

WORD_KEEPS_SECOND = Diagnosis(
    "word-keeps-second",
    "after a merge the words still hold the pair's second token: merge_word must replace both ids of each "
    "occurrence by the new id and skip past both.")
ABSENT_PAIR = Diagnosis(
    "absent-pair",
    "it merges a pair that does not occur in the text after the merges before it: the stored words and the pair "
    "counts disagree (are merged words stored back, and are the counts of exactly those words updated?).")

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
    None when the pair is there: a new id followed by the second id of the merge that made it (the merge kept that
    token), else no cause singled out (a merge that left some occurrences, counts not brought up to date; a pair
    merged again once every count fell to 0 is Task 1's NO_EARLY_STOP, told before this is asked)."""
    pair = merges[k]
    if counts.get(pair, 0) > 0:
        return None
    made = merges[pair[0] - 256] if 256 <= pair[0] < 256 + k else None
    return WORD_KEEPS_SECOND if made is not None and made[1] == pair[1] else ABSENT_PAIR
