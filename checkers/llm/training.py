"""Task 1: train_bpe on small constructed texts (each isolates one rule) and on a longer one that is timed."""
import functools
import gc
import time

from .._core import Diagnosis, check_function, expect_callable, load_fixture, one_line, slug_of
from ._bpe import NO_SURROGATEPASS, listed, padded_merges, shorten, shown, token_bytes, unpadded
from ._probes_bpe import merge_word_fault, missing_id
from ._replay import WORD_KEEPS_SECOND, absent_diagnosis, counts_after

NAME = "train_bpe"
# The timed text's run to all its merges may take at most SPEED_LIMIT times the CPU time of a run to its first merge
# alone, on the same text: both count the pairs once, then a full recount pays a whole count again for every merge,
# where an incremental trainer touches only the few words that hold the merged pair (the timed text's first merges
# join letters of its few frequent words: course/llm/fixtures.py). A ratio of the student's own times, so the
# machine's speed and its load cancel. Measured with this check (the best of its rounds; CPU time, one thread, a
# 2-core machine at loads 1.9-2.1, 4.0-4.4, 5.1-5.2 and 4.8-6.5, 34 calls each): the reference and the valid variants
# (course/llm/tests/bpe_variants.py) 0.6-1.7 times, every call passing; the full recounts (the planted one and two
# held-out) 6.7-19, every call failing; a trainer that keeps its counts but scans every word for the merged pair (no
# index: the whole table per merge, as a recount) 2.3-5.4, failing 30 calls of 34.
SPEED_LIMIT = 3
ROUNDS, TIMING_BUDGET = 4, 0.3  # rounds of timing at most, and CPU seconds after which no new round starts
TIE_SMALLER = Diagnosis(
    "tie-smaller",
    "ties between equally frequent pairs go to the smaller pair: they go to the greater pair of byte strings, "
    "max by (vocab[a], vocab[b]).")
TIE_FIRST_SEEN = Diagnosis(
    "tie-first-seen",
    "ties between equally frequent pairs go to the pair counted first (max over the counts alone keeps it): "
    "break ties by the greater pair of byte strings, max by (count, vocab[a], vocab[b]).")
TIE_BY_IDS = Diagnosis(
    "tie-by-ids",
    "ties are broken by comparing ids: compare the byte strings the ids stand for, (vocab[a], vocab[b]); a merged "
    "id such as 257 = b' ab' sorts before b'x' = 120.")
TIE_SECOND_IGNORED = Diagnosis(
    "tie-second-ignored",
    "a tie between two pairs that start with the same bytes was broken on the first token alone: compare the second "
    "token's bytes too, max by (count, vocab[a], vocab[b]).")

CROSS_WORD = Diagnosis(
    "cross-word",
    "pairs are counted across word boundaries: split the text with PRETOKENIZE.findall(text) and count pairs only "
    "inside each word.")
NO_FREQUENCY_WEIGHTS = Diagnosis(
    "no-frequency-weights",
    "each distinct word counts once: weight a word's pairs by how often the word occurs in the text.")
STALE_COUNTS = Diagnosis(
    "stale-counts",
    "after a merge the pair counts are not brought up to date: for every word holding the merged pair, subtract "
    "its old pairs and add its new ones (times the word's frequency), and store the merged word.")
IDS_FROM_ZERO = Diagnosis(
    "ids-from-zero",
    "the new ids start at 0: ids 0..255 are the bytes, so merge k makes the id 256 + k.")
MERGE_COUNT = Diagnosis(
    "merge-count",
    "train_bpe returns more than vocab_size - 256 merges: vocab_size counts the 256 byte tokens, so it makes "
    "vocab_size - 256 merges.")
NO_EARLY_STOP = Diagnosis(
    "no-early-stop",
    "train_bpe must stop, returning fewer merges, when no pair is left to merge (e.g. for '' or 'ab').")
MERGES_AS_LISTS = Diagnosis(
    "merges-as-lists",
    "each merge is a list [a, b]: the tokenizer looks merges up in a dict (their ranks), and a list cannot be a dict "
    "key, so BPETokenizer(merges) fails. Append each merge as a tuple (a, b).")
TOO_SLOW = Diagnosis(
    "too-slow",
    "train_bpe gives the right merges but is too slow: after each merge, update the counts of only the words that "
    "hold the merged pair, found through an index pair -> words (recounting every pair, or looking through every "
    "word for the pair, costs a whole pass over the text per merge).")


