"""checkers._calls.recorded_calls: the torch functions a call makes, by name and count, with results unchanged,
nesting, and torch's mode stack restored whatever the student's code does."""
import einops
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from checkers._calls import recorded_calls

pytestmark = pytest.mark.fast


def stack_depth():
    return torch._C._len_torch_function_stack()


class PassThrough(TorchFunctionMode):
    """A student's own mode: runs every function unchanged."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


X = torch.arange(48, dtype=torch.float64).reshape(2, 3, 8)
IMAGES = torch.arange(32, dtype=torch.float64).reshape(1, 2, 4, 4)


@pytest.mark.parametrize("call, name", [
    (lambda: F.layer_norm(X, (8,)), "torch.nn.functional.layer_norm"),
    (lambda: torch.layer_norm(X, (8,)), "torch.layer_norm"),
    (lambda: nn.LayerNorm(8, dtype=torch.float64)(X), "torch.nn.functional.layer_norm"),
    (lambda: F.group_norm(X.reshape(6, 8, 1), 1), "torch.nn.functional.group_norm"),
    (lambda: F.rms_norm(X, (8,)), "torch.nn.functional.rms_norm"),
    (lambda: X[:, 1:2], "Tensor.__getitem__"),
    (lambda: torch.stack([X, X]), "torch.stack"),
    (lambda: torch.cat([X, X]), "torch.cat"),
    (lambda: X.unfold(2, 2, 2), "Tensor.unfold"),
    (lambda: F.unfold(IMAGES, 2, stride=2), "torch.nn.functional.unfold"),
    (lambda: X.split(2, -1), "Tensor.split"),
    (lambda: X.shape, "Tensor.shape"),
    (lambda: X.mean(-1), "Tensor.mean"),
    (lambda: torch.ops.aten.layer_norm(X, [8]), "torch.ops.aten.layer_norm"),
    (lambda: torch.ops.aten.native_layer_norm.default(X, [8], None, None, 1e-5), "torch.ops.aten.native_layer_norm"),
])
def test_names_what_is_called(call, name):
    with recorded_calls() as counts:
        call()
    assert counts[name] == 1, dict(counts)


def test_counts_only_outermost_calls():
    """F.layer_norm calls torch.layer_norm inside: only what the code itself called is counted."""
    with recorded_calls() as counts:
        F.layer_norm(X, (8,))
        X[0], X[1]
    assert dict(counts) == {"torch.nn.functional.layer_norm": 1, "Tensor.__getitem__": 2}


def test_einops_rearrange_is_seen_as_the_tensor_methods_it_calls():
    with recorded_calls() as counts:
        einops.rearrange(IMAGES, "b c (h p) (w q) -> b (h w) (c p q)", p=2, q=2)
    assert counts["Tensor.permute"] == 1 and counts["Tensor.reshape"] >= 1, dict(counts)


def test_results_are_unchanged():
    torch.manual_seed(0)
    norm = nn.LayerNorm(8, dtype=torch.float64)
    inputs = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    plain = norm(inputs)
    plain.pow(3).sum().backward()
    plain_grad, inputs.grad = inputs.grad, None
    with recorded_calls():
        recorded = norm(inputs)
        recorded.pow(3).sum().backward()
    assert torch.equal(plain, recorded) and torch.equal(plain_grad, inputs.grad)
    assert type(recorded) is torch.Tensor and recorded.grad_fn is not None


def test_nests_inner_calls_count_in_both():
    depth = stack_depth()
    with recorded_calls() as outer:
        X.mean()
        with recorded_calls() as inner:
            X.sum()
        X.std()
    assert dict(inner) == {"Tensor.sum": 1}
    assert dict(outer) == {"Tensor.mean": 1, "Tensor.sum": 1, "Tensor.std": 1}
    assert stack_depth() == depth


def test_no_mode_stays_active_after_the_block_raises():
    depth = stack_depth()
    with pytest.raises(ValueError):
        with recorded_calls() as counts:
            X.sum()
            raise ValueError("the student's bug")
    assert dict(counts) == {"Tensor.sum": 1} and stack_depth() == depth
    with recorded_calls() as later:
        pass
    X.mean()  # after the block: counted nowhere
    assert not later


def test_sees_through_a_student_s_own_mode():
    with recorded_calls() as counts:
        with PassThrough():
            F.layer_norm(X, (8,))
    assert counts["torch.nn.functional.layer_norm"] == 1


def test_a_student_mode_left_active_is_removed_on_leaving():
    """Student code that enters its own mode and raises (or returns) without leaving it: torch's stack is restored."""
    depth = stack_depth()
    with pytest.raises(RuntimeError):
        with recorded_calls() as counts:
            PassThrough().__enter__()
            F.layer_norm(X, (8,))
            raise RuntimeError("left without leaving its mode")
    assert stack_depth() == depth and counts["torch.nn.functional.layer_norm"] == 1
    with recorded_calls():
        PassThrough().__enter__()
    assert stack_depth() == depth


def test_works_inside_an_outer_mode_and_leaves_it_active():
    with PassThrough():
        depth = stack_depth()
        with recorded_calls() as counts:
            X.sum()
        assert stack_depth() == depth == 1
    assert dict(counts) == {"Tensor.sum": 1} and stack_depth() == 0
