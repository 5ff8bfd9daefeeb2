"""Task 4: sinusoidal positional encoding."""
import torch
import torch.nn as nn

from .._compare import diagnose, expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import CheckFailure, Diagnosis, check_function, expect_module_class, load_fixture
from .._modules import build, expect_native_output, expect_output, expect_unchanged
from ._probes_generic import outcome

# A float32 table is accurate to about 1e-7 relative in the angle pos / 10000^(2i/D), i.e. an
# absolute error growing with the position: allow 1e-6 per position on top of 1e-5.
ATOL, ATOL_PER_POSITION = 1e-5, 1e-6
NOT_A_BUFFER = Diagnosis(
    "not-a-buffer",
    "`pe` is a plain attribute, not a buffer: use self.register_buffer('pe', ...) so that .to(device) "
    "moves it with the model.")
# Sentences the known mistakes' diagnoses quote (course/transformer/mistakes.py).
SIN_COS_SWAPPED = Diagnosis(
    "sin-and-cos-swapped",
    "sin and cos are swapped: even columns (2i) hold sin, odd columns (2i+1) hold cos.")
HALVES_CONCATENATED = Diagnosis(
    "halves-concatenated-instead-of-interleaved",
    "sines and cosines are concatenated in two halves; interleave them: pe[:, 0::2] = sin, pe[:, 1::2] = cos.")
WRONG_BASE = Diagnosis(
    "wrong-base",
    "the frequencies use the wrong base: the angle is pos / 10000^(2i/D).")
EXPONENT_OFF = Diagnosis(
    "exponent-i-d-instead-of-2i-d",
    "the exponent is off: the angle is pos / 10000^(2i/D), where 2i is the even column index.")
MULTIPLIED = Diagnosis(
    "multiplied-instead-of-added",
    "pe is multiplied with x; add it: x + pe[:, :L].")
FROM_ONE = Diagnosis(
    "positions-start-at-1",
    "the positions start at 1; the first position is 0.")
TRAINABLE_PE = Diagnosis(
    "trainable-pe",
    "`pe` is trainable; the sinusoidal table is fixed: register it as a buffer, not an nn.Parameter.")


def _table(task, module, embed_dim, max_len):
    pe = getattr(module, "pe", None)
    if pe is None:
        task.fail("PositionalEncoding has no attribute `pe`: register the table with "
                  "self.register_buffer('pe', table, persistent=False).")
    if isinstance(pe, nn.Parameter) or pe.requires_grad:
        task.fail(TRAINABLE_PE)
    if not any(buffer is pe for buffer in module.buffers()):
        task.fail(NOT_A_BUFFER)
    return expect_tensor(task, "`pe`", pe, (1, max_len, embed_dim))


def _expect_rows(task, pe, positions, expected, mistakes):
    got = pe[0, positions].double()
    tolerance = ATOL + ATOL_PER_POSITION * positions.double().unsqueeze(1)  # (P, 1)
    bad = (got - expected).abs() > tolerance
    if bad.any():
        diagnose(task, "`pe`", got, mistakes, tolerance.max().item(), 0.0)
        row, column = bad.nonzero()[0].tolist()
        kind = "sin" if column % 2 == 0 else "cos"
        task.fail(f"pe[0, {positions[row].item()}, {column}] is {got[row, column].item():.6f}, expected "
                  f"{expected[row, column].item():.6f} (= {kind}(pos / 10000^({column - column % 2}/D)))"
                  f"{_columns(bad)}.")


def _columns(bad):
    """'; <which columns are wrong>' when that is telling: only the sin or only the cos columns, or a few."""
    wrong = bad.any(0).nonzero().flatten().tolist()
    if all(column % 2 == 1 for column in wrong):
        return "; only odd (cos) columns are wrong: column 2i + 1 takes cos of the same angle as column 2i"
    if all(column % 2 == 0 for column in wrong):
        return "; only even (sin) columns are wrong"
    return f"; columns {wrong[0]} to {wrong[-1]} are wrong" if len(wrong) < bad.size(1) else ""


