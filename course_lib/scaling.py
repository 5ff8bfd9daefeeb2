"""Peak memory and time of attention layers as the sequence grows (used by the notebook and the bench)."""
import torch

from .calls import student_call
from .measure import measure


@student_call
def measure_attention_scaling(layers, seq_lens, batch_size=32, embed_dim=8, device="cpu", backward=False, repeats=3):
    """Measure one pass of each attention layer at each sequence length.

    Args:
        layers: dict name -> factory(seq_len) returning an nn.Module that maps
            (batch_size, seq_len, embed_dim) to the same shape.
        seq_lens: sequence lengths to measure.
        batch_size, embed_dim: size of the random input.
        device: where to run.
        backward: measure forward + backward instead of forward only.
        repeats: timed runs per point (median reported).

    Returns:
        dict name -> list of course_lib.measure.Measurement, one per sequence length.
    """
    results = {name: [] for name in layers}
    for seq_len in seq_lens:
        inputs = torch.randn(batch_size, seq_len, embed_dim, device=device)  # (B, L, D)
        for name, make_layer in layers.items():
            layer = make_layer(seq_len).to(device)
            results[name].append(measure(_one_pass(layer, inputs, backward), device, repeats=repeats))
            del layer
    return results


def _one_pass(layer, inputs, backward):
    def forward_only():
        with torch.no_grad():
            return layer(inputs)

    def forward_backward():
        layer.zero_grad(set_to_none=True)
        layer(inputs).sum().backward()

    return forward_backward if backward else forward_only
