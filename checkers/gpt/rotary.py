"""Task 1: rotary position embeddings (RoPE) on interleaved feature pairs."""
import torch
import torch.nn as nn

from .._compare import diagnose, expect_close, expect_finite, matches, signatures
from .._core import Diagnosis, NotImplementedYet, check_function, expect_module_class, load_fixture, one_line, slug_of
from .._modules import (FIXED_DTYPE, _tensor_attributes, build, constructor_call, expect_gradients_everywhere,
                        expect_native_output, expect_output, expect_unchanged)

ATOL, RTOL = 1e-6, 1e-6
# Positions 2040-2043: an angle p·theta computed in float32 (valid: "computed in the default dtype" is about the
# tables) is off by up to half the float32 spacing near 2048, 1.2e-4 rad; measured 9e-5 on inputs of size ~3.
FAR, FAR_ATOL, FAR_RTOL = "positions 2040 to 2043", 5e-4, 1e-4
# Sentences the known mistakes' diagnoses quote (course/gpt/mistakes.py).
HALVES = Diagnosis(
    "halves",
    "feature j is paired with feature j + head_dim / 2 (the \"rotate half\" layout of some libraries): here "
    "the pairs are interleaved, x[..., 2i] with x[..., 2i + 1] (even, odd = x[..., 0::2], x[..., 1::2]).")
EXPONENT_HALVED = Diagnosis(
    "exponent-halved",
    "the frequencies use i where 2i belongs (theta_i = base ** (-i / head_dim)): pair i turns at "
    "theta_i = base ** (-2i / head_dim), e.g. base ** (-torch.arange(0, head_dim, 2) / head_dim).")
EXPONENT_DOUBLED = Diagnosis(
    "exponent-doubled",
    "the frequencies' exponent is twice too large (theta_i = base ** (-4i / head_dim), e.g. 2i "
    "divided by head_dim // 2): pair i turns at theta_i = base ** (-2i / head_dim).")
FROM_ONE = Diagnosis(
    "from-one",
    "the positions start at 1: the token at index j sits at position offset + j, so the first token of a "
    "call with offset 0 is not rotated (row 0 of the tables is cos 0 = 1, sin 0 = 0).")
CLOCKWISE = Diagnosis(
    "clockwise",
    "each pair turns clockwise, by -p·theta_i: turn it counter-clockwise, y[2i] = x[2i]·cos - x[2i+1]·sin "
    "and y[2i+1] = x[2i]·sin + x[2i+1]·cos.")
ADDITIVE = Diagnosis(
    "additive",
    "sines and cosines are added to x, which is no rotation: y - x does not depend on x and the norms "
    "change; multiply each pair by the rotation matrix of its angle instead.")
MULTIPLIED = Diagnosis(
    "multiplied",
    "each feature is multiplied by a sine or a cosine of its position, which is no rotation: the lengths "
    "change and scores keep depending on absolute positions; "
    "turn each interleaved pair (x[..., 2i], x[..., 2i + 1]) by its angle p·theta_i instead.")
ONE_ANGLE = Diagnosis(
    "one-angle",
    "every token is turned by the angle of position offset, as if each stood first: the token at index j "
    "sits at position offset + j, so it turns by (offset + j)·theta_i; use rows offset .. offset + L - 1 of "
    "the tables, one per token.")
OFFSET_IGNORED = Diagnosis(
    "offset-ignored",
    "the `offset` argument is ignored: the token at index j sits at position offset + j, so use rows "
    "offset .. offset + L - 1 of the tables.")
PERSISTENT = Diagnosis(
    "persistent",
    "the tables cos and sin are saved in the state_dict: register them with "
    "register_buffer(name, table, persistent=False), since they are recomputed from head_dim and max_len.")
NO_VALUE_ERROR = Diagnosis(
    "no-value-error",
    "raise a ValueError when offset + L > max_len, before reading the tables")
BOUNDARY = Diagnosis(
    "boundary",
    "positions up to max_len - 1 fit: raise the ValueError only when offset + L > max_len (not >=).")
BASE_IGNORED = Diagnosis(
    "base-ignored",
    "the `base` argument is ignored (another base gives the angles of base=10000): store it and use it.")


