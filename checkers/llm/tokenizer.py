"""Task 2: BPETokenizer with hand-made merges that isolate one rule each, then learnt merges on mixed text."""
import inspect

from .._core import Diagnosis, check_function, describe_object, load_fixture, one_line, slug_of
from ._bpe import NO_SURROGATEPASS, listed, padded_ids, shorten, unpadded
from ._probes_bpe import lost_characters, merge_still_applies, missing_id, reversed_token, unknown_pair

NAME = "BPETokenizer"
ENCODES_CODE_POINTS = Diagnosis(
    "encodes-code-points",
    "encode gives one id per character (ord(c)) instead of one per byte: ids 0..255 are UTF-8 bytes, so start "
    "from list(word.encode(\"utf-8\", errors=\"surrogatepass\")).")
ENCODE_MERGE_ORDER = Diagnosis(
    "encode-merge-order",
    "encode applies a merge learnt later before one learnt earlier: in each word, merge again and again the pair "
    "with the lowest rank, the one learnt first, wherever it stands in the word.")
ENCODE_NO_PRETOKENIZE = Diagnosis(
    "encode-no-pretokenize",
    "encode merges across word boundaries: split the text with PRETOKENIZE.findall(text), as training did, and "
    "encode each word on its own.")
DECODE_PER_TOKEN = Diagnosis(
    "decode-per-token",
    "decode decodes each token on its own, which breaks a character whose bytes lie in two tokens: join all the "
    "tokens' bytes first, then decode once.")
DECODE_NO_SURROGATEPASS = Diagnosis(
    "decode-no-surrogatepass",
    "decode turns a lone surrogate's bytes (ids encode made from '\\ud800') into U+FFFD: encode kept them with "
    "errors=\"surrogatepass\", so decode with errors=\"surrogatepass\" first, and with errors=\"replace\" only when "
    "that fails.")
DECODE_NOT_REPLACE = Diagnosis(
    "decode-not-replace",
    "decode raises on ids whose bytes are not valid UTF-8 (e.g. [255]): catch the UnicodeDecodeError and decode "
    "again with errors=\"replace\".")

SHARED_STATE = Diagnosis(
    "tokenizer-shared-state",
    "a second tokenizer, with other merges, gave the ids the first one gave for the same text: the tokenizers share "
    "state (a cache or table made a class attribute, e.g. `cache = {}` in the class body); create it in __init__ "
    "(self.cache = {}), so that each tokenizer keeps its own.")


def _expect_class(task, obj):
    if not inspect.isclass(obj):
        task.fail(f"expected the class `{NAME}`, got {describe_object(obj) if obj is not None else 'None'}; pass "
                  f"the class itself, e.g. check_task_{task.number}({NAME}).")


def _encode(task, tokenizer, text, merges_shown):
    what = f"encode({shorten(text)}) with the merges {merges_shown}"

    def run():
        try:
            return tokenizer.encode(text)
        except UnicodeError as error:
            task.fail(f"{what} raised {type(error).__name__} ({one_line(error, 80)}): {NO_SURROGATEPASS}",
                      NO_SURROGATEPASS.slug)
        except KeyError as error:
            found = unknown_pair(error) or missing_id(error)
            if found:
                task.fail(f"{what} raised KeyError {error.args[0]}: {found}")
            raise

    ids = task.call(what, run)
    try:
        ids = list(ids)
        valid = all(isinstance(i, int) for i in ids)
    except TypeError:
        valid = False
    if not valid:
        task.fail(f"{what} returned {type(ids).__name__} {one_line(repr(ids), 60)}; it should return a list of int.")
    return ids


