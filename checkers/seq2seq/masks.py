"""Task 2: the causal and padding masks."""
import torch
from torch.overrides import TorchFunctionMode

from .._compare import expect_tensor
from .._core import Diagnosis, check_function, expect_callable, load_fixture, slug_of

# Sentences the known mistakes' diagnoses quote (course/seq2seq/mistakes.py).
CAUSAL_INVERTED = Diagnosis(
    "causal-inverted",
    "the causal mask is inverted: it is True where key j is in the future (j > i); True must mean "
    "'may attend', for j <= i.")
CAUSAL_TRANSPOSED = Diagnosis(
    "causal-transposed",
    "the causal mask is transposed: query i may attend keys j >= i, the future; keep the lower "
    "triangle (j <= i), not the upper one.")
CAUSAL_NO_DIAGONAL = Diagnosis(
    "causal-no-diagonal",
    "the causal mask excludes the diagonal: each position must be able to attend to itself "
    "(j <= i, not j < i).")
CAUSAL_SEES_NEXT = Diagnosis(
    "causal-sees-next",
    "the causal mask lets query i attend key i + 1, one step into the future: allow j <= i only "
    "(the diagonal and below).")
PADDING_INVERTED = Diagnosis(
    "padding-inverted",
    "the padding mask is inverted: True must mark the real tokens, not the padding.")
PADDING_ON_QUERIES = Diagnosis(
    "padding-on-queries",
    "the padding mask has its length axis where the queries are, so it masks padded queries instead "
    "of padded keys: the padded positions are keys no query may attend, so the length goes last, "
    "shape (B, 1, 1, L).")
PADDING_NO_AXES = Diagnosis(
    "padding-no-axes",
    "the padding mask lacks its broadcast axes: it should have shape (B, 1, 1, L), which lines up "
    "with the scores (B, H, L_q, L_k) and broadcasts over the heads and the queries.")
DEVICE_IGNORED = Diagnosis(
    "device-ignored",
    "causal_mask ignores its device argument: the mask must be created on that device (pass "
    "device=device to the function that builds it), or masking a model on a GPU fails.")
PAD_ID_IGNORED = Diagnosis(
    "pad-id-ignored",
    "the padding mask ignores the `pad_id` argument (it treats 0 as padding): compare with pad_id.")


def _call(task, what, fn, *args, **kwargs):
    return task.call(what, fn, *args, **kwargs)


def _expect_causal(task, causal_mask, case):
    seq_len, expected = case["seq_len"], case["causal"]
    what = f"causal_mask({seq_len})"
    got = expect_tensor(task, what, _call(task, what, causal_mask, seq_len), (seq_len, seq_len))
    if got.dtype != torch.bool:
        task.fail(f"{what} has dtype {got.dtype}; it should be torch.bool, True where query i may attend key j.")
    if torch.equal(got, expected):
        return
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool)
    for wrong, message in ((~expected, CAUSAL_INVERTED), (expected.T, CAUSAL_TRANSPOSED),
                           (ones.tril(-1), CAUSAL_NO_DIAGONAL), (ones.tril(1), CAUSAL_SEES_NEXT)):
        if torch.equal(got, wrong):
            task.fail(f"{what} is wrong: {message}", slug_of(message))
    where = tuple((got != expected).nonzero()[0].tolist())
    task.fail(f"{what} is wrong at [query {where[0]}, key {where[1]}]: it should be True exactly where the key "
              "is not after the query (j <= i).")


class _DeviceUse(TorchFunctionMode):
    """Notes whether any torch call made inside it received the device the check passed (as a factory's device=,
    or to .to()); a mask built without it cannot be on that device. Costs nothing, unlike making it on "meta"."""

    def __init__(self, device):
        super().__init__()
        self.device, self.used = device, False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.used = self.used or any(_is(value, self.device) for value in (*args, *kwargs.values()))
        return func(*args, **kwargs)


def _is(value, device):
    try:
        return isinstance(value, (str, torch.device)) and torch.device(value) == device
    except RuntimeError:  # a string that names no device
        return False


def _expect_device(task, causal_mask):
    """The device given as a string and as a torch.device, both "cpu:0" (on every machine, unequal to plain "cpu")."""
    for device in ("cpu:0", torch.device("cpu", 0)):
        what = f"causal_mask(3, device={device!r})"
        with _DeviceUse(torch.device("cpu", 0)) as use:
            got = _call(task, what, causal_mask, 3, device=device)
        got = expect_tensor(task, what, got, (3, 3))
        if not use.used or got.device.type != "cpu":
            task.fail(f"{what} never passed the device on to torch: {DEVICE_IGNORED}", DEVICE_IGNORED.slug)
        if got.dtype != torch.bool:
            task.fail(f"{what} has dtype {got.dtype}; it should be torch.bool, True where query i may attend key j.")


def _expect_padding(task, padding_mask, pad_id, case):
    tokens, expected = case["tokens"], case["padding"]
    batch_size, seq_len = tokens.shape
    what = f"padding_mask(tokens of shape {tuple(tokens.shape)}, pad_id={pad_id})"
    before = tokens.clone()
    got = _call(task, what, padding_mask, tokens, pad_id)
    if not torch.equal(before, tokens):
        task.fail(f"{what} modified `tokens` in place; build a new tensor instead.")
    expect_tensor(task, what, got)
    if got.dtype != torch.bool:
        task.fail(f"{what} has dtype {got.dtype}; it should be torch.bool, True where the key is a real token.")
    real = expected.view(batch_size, seq_len)
    if tuple(got.shape) != tuple(expected.shape):
        if got.numel() == real.numel() and torch.equal(got.reshape(batch_size, seq_len), real):
            if tuple(got.shape) in ((batch_size, 1, seq_len, 1), (batch_size, seq_len, 1)):
                task.fail(f"{what} is wrong: {PADDING_ON_QUERIES}", PADDING_ON_QUERIES.slug)
            task.fail(f"{what} has shape {tuple(got.shape)}: {PADDING_NO_AXES}", PADDING_NO_AXES.slug)
        task.fail(f"{what} has shape {tuple(got.shape)}, expected {tuple(expected.shape)}.")
    if torch.equal(got, expected):
        return
    if torch.equal(got, ~expected):
        task.fail(f"{what} is wrong: {PADDING_INVERTED}", PADDING_INVERTED.slug)
    if pad_id != 0 and torch.equal(got, (tokens != 0).view(got.shape)):
        task.fail(f"{what} is wrong: {PAD_ID_IGNORED}", PAD_ID_IGNORED.slug)
    where = tuple((got != expected).nonzero()[0].tolist())
    task.fail(f"{what} is wrong at index {where}: it should be True exactly where tokens != pad_id.")


@check_function(2)
def check_task_2(task, causal_mask, padding_mask):
    """Check causal_mask(seq_len, device) and padding_mask(tokens, pad_id) against the expected masks."""
    expect_callable(task, causal_mask, "causal_mask")
    expect_callable(task, padding_mask, "padding_mask")
    fixture = load_fixture(__package__, 2)
    for _, case in sorted(fixture["causal"].items(), reverse=True):  # the longest first: it tells mistakes apart
        _expect_causal(task, causal_mask, case)
    _expect_device(task, causal_mask)
    for pad_id, case in fixture["padding"].items():
        _expect_padding(task, padding_mask, pad_id, case)
    task.passed("the causal mask (j <= i), made on the device asked for, and the padding mask (B, 1, 1, L), True "
                "where attention is allowed, are right.")