def cpu_seconds(fn, *args):
    """fn(*args) and the CPU seconds it took, the garbage collector paused (as timeit does: a collection triggered by
    earlier allocations would be charged to whichever run it falls in)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.process_time()
        result = fn(*args)
        return result, time.process_time() - start
    finally:
        if enabled:
            gc.enable()


def _crash_diagnosis(error, text):
    """The diagnosis an exception raised by train_bpe on text identifies by itself, or None."""
    if isinstance(error, UnicodeError):
        return NO_SURROGATEPASS
    if isinstance(error, ValueError) and len(text) < 2:
        return NO_EARLY_STOP  # max() of no counts
    return None


def train(task, train_bpe, text, vocab_size):
    """The student's merges on text as a list of (int, int) tuples; an exception or another type fails."""
    what = f"train_bpe({shorten(text)}, {vocab_size})"

    def run():
        try:
            return train_bpe(text, vocab_size)
        except (KeyError, UnicodeError, ValueError) as error:
            diagnosis = _crash_diagnosis(error, text)
            helper = merge_word_fault(getattr(train_bpe, "__globals__", None))
            if isinstance(error, KeyError) and helper:
                task.fail(f"{what} raised KeyError {error.args[0]}: {helper}")
            if isinstance(error, KeyError) and error.args and isinstance(error.args[0], tuple):
                task.fail(f"{what} raised KeyError {error.args[0]}: a pair it chose to merge is missing from the index "
                          "of the words that hold it, so the counts and the stored words disagree: look at the words "
                          "stored after each merge (merge_word replacing every occurrence, skipping past each, without "
                          "changing the list it is given) and at the counts (a merged word's old pairs subtracted and "
                          "its new ones added; pairs whose count fell to 0 dropped before the next pick).")
            if diagnosis:
                task.fail(f"{what} raised {type(error).__name__} ({one_line(error, 80)}): {diagnosis}", diagnosis.slug)
            found = missing_id(error)
            if found:
                task.fail(f"{what} raised KeyError {error.args[0]}: {found}")
            raise

    merges = task.call(what, run)
    try:
        pairs = [tuple(pair) for pair in merges]
        valid = all(len(pair) == 2 and all(isinstance(i, int) for i in pair) for pair in pairs)
    except TypeError:
        valid = False
    if not isinstance(merges, (list, tuple)) or not valid:
        task.fail(f"{what} returned {type(merges).__name__} {one_line(repr(merges), 60)}; it should return a list of "
                  "(int, int) pairs, the merges in the order learnt.")
    kind = next((type(pair) for pair in merges if type(pair) is not tuple), None)
    if kind is not None:
        task.fail(f"{what} returned merges such as {one_line(repr(merges[0]), 30)}, a {kind.__name__}: "
                  f"{MERGES_AS_LISTS}", MERGES_AS_LISTS.slug)
    return pairs


def compare(task, probe, got, consistent=lambda diagnosis: True, small_ties=None, code_points=None):
    """Fail unless got equals the probe's merges; name a known mistake when they equal its merges here and the
    student's merges agree with it everywhere else (consistent); small_ties() says how the trainer breaks the ties of
    TIE_TEXTS, which tells a tie rule from counts that differ (None: not probed)."""
    expected, text, vocab_size = unpadded(probe["merges"]), probe["text"], probe["vocab_size"]
    if got == expected:
        return
    where = f"on {shorten(text)} with vocab_size {vocab_size}"
    for diagnosis, merges in probe.get("mistakes", {}).get("merges", {}).items():
        if padded_merges(got, merges.size(0)).equal(merges) and len(got) == len(unpadded(merges)) \
                and consistent(diagnosis):
            task.fail(f"{where} your merges are {listed(got, 4)}: {diagnosis}", slug_of(diagnosis))
    if len(got) > vocab_size - 256:
        task.fail(f"{where} it returned {len(got)} merges: {MERGE_COUNT}", MERGE_COUNT.slug)
    k = next((k for k, (mine, theirs) in enumerate(zip(got, expected)) if mine != theirs), min(len(got), len(expected)))
    vocab, counts = token_bytes(expected), counts_after(probe, k)  # counts after the k right merges (the fixture's)
    absent = absent_diagnosis(got, k, counts) if counts is not None and k < len(got) else None
    if k == len(expected) and absent is not WORD_KEEPS_SECOND:
        task.fail(f"{where} the first {k} merges are right, then it goes on with {len(got) - k} more although no pair "
                  f"is left: {NO_EARLY_STOP}", NO_EARLY_STOP.slug)
    unmade = next((i for i in got[k] if i >= 256 + k), None) if k < len(got) else None
    if unmade is not None:
        task.fail(f"{where} the first {k} merges are right; merge {k} is {got[k]}, which uses the id {unmade} that no "
                  f"merge has made yet (merge j makes 256 + j, so the merges before it made ids up to {255 + k}): "
                  "are the new ids numbered from 256?")
    if absent is WORD_KEEPS_SECOND:
        task.fail(f"{where} the first {k} merges are right; merge {k} joins {shown(got[k], token_bytes(got))}, which "
                  f"does not occur in the text after the merges before it: {absent}", absent.slug)
    if absent is not None:
        task.fail(f"{where} the first {k} merges are right; merge {k} joins {shown(got[k], token_bytes(got))}, which "
                  "does not occur in the text after the merges before it, so the trainer's words or counts no longer "
                  "match the text: look at the words stored after each merge (merge_word replacing every occurrence, "
                  "without changing the list it is given) and at the counts (a merged word's old pairs subtracted and "
                  "its new ones added, times the word's frequency).")
    if len(set(got)) < len(got):
        twice = next(pair for pair in got if got.count(pair) > 1)
        task.fail(f"{where} it merges the pair {twice} twice: {STALE_COUNTS}", STALE_COUNTS.slug)
    if k == len(got):
        task.fail(f"{where} it stops after {k} merges, all right, where {len(expected)} are expected: the next one is "
                  f"{shown(expected[k], vocab)}.")
    unit = code_points() if k == 0 and code_points is not None else None
    if unit is not None:
        task.fail(f"{where} merge 0 is already wrong, and on {unit[0]!r} your trainer {unit[1]}: {unit[2]} is the "
                  f"code point of {chr(unit[2])!r} (ord), not a byte: {CODE_POINTS}", CODE_POINTS.slug)
    why, diagnosis = why_other_pair(counts, vocab, expected[k], got[k], k, small_ties)
    task.fail(f"{where} the first {k} merges are right; merge {k} is {shown(got[k], token_bytes(got))} where "
              f"{shown(expected[k], vocab)} was expected{why}", diagnosis)


