"""Task 1: rotary position embeddings (RoPE) on interleaved feature pairs."""
import math
import warnings

import torch
import torch.nn as nn

from .._compare import diagnose, expect_close, expect_finite, matches, signatures
from .._core import Diagnosis, NotImplementedYet, check_function, expect_module_class, load_fixture, one_line, slug_of
from ._probes_generic import feature_permutation
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
    if _probe(rotary, x, offset) is None:
        _explain_error(task, rotary, x, offset, what)
    result = task.call(what, rotary, x) if offset == 0 else task.call(what, rotary, x, offset=offset)
    expect_unchanged(task, before, x)
    return expect_output(task, what, result, x.shape, x.dtype, attention_api=False)


def _explain_error(task, rotary, x, offset, what):
    """A call that fails at an offset but works at 0: the offset is mishandled; one that fails on L positions but
    works on head_dim of them at the same offset: L is read off the feature axis."""
    head_dim, seq_len = x.size(-1), x.size(-2)
    if offset and _probe(rotary, x, 0) is not None:
        task.fail(f"{what} fails, but the same {seq_len} positions starting at 0 work: the offset is mishandled; "
                  f"positions offset .. offset + L - 1 are the table rows [offset:offset + L] (here {offset} to "
                  f"{offset + seq_len - 1}).")
    if seq_len == head_dim or _probe(rotary, x.new_zeros(*x.shape[:-2], head_dim, head_dim), offset) is None:
        return
    if _probe(rotary, x[..., :1, :], offset) is None and _probe(rotary, x[..., :2, :], offset) is None:
        task.fail(f"{what} fails for L = {x.size(-2)} positions but works when L equals head_dim = {head_dim}: the "
                  "number of positions is read off the wrong axis; x is (B, H, L, head_dim), so L = x.size(-2).")


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
    _explain_layout(task, rotary, got, case["outputs"], what)
    _explain_frequencies(task, rotary, case["config"], what)
    if not matches(_pair_norms(got), _pair_norms(x), atol, rtol):
        _explain_second_feature(task, rotary, x.size(-1), what)
        task.fail(f"{what} changes the length of some pair (x[..., 2i], x[..., 2i + 1]): a rotation keeps it; turn "
                  "both features of each interleaved pair by the same angle p·theta_i with cos and sin.")
    if offset == 0 and not matches(got[..., 0, :], x[..., 0, :], atol, rtol):
        task.fail(f"{what} changes the token at position 0: its angle is 0, so it must come out unchanged.")
    _expect_relative(task, rotary, x, what, atol, rtol)


def _pair_maps(rotary, head_dim, positions):
    """(positions, head_dim // 2, 2, 2): the matrix by which the module maps each pair (x[2i], x[2i + 1]) at positions
    0, 1, ..., read off its outputs for the inputs (1, 0) and (0, 1); None when a call fails."""
    columns = []
    for feature in (0, 1):
        x = torch.zeros(1, 1, positions, head_dim, dtype=torch.float64)
        x[..., feature::2] = 1.0
        out = _probe(rotary, x, 0)
        if out is None:
            return None
        columns.append(out[0, 0].unflatten(-1, (-1, 2)))  # (L, P, 2): the image of the unit vector
    return torch.stack(columns, dim=-1)  # (L, P, 2, 2): [row, column]


def _explain_second_feature(task, rotary, head_dim, what):
    """Fail when y[2i] is a rotation's first feature but y[2i + 1] takes its two coefficients the other way round."""
    maps = _pair_maps(rotary, head_dim, 4)
    if maps is None:
        return
    first, second = maps[..., 0, :], maps[..., 1, :]  # (L, P, 2) each: the coefficients of x[2i] and x[2i + 1]
    lengths = first.norm(dim=-1)
    if torch.allclose(lengths, torch.ones_like(lengths)) and torch.allclose(second, first * first.new_tensor([1, -1])):
        task.fail(f"{what}: the second feature of each pair is y[2i+1] = x[2i]·cos + x[2i+1]·sin, its two "
                  "coefficients the other way round: a rotation has y[2i+1] = x[2i]·sin + x[2i+1]·cos (and "
                  "y[2i] = x[2i]·cos - x[2i+1]·sin).")


