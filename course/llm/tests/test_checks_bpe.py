"""check_task_1 (train_bpe) and check_task_2 (BPETokenizer) both ways: the reference and other correct answers pass,
planted mistakes fail (with their names where the evidence identifies them), bad input is answered cleanly, within a
second; the fixtures' merges and ids are what a plain full-recount trainer and an in-order encoder give."""
from collections import Counter

import pytest

from checkers._core import load_fixture
from checkers.llm import CheckFailure, NotImplementedYet, check_task_1, check_task_2
from checkers.llm._bpe import token_bytes, unpadded
from course.llm.fixtures import FREQUENT_LETTERS
from course.llm.mistakes import MUTANTS
from course_lib.llm import PRETOKENIZE
from . import bpe_variants
from .checks import cpu_seconds, expect_named, reference, variant


CHECKS = {1: (check_task_1, "train_bpe"), 2: (check_task_2, "BPETokenizer")}


@pytest.mark.fast
@pytest.mark.parametrize("task", CHECKS)
def test_reference_passes(task, capsys):
    check, name = CHECKS[task]
    check(reference()[name])
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


BPE_MUTANTS = [mutant for mutant in MUTANTS if mutant.task in CHECKS]


@pytest.mark.fast
@pytest.mark.parametrize("mutant", BPE_MUTANTS, ids=lambda m: f"{m.task}: {m.name}")
def test_planted_mistake_fails(mutant):
    """Named where the evidence identifies the mistake; otherwise a plain failure of its task."""
    check, name = CHECKS[mutant.task]
    with pytest.raises(CheckFailure, match=f"^Task {mutant.task}: ") as failure:
        check(variant(mutant)[name])
    if mutant.diagnosis:
        expect_named(failure.value, mutant)
    else:
        assert failure.value.diagnosis is None, str(failure.value)


@pytest.mark.fast
def test_at_least_the_prototype_mistakes_are_planted():
    slugs = {mutant.diagnosis.slug for mutant in BPE_MUTANTS if mutant.diagnosis}
    assert {"tie-smaller", "tie-first-seen", "tie-by-ids", "cross-word", "no-frequency-weights", "stale-counts",
            "ids-from-zero", "merge-overlapping", "merge-right-to-left", "decode-per-token", "decode-not-replace",
            "encodes-code-points", "encode-merge-order", "encode-no-pretokenize", "merge-count", "no-surrogatepass",
            "no-early-stop", "too-slow"} <= slugs


@pytest.mark.fast
@pytest.mark.parametrize("trainer", [bpe_variants.heap_train_bpe, bpe_variants.tuple_words_train_bpe],
                         ids=lambda f: f.__name__)
def test_valid_trainer_passes(trainer, capsys):
    check_task_1(trainer)
    assert capsys.readouterr().out.startswith("✓ Task 1 passed")


@pytest.mark.fast
@pytest.mark.parametrize("tokenizer", [bpe_variants.SequentialTokenizer, bpe_variants.ExplicitLoopTokenizer],
                         ids=lambda c: c.__name__)
def test_valid_tokenizer_passes(tokenizer, capsys):
    check_task_2(tokenizer)
    assert capsys.readouterr().out.startswith("✓ Task 2 passed")


def _trainer_returning(value):
    return lambda text, vocab_size: value


def _raises(text, vocab_size):
    return text.missing


class _Returns:
    """A tokenizer whose encode and decode return fixed things."""

    def __init__(self, merges, encoded=(), decoded=""):
        self.encoded, self.decoded = encoded, decoded

    def encode(self, text):
        return self.encoded

    def decode(self, ids):
        return self.decoded


class _EncodesText(_Returns):
    def __init__(self, merges):
        super().__init__(merges, encoded="abc")


class _BrokenInit:
    def __init__(self, merges):
        raise TypeError("no")


BAD_TRAINERS = {
    "None": (None, "got None instead of `train_bpe`"),
    "a class": (Counter, "expected the function `train_bpe`, got the class Counter"),
    "returns None": (_trainer_returning(None), "returned NoneType None; it should return a list of (int, int) pairs"),
    "returns a dict": (_trainer_returning({(1, 2): 3}), "it should return a list of (int, int) pairs"),
    "returns strings": (_trainer_returning([("a", "b")]), "it should return a list of (int, int) pairs"),
    "returns numbers": (_trainer_returning([1, 2]), "it should return a list of (int, int) pairs"),
    "raises": (_raises, "raised AttributeError"),
}
BAD_TOKENIZERS = {
    "None": (None, "expected the class `BPETokenizer`, got None"),
    "an object": (bpe_variants.SequentialTokenizer([]), "pass the class itself"),
    "a function": (len, "pass the class itself"),
    "encode returns a str": (_EncodesText, "it should return a list of int"),
    "constructor raises": (_BrokenInit, "raised TypeError"),
}