def why_other_pair(counts, vocab, theirs, mine, k, small_ties=None):
    """(what the counts after the k right merges say of the pair chosen instead of theirs, the slug it names or None):
    a tie, then what small_ties() shows of the trainer's tie rule (broken on the first token alone, broken otherwise
    wrong, or right: then its counts or its tokens' bytes differ), or a less frequent pair (at the first merge:
    counted wrong from the start; later: not brought up to date)."""
    if counts is None:
        return ".", None
    count, expected_count = counts.get(mine, 0), counts.get(theirs, 0)
    if count == expected_count:
        tie = f": both occur {count} times in the text after the merges before it"
        rule = small_ties() if small_ties is not None else None
        if rule == "first token":
            return f"{tie}; {TIE_SECOND_IGNORED}", TIE_SECOND_IGNORED.slug
        if rule == "wrong":
            return (f"{tie}, and your trainer breaks small ties wrong too: a tie goes to the greater pair of byte "
                    "strings, max by (count, vocab[a], vocab[b]).", None)
        if rule == "right":
            return (f"{tie}, and your trainer breaks small ties right, so here its counts or its tokens' bytes differ "
                    "from the text's (each word's pairs counted once per occurrence of the pair, times the word's "
                    "frequency; a new token's bytes vocab[a] + vocab[b]).", None)
        return f"{tie}, and a tie goes to the greater pair of byte strings, max by (count, vocab[a], vocab[b]).", None
    if count < expected_count and k == 0:
        return (f": yours occurs {count} times in the text, the expected one {expected_count} times, so the pairs are "
                "counted differently from the start (how the text is split into words, and how often each word "
                "counts).", None)
    if count < expected_count:
        return (f": yours occurs {count} times after the merges before it, the expected one {expected_count} times "
                "(each merge takes the most frequent pair: are the pairs counted as the text holds them, every "
                "occurrence in every word times the word's frequency, and brought up to date after each merge?).", None)
    return ".", None


# Texts of one tie each, every word once and every pair once, so only the tie rule decides the first merge: three
# pairs of different first bytes ((c, d) wins), two pairs that share their first byte ((a, c) wins), and a greater
# first byte before a greater second one ((c, a) wins, not (a, d))
TIE_TEXTS = (("ab cd", [(99, 100)]), ("ab ac", [(97, 99)]), ("ca ad", [(99, 97)]))


UNITS_TEXT = "€€ €€ €€"  # '€' is U+20AC: its code point 8364 is no byte; its UTF-8 bytes are 226, 130, 172
CODE_POINTS = Diagnosis(
    "code-points-not-bytes",
    "the text is split into characters, not bytes: count pairs of each word's UTF-8 bytes, "
    "word.encode(\"utf-8\", errors=\"surrogatepass\"), so that every id below 256 is a byte.")


