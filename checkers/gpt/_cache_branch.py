"""Tasks 4-5: a cached call's NotImplementedError traced to the attention's cache branch (Task 3, in Task 2's cell)."""
import torch
import torch.nn as nn

from .._core import Diagnosis, NotImplementedYet

CACHE_BRANCH_UNWRITTEN = Diagnosis(
    "cache-branch-unwritten",
    "its attention raises NotImplementedError when given a cache: the cache branch of your "
    "CausalSelfAttention (in the Task 2 cell) is Task 3; do Task 3 first.")


def call_with_cache(task, what, module, attention, cache, attention_cache, *args):
    """task.call(what, module, *args, cache=cache), but a NotImplementedError raised by the attention when it is given
    attention_cache (one block's (keys, values)) fails naming Task 3 instead of 'Task N is not implemented yet'."""
    __tracebackhide__ = True
    try:
        return task.call(what, module, *args, cache=cache)
    except NotImplementedYet:
        if _cache_branch_unwritten(attention, attention_cache):
            task.fail(f"{what}: {CACHE_BRANCH_UNWRITTEN}", CACHE_BRANCH_UNWRITTEN.slug)
        raise


def _cache_branch_unwritten(attention, cache):
    """Whether attention(one new position, cache=cache) raises NotImplementedError."""
    keys = cache[0] if isinstance(cache, (tuple, list)) and len(cache) == 2 else None
    if not isinstance(attention, nn.Module) or not isinstance(keys, torch.Tensor) or keys.dim() != 4:
        return False
    x = keys.new_zeros(keys.size(0), 1, keys.size(1) * keys.size(3))  # (B, 1, D): one new position
    try:
        with torch.no_grad():
            attention(x, cache=cache)
    except NotImplementedError:
        return True
    except Exception:  # noqa: BLE001 -- only a probe
        return False
    return False
