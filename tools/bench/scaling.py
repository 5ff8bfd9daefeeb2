"""Attention scaling for the bench: peak memory and time against sequence length, expected bytes, log-log slopes."""
import numpy as np

from course_lib.scaling import measure_attention_scaling

FLOAT32_BYTES = 4
# Passes of the scaling study: what measure_attention_scaling's backward flag means, by name.
PASSES = {"forward": False, "forward_backward": True}


def attention_tensor_count(backward):
    """How many score-sized tensors attention holds at its peak.

    Forward: the scores and their softmax. Forward + backward: the softmax saved for backward, the
    gradient arriving at it and the gradient of the scores computed from both (the scores themselves
    are freed in the forward pass: softmax's backward needs only its output).
    """
    return 3 if backward else 2


def full_attention_bytes(batch_size, num_heads, seq_len, backward=False, element_bytes=FLOAT32_BYTES):
    """Bytes of full attention's (B, H, L, L) tensors at the peak of a forward (or forward + backward) pass.

    Returns:
        n * B * H * L**2 * element_bytes with n = attention_tensor_count(backward), an int.
    """
    return attention_tensor_count(backward) * batch_size * num_heads * seq_len**2 * element_bytes


def linformer_attention_bytes(batch_size, num_heads, seq_len, proj_dim, head_dim, backward=False,
                              element_bytes=FLOAT32_BYTES):
    """Bytes of Linformer's attention tensors: score-sized (B, H, L, k) ones and the projected K, V (B, H, k, d).

    Args:
        backward: count forward + backward (three score-sized tensors, and the gradients of the
            projected K and V) instead of the forward pass alone.

    Returns:
        (n * B * H * L * k + m * B * H * k * d) * element_bytes with n = attention_tensor_count(backward)
        and m = 4 with backward else 2, an int.
    """
    scores = attention_tensor_count(backward) * batch_size * num_heads * seq_len * proj_dim
    projected = (4 if backward else 2) * batch_size * num_heads * proj_dim * head_dim
    return (scores + projected) * element_bytes


def loglog_slope(xs, ys):
    """Least-squares slope of log(y) against log(x): the exponent p of y ~ c * x**p.

    Args:
        xs, ys: positive numbers, same length (at least 2).

    Returns:
        The fitted slope, a Python float.
    """
    log_x, log_y = np.log(np.asarray(xs, dtype=float)), np.log(np.asarray(ys, dtype=float))
    slope, _ = np.polyfit(log_x, log_y, 1)
    return float(slope)


def timed_runs(previous_lens, previous_seconds, seq_len, repeats, long_call_seconds):
    """Timed runs for the next point of a curve: 1 if it will be a long call, else `repeats`.

    A call of a second or more averages out its own jitter, and every extra run of the longest full
    attention costs as much as all the short points together. The next call's time is extrapolated
    quadratically (the fastest growth measured here) from the curve's last point.
    """
    if long_call_seconds is None or not previous_seconds:
        return repeats
    predicted = previous_seconds[-1] * (seq_len / previous_lens[-1]) ** 2
    return 1 if predicted > long_call_seconds else repeats


def scaling_curves(layers, seq_lens, batch_size, embed_dim, device, repeats=3, long_call_seconds=None):
    """Peak memory and time of each attention layer, forward only and forward + backward, at each length.

    Args:
        layers: dict name -> factory(seq_len) returning a (B, L, D) -> (B, L, D) module.
        seq_lens: increasing sequence lengths L.
        batch_size, embed_dim: size of the random input (B, L, D).
        device: where to run.
        repeats: timed runs per point (median).
        long_call_seconds: points expected to take longer than this are timed once (see timed_runs).

    Returns:
        dict with method (how memory was measured) and, per pass in PASSES, dict name ->
        {"peak_bytes": [...], "seconds": [...]} with one entry per length.
    """
    curves = {pass_name: {name: dict(peak_bytes=[], seconds=[]) for name in layers} for pass_name in PASSES}
    method = None
    for index, seq_len in enumerate(seq_lens):
        for pass_name, backward in PASSES.items():
            for name, make_layer in layers.items():
                curve = curves[pass_name][name]
                runs = timed_runs(seq_lens[:index], curve["seconds"], seq_len, repeats, long_call_seconds)
                (measured,) = measure_attention_scaling({name: make_layer}, [seq_len], batch_size=batch_size,
                                                        embed_dim=embed_dim, device=device, backward=backward,
                                                        repeats=runs)[name]
                curve["peak_bytes"].append(measured.peak_bytes)
                curve["seconds"].append(measured.seconds)
                method = measured.method
    return dict(method=method, **curves)
