"""Task 1's reading of a trainer's wrong merge (checkers/llm/_replay.py), on trainers written the way a student might,
outside the planted list: each mistake gets the advice its evidence identifies, and none gets another mistake's.

The trainers recount every pair after each merge (correct but slow, as a first try often is), with one mistake each;
the tie rules are the reference's trainer with another key.
"""
from collections import Counter

import pytest

from checkers.llm import CheckFailure, check_task_1
from checkers.llm._replay import ABSENT_PAIR, WORD_KEEPS_SECOND, absent_diagnosis
from checkers.llm.training import NO_EARLY_STOP, TIE_SECOND_IGNORED, TOO_SLOW
from course.reference import load_reference, reference_source
from course.registry import assignment
from course_lib.llm import PRETOKENIZE

pytestmark = pytest.mark.fast


def merged(word, pair, new_id, keep_second):
    """word with pair replaced by new_id (and, wrongly, the pair's second id kept after it)."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out += [new_id, word[i + 1]] if keep_second else [new_id]
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def trainer(keep_zero=False, keep_second=False):
    """A train_bpe that recounts every pair after each merge; keep_zero: pairs whose count fell to 0 stay candidates
    (it never stops); keep_second: its merge keeps the pair's second id."""
    def train_bpe(text, vocab_size):
        frequencies = Counter(tuple(w.encode("utf-8", errors="surrogatepass")) for w in PRETOKENIZE.findall(text))
        words, weights = [list(word) for word in frequencies], list(frequencies.values())
        vocab, merges, seen = {i: bytes([i]) for i in range(256)}, [], set()
        for new_id in range(256, vocab_size):
            counts = Counter()
            for word, weight in zip(words, weights):
                for pair in zip(word, word[1:]):
                    counts[pair] += weight
            seen |= set(counts)
            counts = {pair: counts.get(pair, 0) for pair in seen} if keep_zero else counts
            if not counts:
                break
            top = max(counts.values())
            pair = max((p for p in counts if counts[p] == top), key=lambda p: (vocab[p[0]], vocab[p[1]]))
            merges.append(pair)
            vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
            words = [merged(word, pair, new_id, keep_second) for word in words]
        return merges
    return train_bpe


def said(train_bpe):
    with pytest.raises(CheckFailure) as failure:
        check_task_1(train_bpe)
    return failure.value


@pytest.mark.parametrize("mistake, expected", [
    ({}, TOO_SLOW), ({"keep_zero": True}, NO_EARLY_STOP), ({"keep_second": True}, WORD_KEEPS_SECOND)],
    ids=["recount (right merges)", "count-0 pairs kept", "merge keeps the second id"])
def test_each_trainer_gets_the_advice_its_merges_identify(mistake, expected):
    failure = said(trainer(**mistake))
    assert failure.diagnosis == f"llm.1.{expected.slug}" and str(expected) in str(failure), str(failure)


def test_a_wrong_merge_is_read_against_the_counts_after_the_right_ones():
    made = [(97, 98)]
    assert absent_diagnosis([*made, (256, 98)], 1, {(99, 100): 1}) is WORD_KEEPS_SECOND
    assert absent_diagnosis([*made, (97, 98)], 1, {(99, 100): 1}) is ABSENT_PAIR  # a merge that left some, or stale
    assert absent_diagnosis([*made, (98, 99)], 1, {(99, 100): 1}) is ABSENT_PAIR  # pairs stay inside words
    assert absent_diagnosis([*made, (99, 100)], 1, {(99, 100): 1}) is None


def tie_breaker(key):
    """The reference train_bpe with its tie rule replaced by key (pair, vocab) -> sort key."""
    source = reference_source(assignment("llm"))
    best = "    return max(tied, key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))"
    assert source.count(best) == 1
    return load_reference(source.replace(best, f"    return max(tied, key=lambda pair: {key})"))["train_bpe"]


def test_a_tie_broken_on_the_first_token_alone_is_named_not_taken_for_another_tie_rule():
    """It gives the merges of the planted 'first counted' tie rule on one text, but not on the others: that name is
    not given, and the counts after the right merges show the tie and the shared first token."""
    failure = said(tie_breaker("vocab[pair[0]]"))
    assert failure.diagnosis == f"llm.1.{TIE_SECOND_IGNORED.slug}", str(failure)
    assert "both occur" in str(failure) and "counted first" not in str(failure)


def test_a_tie_broken_on_the_second_token_alone_is_shown_as_a_tie():
    failure = said(tie_breaker("vocab[pair[1]]"))
    assert "both occur 3 times in the text after the merges before it, and your trainer breaks small ties wrong too" \
        in str(failure), str(failure)
    assert failure.diagnosis is None