def _decode(task, tokenizer, ids, expected, merges=()):
    what = f"decode({listed(ids)})"

    def run():
        try:
            return tokenizer.decode(ids)
        except UnicodeDecodeError as error:
            if "\ufffd" in expected:  # the bytes are not UTF-8
                task.fail(f"{what} raised UnicodeDecodeError: {DECODE_NOT_REPLACE}", DECODE_NOT_REPLACE.slug)
            if any("\ud800" <= char <= "\udfff" for char in expected):
                task.fail(f"{what} raised UnicodeDecodeError where {expected!r} is expected: {DECODE_NO_SURROGATEPASS}",
                          DECODE_NO_SURROGATEPASS.slug)
            task.fail(f"{what} raised UnicodeDecodeError ({one_line(error, 80)}) where {expected!r} is expected"
                      + (f": {DECODE_PER_TOKEN}" if len(ids) > 1 else "."))

    text = task.call(what, run)
    if text == expected:
        return
    if not isinstance(text, str):
        task.fail(f"{what} returned {type(text).__name__} {one_line(repr(text), 60)}; it should return a str.")
    if "\ufffd" in text and "\ufffd" not in expected and len(ids) > 1:
        if any("\ud800" <= char <= "\udfff" for char in expected):
            # a lone surrogate's bytes come back as U+FFFD; per-token decoding is ruled out here: the decode of a
            # character split over two ids ran first and passed, so decode lacks errors="surrogatepass"
            task.fail(f"{what} gave {shorten(text)} where {expected!r} is expected: {DECODE_NO_SURROGATEPASS}",
                      DECODE_NO_SURROGATEPASS.slug)
        task.fail(f"{what} gave {shorten(text)} where {expected!r} is expected: {DECODE_PER_TOKEN}",
                  DECODE_PER_TOKEN.slug)
    found = reversed_token(tokenizer, merges)
    task.fail(f"{what} gave {shorten(text)} where {shorten(expected)} is expected" + (f": {found}" if found else "."))


def _build(task, tokenizer_class, pairs):
    """tokenizer_class(pairs); a KeyError of a new token's id is read as such."""
    what = f"{NAME}({listed(pairs)})"

    def run():
        try:
            return tokenizer_class(pairs)
        except KeyError as error:
            found = missing_id(error)
            if found:
                task.fail(f"{what} raised KeyError {error.args[0]}: {found}")
            raise

    return task.call(what, run)


def _compare(task, case, got, merges_shown, earlier, merges=()):
    """Fail unless got is the case's ids; earlier: {text: ids} the other tokenizers gave (and were right)."""
    expected = unpadded(case["ids"])
    if got == expected:
        return
    what = f"encode({shorten(case['text'])}) with the merges {merges_shown}"
    if earlier.get(case["text"]) == got:
        task.fail(f"{what} gave {listed(got)} where {listed(expected)} is expected: {SHARED_STATE}", SHARED_STATE.slug)
    for diagnosis, ids in case.get("mistakes", {}).get("ids", {}).items():
        if padded_ids(got, ids.size(0)).equal(ids) and len(got) == len(unpadded(ids)):
            task.fail(f"{what} gave {got[:8]} where {expected[:8]} is expected: {diagnosis}", slug_of(diagnosis))
    found = lost_characters(got, case["text"], merges) or merge_still_applies(got, case["text"], merges)
    if found:
        task.fail(f"{what} gave {listed(got)} where {listed(expected)} is expected: {found}")
    task.fail(f"{what} gave {listed(got)} where {listed(expected)} is expected.")


@check_function(2)
def check_task_2(task, tokenizer_class):
    """Check BPETokenizer(merges): encode on hand-made and learnt merges, decode, round trips of any str."""
    _expect_class(task, tokenizer_class)
    fixture = load_fixture(__package__, 2)
    tokenizers = {}
    for name, merges in fixture["merge_lists"].items():
        pairs = unpadded(merges)
        tokenizers[name] = _build(task, tokenizer_class, pairs)
    earlier = {}  # text: the ids a tokenizer gave it, right for its merges
    for case in fixture["encode"].values():
        pairs = unpadded(fixture["merge_lists"][case["merges"]])
        shown = listed(pairs) if len(pairs) <= 3 else f"learnt on {shorten(fixture['learnt_on'], 30)}"
        got = _encode(task, tokenizers[case["merges"]], case["text"], shown)
        _compare(task, case, got, shown, earlier, pairs)
        earlier[case["text"]] = got
    for case in fixture["decode"].values():
        _decode(task, tokenizers[case["merges"]], unpadded(case["tokens"]), case["text"],
                unpadded(fixture["merge_lists"][case["merges"]]))
    task.passed(f"BPETokenizer encodes {len(fixture['encode'])} texts as expected (bytes, merge order, overlaps, word "
                f"boundaries, emoji, lone surrogates) and decodes {len(fixture['decode'])} id lists back.")