def _rotate(task, rotary, x, offset, what):
    """rotary(x, offset) (no offset argument when it is 0, to use the default), checked to be a tensor like x."""
    before = x.clone()
    result = task.call(what, rotary, x) if offset == 0 else task.call(what, rotary, x, offset=offset)
    expect_unchanged(task, before, x)
    return expect_output(task, what, result, x.shape, x.dtype, attention_api=False)


def _describe(config, offset=None, seq_len=None):
    """'RotaryEmbedding(8, max_len=12) at positions 3 to 7', as the student would build and call it."""
    where = "" if offset is None else f" at positions {offset} to {offset + seq_len - 1}"
    base = "" if config.get("base", 10000.0) == 10000.0 else f", base={config['base']:g}"
    return f"RotaryEmbedding({config['head_dim']}, max_len={config['max_len']}{base}){where}"


def _expect_tables(task, RotaryEmbedding, tables):
    """The pinned buffers cos and sin: (max_len, head_dim // 2), in the default dtype, non-persistent."""
    config = tables["config"]
    what = _describe(config)
    try:
        single = build(task, RotaryEmbedding, "RotaryEmbedding", **config, dtype=torch.float32, native=True)
    except NotImplementedYet:
        _explain_no_tables(task, RotaryEmbedding, config, what)
        raise
    if next(_tensor_attributes(single), None) is None:  # no tensor, but a written forward: not the stub
        _explain_no_tables(task, RotaryEmbedding, config, what)
    rotary = build(task, RotaryEmbedding, "RotaryEmbedding", **config, native=True)  # under float64
    for module, dtype in ((rotary, torch.float64), (single, torch.float32)):
        _expect_buffers(task, module, config, dtype, what)
    if {"cos", "sin"} & set(rotary.state_dict()):
        task.fail(f"{what}: {PERSISTENT}", PERSISTENT.slug)
    return rotary


def _explain_no_tables(task, RotaryEmbedding, config, what):
    """A constructor that makes no tensor is the stub's, unless forward works: then the tables are made elsewhere."""
    args, kwargs = constructor_call(RotaryEmbedding, "RotaryEmbedding", config, __package__)
    try:
        result = RotaryEmbedding(*args, **kwargs)(torch.zeros(1, 1, 2, config["head_dim"]))
    except Exception:  # noqa: BLE001 -- NotImplementedError included: then it is the stub
        return
    if isinstance(result, torch.Tensor):
        task.fail(f"{what} creates no tensor in __init__: compute the tables cos and sin there, once, as buffers "
                  "of shape (max_len, head_dim // 2), register_buffer(name, table, persistent=False).")

PLAIN_TABLES = Diagnosis(
    "tables-as-plain-attributes",
    "a plain tensor attribute, which .to(device) does not move")
TABLES_DTYPE = Diagnosis(
    "tables-kept-in-float64",
    "has dtype {found} in a module built with the default dtype {dtype}")