def code_point_units(train_bpe):
    """(text, what train_bpe did on UNITS_TEXT, the id above 255 it used) when its first merge holds, or a KeyError
    names, an id no byte has (a character's code point); None otherwise."""
    try:
        first = tuple(train_bpe(UNITS_TEXT, 257)[0])
    except KeyError as error:  # a lookup of the id in a table of bytes
        key = error.args[0] if error.args else None
        return (UNITS_TEXT, f"raises KeyError {key}", key) if isinstance(key, int) and key > 255 else None
    except Exception:  # noqa: BLE001 -- no evidence either way
        return None
    above = next((i for i in first if isinstance(i, int) and i > 255), None)
    return (UNITS_TEXT, f"makes the first merge {first}", above) if above is not None else None


def small_tie_rule(train_bpe):
    """How train_bpe breaks the ties of TIE_TEXTS: "right", "first token" (wrong only where the pairs share their
    first byte), "wrong", or None when it raises."""
    try:
        right = [list(map(tuple, train_bpe(text, 257))) == merges for text, merges in TIE_TEXTS]
    except Exception:  # noqa: BLE001 -- no evidence either way
        return None
    return "right" if all(right) else "first token" if right == [True, False, True] else "wrong"


def agrees_everywhere(train_bpe, probes, merges_of, diagnosis):
    """Whether train_bpe gives, on every probe, the merges the known mistake gives (stored beside the probe where they
    differ from the right ones): a mistake's name is given only when all the evidence fits it. merges_of caches the
    student's merges by probe text; a run that fails fits nothing."""
    for probe in probes:
        stored = probe.get("mistakes", {}).get("merges", {}).get(diagnosis)
        target = unpadded(stored if stored is not None else probe["merges"])
        if probe["text"] not in merges_of:
            try:
                merges_of[probe["text"]] = [tuple(pair) for pair in train_bpe(probe["text"], probe["vocab_size"])]
            except Exception:  # noqa: BLE001 -- a crash on another text is no evidence for this mistake
                merges_of[probe["text"]] = None
        if merges_of[probe["text"]] != target:
            return False
    return True


def timed(task, train_bpe, probe):
    """CPU seconds train_bpe takes on the probe's text; its merges must be right."""
    got, seconds = cpu_seconds(train, task, train_bpe, probe["text"], probe["vocab_size"])
    compare(task, probe, got)
    return seconds


def speed_rule(time_run, speed):
    """Task 1's speed rule, for the check and the grader (checkers/llm/_facts.py: bpe_speed): a round times the run
    to speed's first merge alone, then to all its merges; rounds go on while the best whole run is over SPEED_LIMIT
    times the best first-merge run, up to ROUNDS, none started after TIMING_BUDGET (a slow trainer stops early: one
    round of a full recount is evidence enough, a fast trainer gets every round a noisy one needs).

    Args:
        time_run: probe (a dict of "text", "vocab_size", "merges") -> CPU seconds of train_bpe on its text.
        speed: the fixture's timed probe.

    Returns:
        (fast enough, best seconds to all the merges, best seconds to the first merge alone).
    """
    first = dict(text=speed["text"], vocab_size=257, merges=speed["merges"][:1])
    whole, one = [], []
    for _ in range(ROUNDS):
        one.append(time_run(first))  # first: a run that pays a one-time cost is charged to it
        whole.append(time_run(speed))
        if min(whole) <= SPEED_LIMIT * min(one) or sum(whole) + sum(one) > TIMING_BUDGET:
            break
    return min(whole) <= SPEED_LIMIT * min(one), min(whole), min(one)


@check_function(1)
def check_task_1(task, train_bpe):
    """Check train_bpe(text, vocab_size) -> merges: constructed texts first, then a timed one of 20,000 characters."""
    expect_callable(task, train_bpe, NAME)
    fixture = load_fixture(__package__, 1)
    probes = list(fixture["probes"].values())
    consistent = functools.partial(agrees_everywhere, train_bpe, probes, {})
    for probe in probes:
        compare(task, probe, train(task, train_bpe, probe["text"], probe["vocab_size"]), consistent,
                functools.partial(small_tie_rule, train_bpe), functools.partial(code_point_units, train_bpe))
    speed = fixture["speed"]
    fast, whole, one = speed_rule(lambda probe: timed(task, train_bpe, probe), speed)
    merges, chars = len(unpadded(speed["merges"])), len(speed["text"])
    if not fast:
        task.fail(f"on {chars:,} characters, {merges} merges took {whole:.3f} s of CPU and the first merge alone "
                  f"{one:.3f} s: {whole / one:.1f} times as long, where an incremental trainer takes at most "
                  f"{SPEED_LIMIT:g} (its first count costs the most; a full recount pays it again at every merge): "
                  f"{TOO_SLOW}", TOO_SLOW.slug)
    task.passed(f"train_bpe learns the expected merges on {len(fixture['probes']) + 1} texts (ties, overlaps, word "
                f"boundaries, early stop, broken Unicode) and keeps its counts up to date ({merges} merges took "
                f"{whole / one:.1f} times the CPU time of the first alone, on {chars:,} characters).")