def _explain_layout(task, rotary, got, expected, what):
    """Name tables whose cos and sin are swapped (row 0, angle 0, must be cos 1 and sin 0), or an output whose features
    are the right values in another order."""
    cos, sin = getattr(rotary, "cos", None), getattr(rotary, "sin", None)
    if isinstance(cos, torch.Tensor) and isinstance(sin, torch.Tensor) and cos.dim() == 2 and sin.shape == cos.shape:
        if torch.allclose(cos[0], torch.zeros_like(cos[0])) and torch.allclose(sin[0], torch.ones_like(sin[0])):
            task.fail(f"{what}: row 0 of the table cos is 0 and of sin is 1: the tables are swapped, cos holds "
                      "sin(p·theta_i) and sin holds cos(p·theta_i) (at angle 0, cos is 1 and sin is 0).")
    perm = feature_permutation(got, expected)
    if perm is not None:
        moved = [f"{j} holds feature {k}'s" for j, k in enumerate(perm) if j != k][:3]
        task.fail(f"{what}: the output holds the right values with its features in another order (output feature "
                  f"{', '.join(moved)} value): put each rotated pair back at features 2i and 2i + 1, e.g. "
                  "torch.stack([first, second], dim=-1).flatten(-2), not torch.cat.")


# Exponents (a·2i + b) / head_dim tried for the frequencies the module turns at: (-1, 0) is the pinned one.
EXPONENTS = [(a, b) for a in (-1, 1, -2, -0.5, 2, 0.5) for b in (0, -1, 1, -2, 2)]


def _turn_angles(rotary, head_dim, positions):
    """(positions, head_dim // 2): the angle by which the module turns the unit vector (1, 0) of each pair at
    positions 0, 1, ..., in (-pi, pi]; None when it does not keep the pairs' lengths."""
    x = torch.zeros(1, 1, positions, head_dim, dtype=torch.float64)
    x[..., 0::2] = 1.0
    out = _probe(rotary, x, 0)
    if out is None:
        return None
    pairs = out[0, 0].unflatten(-1, (-1, 2))  # (L, P, 2)
    if not torch.allclose(pairs.norm(dim=-1), torch.ones(pairs.shape[:-1], dtype=pairs.dtype), atol=1e-6):
        return None
    return torch.atan2(pairs[..., 1], pairs[..., 0])


def _wrapped(angles):
    return torch.remainder(angles + math.pi, 2 * math.pi) - math.pi


def _explain_frequencies(task, rotary, config, what):
    """Fail naming the exponent of the frequencies the module turns at, when it is another than -2i / head_dim."""
    head_dim, base = config["head_dim"], config.get("base", 10000.0)
    angles = _turn_angles(rotary, head_dim, min(config["max_len"], 4))
    if angles is None:
        return
    pairs, positions = torch.arange(head_dim // 2, dtype=torch.float64), torch.arange(angles.size(0))[:, None]
    for a, b in EXPONENTS:
        theta = base ** ((a * 2 * pairs + b) / head_dim)
        if (_wrapped(positions * theta - angles)).abs().max() < 1e-6:
            if (a, b) == (-1, 0):
                return
            inner = ("" if abs(a) == 1 else f"{abs(a):g}·") + "2i" + ("" if b == 0 else
                                                                     f" {'+' if b * a > 0 else '-'} {abs(b)}")
            exponent = f"-({inner})" if a < 0 and b else f"-{inner}" if a < 0 else inner
            hint = "the exponent's minus sign is missing, so the frequencies grow with i; " if a > 0 else ""
            hint += "pair 0 must turn at theta_0 = base ** 0 = 1, so the exponents start at 0; " if b else ""
            task.fail(f"{what}: pair i turns by theta_i = base ** ({exponent} / head_dim) per position: "
                      f"{hint}use theta_i = base ** (-2i / head_dim), e.g. base ** (-torch.arange(0, head_dim, 2) / "
                      "head_dim).")


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


def _expect_follows_dtype(task, single, case):
    """A float16 input to a module built under float32 comes back float16, close to the float64 values."""
    what = "RotaryEmbedding (built under float32) on float16 input"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note that complex float16 is experimental, for a complex rotation
        got = task.call(what, single, case["x"].to(torch.float16), offset=case["offset"])
    if isinstance(got, torch.Tensor) and got.is_floating_point() and got.dtype != torch.float16:
        task.fail(f"{what} returns {got.dtype}: the output keeps the input's dtype; cast the slices of the tables "
                  "to it before multiplying, e.g. cos = self.cos[offset:offset + L].to(x.dtype).")
    got = expect_output(task, what, got, case["x"].shape, torch.float16, attention_api=False)
    expect_close(task, what, got.double(), case["outputs"], 0.02, 0.01)


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
    _expect_follows_dtype(task, single, case)
    task.passed("interleaved pairs turned counter-clockwise by p·theta_i from position offset, theta_i = "
                "base ** (-2i / head_dim), the tables cos and sin as non-persistent buffers, the ValueError past "
                "max_len, gradients and dtypes are right.")
