"""Differential probes of any student function: what its output ignores, and at which input sizes it runs.

Nothing here names an assignment: each probe takes the student's callable and inputs built by its caller, changes one
thing at a time and reports what changed. None of them raises; a call that raises counts as "no output".
"""
import torch

from .._compare import matches

ATOL, RTOL = 1e-9, 1e-7


def output_or_none(fn, *args):
    """fn(*args) detached when it is a tensor; None when it raises or returns anything else (a probe)."""
    try:
        with torch.no_grad():
            out = fn(*args)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    return out.detach() if isinstance(out, torch.Tensor) else None


def same_output(fn, first, second):
    """Whether fn gives the same tensor on the argument lists first and second (False when either gives none)."""
    one, two = output_or_none(fn, *first), output_or_none(fn, *second)
    return one is not None and two is not None and one.shape == two.shape and matches(one, two, ATOL, RTOL)


def unread_items(fn, items, replaced):
    """The indices i of the list items whose replacement by replaced(i) leaves fn(items) unchanged.

    Args:
        fn: the student's function of one list.
        items: the list it is called with (at least two items, or nothing can be said).
        replaced: i -> another valid value for items[i], different enough to change a right output.
    """
    if output_or_none(fn, list(items)) is None:
        return []
    return [index for index in range(len(items))
            if same_output(fn, [list(items)], [[*items[:index], replaced(index), *items[index + 1:]]])]


def runs(fn, *args):
    """Whether fn(*args) returns a tensor (a probe: never raises)."""
    return output_or_none(fn, *args) is not None


def sizes_that_run(fn, make, sizes, tried):
    """{size name: [values it runs at]} when each size alone is changed to each value in tried[name].

    Args:
        fn: the student's function; make(**sizes) -> its argument list.
        sizes: the sizes it raised at, {name: value}.
        tried: {name: values to try, one at a time, the other sizes kept}.
    """
    return {name: [value for value in values if runs(fn, *make(**dict(sizes, **{name: value})))]
            for name, values in tried.items()}