@pytest.mark.fast
@pytest.mark.parametrize("kind", BAD_TRAINERS)
def test_bad_trainer_fails_cleanly(kind):
    student, words = BAD_TRAINERS[kind]
    with pytest.raises(CheckFailure, match="^Task 1: ") as failure:
        check_task_1(student)
    assert words in str(failure.value), str(failure.value)


@pytest.mark.fast
@pytest.mark.parametrize("kind", BAD_TOKENIZERS)
def test_bad_tokenizer_fails_cleanly(kind):
    student, words = BAD_TOKENIZERS[kind]
    with pytest.raises(CheckFailure, match="^Task 2: ") as failure:
        check_task_2(student)
    assert words in str(failure.value), str(failure.value)


@pytest.mark.fast
def test_not_implemented_is_reported_as_such():
    def train_bpe(text, vocab_size):
        raise NotImplementedError()

    class BPETokenizer:
        def __init__(self, merges):
            pass

        def encode(self, text):
            raise NotImplementedError()

    with pytest.raises(NotImplementedYet, match="^Task 1 is not implemented yet"):
        check_task_1(train_bpe)
    with pytest.raises(NotImplementedYet, match="^Task 2 is not implemented yet"):
        check_task_2(BPETokenizer)


@pytest.mark.full
@pytest.mark.parametrize("name", ["reference", "ties to the smaller pair", "decode per token"])
def test_check_takes_under_a_second(name):
    mutant = next((m for m in MUTANTS if m.name == name), None)
    task = mutant.task if mutant else 1
    names = [1, 2] if mutant is None else [task]
    namespace = reference() if mutant is None else variant(mutant)

    def run():
        for number in names:
            check, answer = CHECKS[number]
            try:
                check(namespace[answer])
            except CheckFailure:
                pass
    assert cpu_seconds(run, runs=3) <= 1.0


def _recount_train(text, vocab_size):
    """An independent route: recount every pair of every word occurrence after each merge (slow, plain)."""
    words = [list(word.encode("utf-8", errors="surrogatepass")) for word in PRETOKENIZE.findall(text)]
    vocab, merges = {i: bytes([i]) for i in range(256)}, []
    for new_id in range(256, vocab_size):
        counts = Counter(pair for word in words for pair in zip(word, word[1:]))
        if not counts:
            break
        pair = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))
        merges.append(pair)
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
        words = [bpe_variants._merged(word, pair, new_id) for word in words]
    return merges


@pytest.mark.fast
def test_fixture_merges_follow_a_plain_recount():
    fixture = load_fixture("checkers.llm", 1)
    for name, probe in [*fixture["probes"].items(), ("speed", fixture["speed"])]:
        assert "merges" in probe, name
        assert unpadded(probe["merges"]) == _recount_train(probe["text"], probe["vocab_size"]), name


@pytest.mark.fast
def test_timed_text_merges_join_its_frequent_words_only():
    """The speed rule's premise (checkers/llm/training.py): each timed merge touches a few frequent words, so an
    incremental trainer's time hardly grows with the merges; most of the text's distinct words occur once."""
    speed = load_fixture("checkers.llm", 1)["speed"]
    merges = unpadded(speed["merges"])
    vocab = token_bytes(merges)
    assert len(merges) == speed["vocab_size"] - 256
    assert all(set(vocab[256 + k]) <= set(FREQUENT_LETTERS.encode()) for k in range(len(merges)))
    counts = Counter(speed["text"].split("\n"))
    assert sum(count == 1 for count in counts.values()) >= 0.9 * len(counts)


@pytest.mark.fast
def test_speed_rule_takes_a_ratio_of_the_students_own_times():
    """A trainer whose every merge costs a whole count fails; one that is slow by a constant passes (its first
    count as slow as its others: a slow machine, a busy one, or slow but incremental code)."""
    train_bpe = reference()["train_bpe"]

    def slow_by_a_constant(text, vocab_size):
        _count_everything(text, times=3)
        return train_bpe(text, vocab_size)

    def slow_per_merge(text, vocab_size):
        _count_everything(text, times=vocab_size - 256)
        return train_bpe(text, vocab_size)

    check_task_1(slow_by_a_constant)
    with pytest.raises(CheckFailure, match="too slow") as failure:
        check_task_1(slow_per_merge)
    assert failure.value.diagnosis == "llm.1.too-slow"


def _count_everything(text, times):
    for _ in range(times):
        Counter(pair for word in PRETOKENIZE.findall(text) for pair in zip(word, word[1:]))


@pytest.mark.fast
def test_fixture_ids_follow_merges_applied_in_order():
    fixture = load_fixture("checkers.llm", 2)
    for name, case in fixture["encode"].items():
        merges = unpadded(fixture["merge_lists"][case["merges"]])
        assert unpadded(case["ids"]) == bpe_variants.SequentialTokenizer(merges).encode(case["text"]), name
    for name, case in fixture["decode"].items():
        merges = unpadded(fixture["merge_lists"][case["merges"]])
        assert bpe_variants.SequentialTokenizer(merges).decode(unpadded(case["tokens"])) == case["text"], name