def _expect_buffers(task, rotary, config, dtype, what):
    """cos and sin registered as buffers of shape (max_len, head_dim // 2) in dtype, the default dtype at build."""
    buffers = dict(rotary.named_buffers(recurse=False))
    for name in ("cos", "sin"):
        found = getattr(rotary, name, None)
        if name not in buffers:
            kind = "an nn.Parameter, which is learned" if isinstance(found, nn.Parameter) else \
                PLAIN_TABLES if isinstance(found, torch.Tensor) else "missing"
            task.fail(f"{what}.{name} is {kind}: store the table of {name}(p·theta_i) as a buffer, "
                      f"self.register_buffer(\"{name}\", table, persistent=False).", slug_of(kind))
        expected = (config["max_len"], config["head_dim"] // 2)
        if tuple(found.shape) != expected:
            task.fail(f"{what}.{name} has shape {tuple(found.shape)}, expected (max_len, head_dim // 2) = {expected}: "
                      "one row per position, one column per pair (other layouts may be kept in other buffers).")
        if found.dtype != dtype:
            task.fail(f"{what}.{name} {TABLES_DTYPE.format(found=found.dtype, dtype=dtype)}: {FIXED_DTYPE}",
                      TABLES_DTYPE.slug)


def _expect_table_values(task, rotary, tables):
    """The tables hold cos(p·theta_i) and sin(p·theta_i), row p, column i (the forward may use other layouts)."""
    for name in ("cos", "sin"):
        got, expected = getattr(rotary, name), tables[name]
        if not matches(got, expected, ATOL, RTOL):
            what = f"{_describe(tables['config'])}.{name}"
            diagnose(task, what, got, signatures(tables, name), ATOL, RTOL)
            expect_close(task, f"{what} (row p, column i: {name}(p·theta_i))", got, expected, ATOL, RTOL)


def _probe(rotary, x, offset):
    """rotary(x, offset=offset) detached, or None when it fails or is no tensor of x's shape (a probe never raises)."""
    try:
        with torch.no_grad():
            result = rotary(x, offset=offset)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    return result if isinstance(result, torch.Tensor) and result.shape == x.shape else None


def _scales_each_feature(rotary, x, offset, got, atol, rtol):
    """Whether the output is x times a factor per feature and position: switching features of x off switches off
    the same features of the output (a rotation of a pair mixes its two features)."""
    keep = torch.arange(x.size(-1)) % 3 != 1  # (head_dim,): pairs with one feature on and one off, and both on
    masked = _probe(rotary, x * keep, offset)
    return masked is not None and matches(masked, got * keep, atol, rtol)


def _each_token_as_first(rotary, x, offset, got, atol, rtol):
    """Whether each token comes out as it does when called alone at position offset: then the position within the
    call is not used (here the output at index 0 is right, or x is unchanged at offset 0)."""
    alone = [_probe(rotary, x[..., index:index + 1, :], offset) for index in range(x.size(-2))]
    return all(token is not None for token in alone) and matches(got, torch.cat(alone, dim=-2), atol, rtol)


def _pair_norms(t):
    return t.detach().unflatten(-1, (-1, 2)).norm(dim=-1)  # (..., head_dim // 2)


def _explain(task, rotary, case, got, what, atol, rtol):
    """Name what the wrong output got is: a known mistake's output, or a property of a rotation that it breaks."""
    for key, sentence in (("halves", HALVES), ("clockwise", CLOCKWISE), ("next", FROM_ONE)):
        if key in case and matches(got, case[key], atol, rtol):
            task.fail(f"{what} is wrong: {sentence}", slug_of(sentence))
    x, offset = case["x"], case["offset"]
    if _each_token_as_first(rotary, x, offset, got, atol, rtol):
        task.fail(f"{what} is wrong: {ONE_ANGLE}", ONE_ANGLE.slug)
    doubled = _probe(rotary, 2 * x, offset)
    if doubled is not None and not matches(got, x, atol, rtol) and matches(doubled - 2 * x, got - x, atol, rtol):
        task.fail(f"{what} is wrong: {ADDITIVE}", ADDITIVE.slug)
    if _scales_each_feature(rotary, x, offset, got, atol, rtol):
        task.fail(f"{what} is wrong: {MULTIPLIED}", MULTIPLIED.slug)
    start = _probe(rotary, x, 0) if offset else None
    if start is not None and matches(got, start, atol, rtol):
        task.fail(f"{what} gives the output of positions 0 to {x.size(-2) - 1}: {OFFSET_IGNORED}", OFFSET_IGNORED.slug)
    diagnose(task, what, got, signatures(case, "outputs"), atol, rtol)  # the exponent's mistakes, an ignored base
    if not matches(_pair_norms(got), _pair_norms(x), atol, rtol):
        task.fail(f"{what} changes the length of some pair (x[..., 2i], x[..., 2i + 1]): a rotation keeps it; turn "
                  "both features of each interleaved pair by the same angle p·theta_i with cos and sin.")
    if offset == 0 and not matches(got[..., 0, :], x[..., 0, :], atol, rtol):
        task.fail(f"{what} changes the token at position 0: its angle is 0, so it must come out unchanged.")
    _expect_relative(task, rotary, x, what, atol, rtol)


def _expect_relative(task, rotary, x, what, atol, rtol):
    """Fail unless the score of a query at position m and a key at position n depends on m - n alone."""
    seq_len = x.size(-2)
    query, key = (x[:1, :1, index:index + 1].expand(1, 1, seq_len, -1) for index in (0, 1))  # (1, 1, L, head_dim)
    rotated = [_probe(rotary, vector, 0) for vector in (query, key)]
    if any(value is None for value in rotated):
        return
    scores = (rotated[0] @ rotated[1].transpose(-2, -1))[0, 0]  # (L, L): query at m, key at n
    for distance in range(-seq_len + 1, seq_len):
        diagonal = scores.diagonal(-distance)  # the scores with m - n = distance
        if not matches(diagonal, diagonal[:1].expand_as(diagonal), atol, rtol):
            task.fail(f"{what}: one query and one key placed at positions m and n give scores that change with m "
                      f"for the same m - n = {distance}: the angle must be p·theta_i, proportional to the "
                      "position p, so that only the distance is left in q·k.")


def _expect_case(task, RotaryEmbedding, name, case):
    x, offset, config = case["x"], case["offset"], case["config"]
    what = _describe(config, offset, x.size(-2))
    atol, rtol = (FAR_ATOL, FAR_RTOL) if name == FAR else (ATOL, RTOL)
    rotary = build(task, RotaryEmbedding, "RotaryEmbedding", **config)
    if offset + x.size(-2) == config["max_len"]:
        try:
            rotary(x, offset=offset)
        except ValueError as error:
            task.fail(f"{what} raised ValueError ({one_line(error, 100)}): {BOUNDARY}", BOUNDARY.slug)
        except Exception:  # noqa: BLE001 -- reported by the call that follows
            pass
    got = _rotate(task, rotary, x, offset, what)
    if not matches(got, case["outputs"], atol, rtol):
        expect_finite(task, what, got)
        _explain(task, rotary, case, got, what, atol, rtol)
        if config["base"] != 10000.0:
            other = _probe(build(task, RotaryEmbedding, "RotaryEmbedding", config["head_dim"], config["max_len"]),
                           x, offset)
            if other is not None and matches(got, other, atol, rtol):
                task.fail(f"{what} is wrong: {BASE_IGNORED}", BASE_IGNORED.slug)
    expect_close(task, what, got, case["outputs"], atol, rtol)


def _expect_value_error(task, RotaryEmbedding, config):
    """Positions past max_len: a ValueError, whatever else the tables would allow."""
    rotary = build(task, RotaryEmbedding, "RotaryEmbedding", **config)
    max_len = config["max_len"]
    for offset, seq_len in ((max_len - 3, 4), (max_len, 1)):
        what = f"{_describe(config, offset, seq_len)}, past max_len"
        try:
            result = rotary(torch.zeros(1, 1, seq_len, config["head_dim"]), offset=offset)
        except ValueError:
            continue
        except Exception as error:  # noqa: BLE001 -- the student's error, named below
            task.fail(f"{what} raised {type(error).__name__} ({one_line(error, 100)}): {NO_VALUE_ERROR}.",
                      NO_VALUE_ERROR.slug)
        task.fail(f"{what} returned {type(result).__name__} instead of raising: {NO_VALUE_ERROR}.", NO_VALUE_ERROR.slug)


@check_function(1)
def check_task_1(task, RotaryEmbedding):
    """Check RotaryEmbedding(head_dim, max_len, base): its tables, float64 values at several positions, bases and
    head sizes, the ValueError past max_len, gradients and float32 inputs."""
    expect_module_class(task, RotaryEmbedding, "RotaryEmbedding")
    fixture = load_fixture(__package__, 1)
    tables = _expect_tables(task, RotaryEmbedding, fixture["tables"])
    for name, case in fixture["cases"].items():
        _expect_case(task, RotaryEmbedding, name, case)
    _expect_table_values(task, tables, fixture["tables"])
    _expect_value_error(task, RotaryEmbedding, fixture["tables"]["config"])
    case = fixture["cases"]["offset 3"]
    rotary = build(task, RotaryEmbedding, "RotaryEmbedding", **case["config"])
    inputs = case["x"].clone().requires_grad_(True)
    loss = _rotate(task, rotary, inputs, case["offset"], "RotaryEmbedding.forward").pow(2).sum()
    expect_gradients_everywhere(task, rotary, loss, inputs, "RotaryEmbedding")
    single = build(task, RotaryEmbedding, "RotaryEmbedding", **case["config"], dtype=torch.float32, native=True)
    expect_native_output(task, single, "RotaryEmbedding", "RotaryEmbedding on float32 input",
                         lambda: _rotate(task, single, case["x"].float(), case["offset"], "RotaryEmbedding.forward"),
                         case["outputs"], attention_api=False)
    task.passed("interleaved pairs turned counter-clockwise by p·theta_i from position offset, theta_i = "
                "base ** (-2i / head_dim), the tables cos and sin as non-persistent buffers, the ValueError past "
                "max_len, gradients and dtypes are right.")
