"""Task 5's reading of a grouped-query attention layer whose output is wrong or raises, from probes of the layer
itself (checkers/llm/_probes_modules.py): a projection whose weights change nothing, the positions its rotary
submodule is given, how it repeats the key/value heads. Each returns one sentence, or None when it found nothing."""
import inspect

from ._probes_modules import ignored_parameters, repeats_seen, submodule_calls

NEVER_USED = {
    "q_proj.weight": "the queries are not made by q_proj: query = q_proj(x), split into num_heads heads.",
    "k_proj.weight": "the keys are not made by k_proj: key = k_proj(x), split into num_kv_heads heads.",
    "v_proj.weight": "the values are not made by v_proj: value = v_proj(x), split into num_kv_heads heads (is k_proj "
                     "used twice?).",
    "o_proj.weight": "o_proj is never applied: the merged heads (B, L, D) go through self.o_proj before they are "
                     "returned.",
}


def unused_projection(run, slots):
    """The sentence for the first projection whose weights, changed, leave the output as it was, or None."""
    ignored = ignored_parameters(run, slots)
    role = next((role for role in NEVER_USED if role in ignored), None)
    if role is None:
        return None
    return f"changing {role.split('.')[0]}'s weights changes nothing in the output: {NEVER_USED[role]}"


def _offset(arguments):
    return arguments.get("offset", 0)


def rotary_positions(run, layer, seq_len, past, num_heads, num_kv_heads):
    """What the calls of the layer's rotary submodule (one taking `offset`) say about the positions rotated, or None.

    Args:
        run: runs the layer on seq_len new positions after past cached ones.
    """
    calls = [(name, shape, arguments) for name, shape, arguments in submodule_calls(layer, run)
             if shape is not None and len(shape) == 4 and "offset" in _signature_of(layer, name)]
    names = {num_heads: "queries", num_kv_heads: "keys"} if num_heads != num_kv_heads else {}
    for name, shape, arguments in calls:
        if past and shape[2] == past + seq_len:
            return (f"self.{name} is given {shape[2]} positions, the cached keys with the new ones: cached keys are "
                    f"rotated already; rotate only the new keys, at offset=L_past, then concatenate them to the cache.")
        if shape[2] == seq_len and _offset(arguments) != past and shape[1] in names:
            return (f"self.{name} rotates the new {names[shape[1]]} ({shape[1]} heads) at offset={_offset(arguments)} "
                    f"with a cache of {past} positions: they stand at positions {past} .. {past + seq_len - 1}, "
                    f"offset=L_past.")
    rotated = {names.get(shape[1]) for _, shape, _ in calls}
    if len(calls) == 1 and rotated <= {"queries", "keys"} and None not in rotated:
        missing = ({"queries", "keys"} - rotated).pop()
        return (f"self.{calls[0][0]} is called once, on the {rotated.pop()}: the {missing} are never rotated; RoPE "
                f"rotates both the queries and the keys, at the same positions.")
    return None


def _signature_of(layer, name):
    """The parameter names of the forward of layer's submodule called name."""
    try:
        return inspect.signature(layer.get_submodule(name).forward).parameters
    except (AttributeError, TypeError, ValueError):
        return {}


def repeated_heads(run, num_heads, num_kv_heads, head_dim):
    """What the layer's repeat of its (B, H_kv, L, head_dim) keys or values did wrong, or None."""
    for operation, before, after in repeats_seen(run):
        if len(before) != 4 or len(after) != 4 or before[1] != num_kv_heads or before[3] != head_dim:
            continue
        if after[2] != before[2]:
            return (f"{operation} repeats the key/value heads along dim 2, the positions ({before} -> {after}): "
                    f"repeat along dim 1, the heads, repeat_interleave(num_heads // num_kv_heads, dim=1).")
        if after[1] != num_heads:
            return (f"{operation} turns the {num_kv_heads} key/value heads into {after[1]} ({before} -> {after}), "
                    f"where the queries have num_heads = {num_heads}: repeat each num_heads // num_kv_heads = "
                    f"{num_heads // num_kv_heads} times.")
    return None