def _forward(task, module, x, table):
    """module(x); when it raises, fail saying so if it is right whenever the batch size equals the length."""
    try:
        return task.call("PositionalEncoding.forward", module, x)
    except CheckFailure:
        length = x.size(1)
        square = x[:1].expand(length, -1, -1).clone()  # a batch of L copies: batch size = length
        state, result = outcome(module, square)
        if state == "ok" and isinstance(result, torch.Tensor) and result.shape == square.shape \
                and torch.allclose(result, square + table[:length].to(square.dtype), atol=1e-6):
            task.fail(f"PositionalEncoding.forward raises for x of shape {tuple(x.shape)} but is right for a batch of "
                      f"{length} = L sequences: the table is cut with the batch size, x.size(0); cut it with the "
                      "length, pe[:, :x.size(1)].")
        raise


def _explain_forward(task, module, x, embed_dim):
    """Fail saying how forward(x) departs from x + pe[:, :L]: the table added (scaled, shifted) or x scaled."""
    pe = module.pe.detach().to(x.dtype)
    zero = task.call("PositionalEncoding.forward", module, torch.zeros_like(x)).detach()
    rows = pe[:, : x.size(1)].expand_as(x)
    if not torch.allclose(zero, rows, atol=1e-6):
        factor = (zero * rows).sum() / rows.pow(2).sum()
        if torch.allclose(zero, factor * rows, atol=1e-6):
            task.fail(f"PositionalEncoding(zeros) is {factor.item():.4g} · pe[:, :L]; add the table once, unscaled.")
        for start in range(1, pe.size(1) - x.size(1) + 1):
            if torch.allclose(zero, pe[:, start:start + x.size(1)].expand_as(x), atol=1e-6):
                task.fail(f"PositionalEncoding adds rows {start} to {start + x.size(1) - 1} of pe; add the first L "
                          "rows, pe[:, :L], so that position 0 gets row 0.")
        task.fail("PositionalEncoding(zeros) should be pe[:, :L], the first L rows of your own table, but is not.")
    slope = task.call("PositionalEncoding.forward", module, x).detach() - zero
    factor = (slope * x).sum() / x.pow(2).sum()
    if torch.allclose(slope, factor * x, atol=1e-6):
        root = " = √embed_dim" if abs(factor.item() - embed_dim ** 0.5) < 1e-6 else ""
        task.fail(f"x is multiplied by {factor.item():.4g}{root} before pe is added; this task adds pe to x "
                  "unchanged: x + pe[:, :L].")


@check_function(4)
def check_task_4(task, PositionalEncoding):
    """Check PositionalEncoding(embed_dim, max_len): the buffer `pe` and forward(x) = x + pe[:, :L]."""
    expect_module_class(task, PositionalEncoding, "PositionalEncoding")
    fixture = load_fixture(__package__, 4)
    long, small = fixture["long"], fixture["small"]
    module = build(task, PositionalEncoding, "PositionalEncoding", long["embed_dim"], long["max_len"],
                   dtype=torch.float32, native=True)
    pe = _table(task, module, long["embed_dim"], long["max_len"])
    _expect_rows(task, pe, long["positions"], long["rows"], signatures(long, "rows"))
    module = build(task, PositionalEncoding, "PositionalEncoding", small["embed_dim"], small["max_len"])
    _expect_rows(task, _table(task, module, small["embed_dim"], small["max_len"]),
                 torch.arange(small["max_len"]), small["table"], signatures(small, "table"))
    x = small["x"].clone()
    outputs = expect_output(task, "PositionalEncoding(x)", _forward(task, module, x, small["table"]),
                            x.shape, x.dtype, attention_api=False)
    expect_unchanged(task, small["x"], x)
    if not matches(outputs, small["outputs"], 1e-6, 1e-6):
        expect_finite(task, "PositionalEncoding(x)", outputs)
        diagnose(task, "PositionalEncoding(x)", outputs, signatures(small, "outputs"), 1e-6, 1e-6)
        _explain_forward(task, module, x, small["embed_dim"])
    expect_close(task, "PositionalEncoding(x)", outputs, small["outputs"], 1e-6, 1e-6, signatures(small, "outputs"))
    single = build(task, PositionalEncoding, "PositionalEncoding", small["embed_dim"], small["max_len"],
                   dtype=torch.float32, native=True)
    expect_native_output(task, single, "PositionalEncoding", "PositionalEncoding on float32 input",
                         lambda: task.call("PositionalEncoding.forward", single, small["x"].float()), small["outputs"],
                         attention_api=False)
    task.passed("the sin/cos table, its buffer registration and x + pe[:, :L] are right.")
