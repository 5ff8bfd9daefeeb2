"""What changing some of a module's parameters does to an output: the primitive of every probe that finds weights the
student's code never uses (a projection, a sub-layer, a block). Nothing here raises: a run that fails gives None.
"""
from contextlib import contextmanager

import torch


def quiet(run):
    """run()'s tensor (the first item of a tuple or list), detached, under no_grad; None when run raises or gives
    something else."""
    try:
        with torch.no_grad():
            result = run()
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    result = result[0] if isinstance(result, (tuple, list)) and result else result
    return result.detach() if isinstance(result, torch.Tensor) else None


@contextmanager
def changed(parameters, change):
    """Each parameter replaced by change(parameter) inside the block, restored after it."""
    saved = [parameter.detach().clone() for parameter in parameters]
    try:
        with torch.no_grad():
            for parameter in parameters:
                parameter.copy_(change(parameter))
        yield
    finally:
        with torch.no_grad():
            for parameter, value in zip(parameters, saved):
                parameter.copy_(value)


def noise(generator, scale=1.0):
    """A change for `changed`: the parameter plus scale times seeded standard normal noise of its shape."""
    return lambda value: value + scale * torch.randn(value.shape, generator=generator, dtype=value.dtype)


def unchanged_by(run, parameters, before, change, atol=0.0):
    """Whether run()'s tensor stays before (within atol; exactly for 0) while the parameters are changed; False when
    the changed run fails or gives another shape."""
    with changed(parameters, change):
        after = quiet(run)
    if after is None or before is None or after.shape != before.shape:
        return False
    return bool(torch.equal(after, before) if atol == 0 else torch.allclose(after, before, atol=atol))
