"""Checks of course_lib.measure against allocations whose sizes are known exactly."""
import math
import weakref

import pytest
import torch
import torch.nn.functional as F

from course_lib.measure import Measurement, measure, median_seconds, peak_memory_bytes

pytestmark = pytest.mark.fast

FLOAT32_BYTES = torch.empty((), dtype=torch.float32).element_size()
SIDE = 1024
SQUARE_BYTES = SIDE * SIDE * FLOAT32_BYTES  # one (1024, 1024) float32 tensor: 4 MiB
# Bookkeeping allocations (scalars, tiny index tensors) may ride along with the
# tensors we count; allow them a small fraction of the expected total.
EXACT_SLACK_FRACTION = 0.01
# Brief's tolerance for the attention-score case, where the library may keep
# extra buffers of the same order.
SCORES_FACTOR = 2.5
SCORES_SLOPE_TOLERANCE = 0.15
HEADS, HEAD_DIM = 32, 8
SEQ_LENS = (256, 512, 1024)
CUDA_ONLY = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def assert_about(peak_bytes, expected_bytes):
    """Every counted byte must be seen; only small bookkeeping extras are allowed."""
    upper = expected_bytes * (1 + EXACT_SLACK_FRACTION)
    assert expected_bytes <= peak_bytes <= upper, (peak_bytes, expected_bytes)


def one_square():
    return torch.empty(SIDE, SIDE)


def two_squares_at_once():
    alive_together = [one_square(), one_square()]
    del alive_together


def two_squares_in_sequence():
    first = one_square()
    del first  # freed before the second exists, so the peak is one square
    second = one_square()
    del second


def scores_fn(seq_len):
    """(a @ b).softmax(-1) on (32, L, 8) x (32, 8, L): a (32, L, L) product, then its softmax."""
    a = torch.randn(HEADS, seq_len, HEAD_DIM)
    b = torch.randn(HEADS, HEAD_DIM, seq_len)
    return lambda: (a @ b).softmax(-1)


def scores_bytes(seq_len):
    # The product and its softmax are both alive when softmax finishes.
    return 2 * HEADS * seq_len * seq_len * FLOAT32_BYTES


def test_returned_tensor_counts():
    result = measure(one_square, "cpu")
    assert isinstance(result, Measurement)
    assert_about(result.peak_bytes, SQUARE_BYTES)
    assert result.peak_mib == pytest.approx(result.peak_bytes / 2**20)


def test_two_live_tensors_add_up():
    peak_bytes, _ = peak_memory_bytes(two_squares_at_once, "cpu")
    assert_about(peak_bytes, 2 * SQUARE_BYTES)


def test_free_before_alloc_does_not_add_up():
    peak_bytes, _ = peak_memory_bytes(two_squares_in_sequence, "cpu")
    assert_about(peak_bytes, SQUARE_BYTES)


def test_temporary_inside_one_op_counts():
    # cross_entropy allocates a (rows, classes) log_softmax buffer and frees it
    # before returning: the peak must include it, though the op's net is tiny.
    rows, classes = 1024, 256
    logits, targets = torch.randn(rows, classes), torch.randint(classes, (rows,))
    peak_bytes, _ = peak_memory_bytes(lambda: F.cross_entropy(logits, targets), "cpu")
    assert_about(peak_bytes, rows * classes * FLOAT32_BYTES)


def test_memory_allocated_before_the_call_is_not_counted():
    existing = one_square()
    peak_bytes, _ = peak_memory_bytes(lambda: existing.add_(1), "cpu")  # in place
    assert peak_bytes <= SQUARE_BYTES * EXACT_SLACK_FRACTION


def test_scores_memory_grows_quadratically():
    runs = [measure(scores_fn(length), "cpu", repeats=1, warmup=0) for length in SEQ_LENS]
    peaks = [run.peak_bytes for run in runs]
    for seq_len, peak_bytes in zip(SEQ_LENS, peaks):
        expected = scores_bytes(seq_len)
        assert expected / SCORES_FACTOR <= peak_bytes <= expected * SCORES_FACTOR, seq_len
    assert peaks == sorted(peaks) and len(set(peaks)) == len(peaks)
    assert abs(log_log_slope(SEQ_LENS, peaks) - 2) <= SCORES_SLOPE_TOLERANCE


def log_log_slope(xs, ys):
    """Least-squares slope of log(y) against log(x)."""
    log_xs, log_ys = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mean_x, mean_y = sum(log_xs) / len(log_xs), sum(log_ys) / len(log_ys)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(log_xs, log_ys))
    return covariance / sum((x - mean_x) ** 2 for x in log_xs)


def test_cpu_time_is_positive_and_method_names_profiler():
    result = measure(scores_fn(SEQ_LENS[0]), torch.device("cpu"), repeats=3, warmup=1)
    assert result.seconds > 0
    assert "profiler" in result.method


def test_median_seconds_rejects_no_repeats():
    with pytest.raises(ValueError):
        median_seconds(one_square, "cpu", repeats=0)


def test_forward_backward_leaves_no_graph_alive():
    weights = torch.randn(SIDE, SIDE, requires_grad=True)
    outputs = []

    def train_step():
        weights.grad = None
        doubled = weights * 2  # holds a graph back to weights
        doubled.sum().backward()
        outputs.append(weakref.ref(doubled))
        return doubled

    result = measure(train_step, "cpu", repeats=2, warmup=1)
    assert all(output() is None for output in outputs)
    # doubled and the fresh weights.grad are alive together during backward.
    assert_about(result.peak_bytes, 2 * SQUARE_BYTES)


def test_unsupported_device_is_refused():
    with pytest.raises(ValueError):
        peak_memory_bytes(one_square, "meta")


@CUDA_ONLY
def test_cuda_sizes_and_method():
    def square_on_cuda():
        return torch.empty(SIDE, SIDE, device="cuda")

    result = measure(square_on_cuda, "cuda")
    assert_about(result.peak_bytes, SQUARE_BYTES)
    assert "max_memory_allocated" in result.method
    assert result.seconds > 0


@CUDA_ONLY
def test_cuda_sequential_alloc_free():
    def in_sequence():
        first = torch.empty(SIDE, SIDE, device="cuda")
        del first
        second = torch.empty(SIDE, SIDE, device="cuda")
        del second

    peak_bytes, _ = peak_memory_bytes(in_sequence, "cuda")
    assert_about(peak_bytes, SQUARE_BYTES)
