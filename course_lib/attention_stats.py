"""Numbers that describe attention maps: how low-rank they are and how peaked their rows are."""
import torch

from .calls import student_call


def explained_variance(matrix):
    """Cumulative share of squared singular values: entry k-1 is the share kept by a rank-k approximation."""
    singular_values = torch.linalg.svdvals(matrix.detach().double().cpu())
    energy = torch.cumsum(singular_values**2, dim=-1)
    return (energy / energy[..., -1:]).numpy()


@student_call
def head_statistics(attention):
    """Per head, medians over examples of three numbers that tell learned structure from near-uniform rows.

    Args:
        attention: (num_heads, L, L) for one example or (N, num_heads, L, L) for N examples.

    Returns:
        list of dicts, one per head: "sigma1_share" (the first singular value's share of the energy),
        "largest_weight" (the mean over queries of a row's largest weight; 1 / L for uniform rows) and
        "mirror_share" (the share of queries i whose largest weight is on key L - 1 - i; 1 / L by chance).
    """
    maps = attention.detach().double().cpu().reshape(-1, *attention.shape[-3:])  # (N, H, L_q, L_k)
    sigma1_share = torch.as_tensor(explained_variance(maps)[..., 0]).median(dim=0).values  # (H,)
    largest_weight = maps.amax(dim=-1).mean(dim=-1).median(dim=0).values  # (H,)
    mirror = torch.arange(maps.shape[-1] - 1, -1, -1)  # (L,): key L - 1 - i for query i
    mirror_share = (maps.argmax(dim=-1) == mirror).double().mean(dim=-1).median(dim=0).values  # (H,)
    return [{"sigma1_share": float(share), "largest_weight": float(weight), "mirror_share": float(mirrored)}
            for share, weight, mirrored in zip(sigma1_share, largest_weight, mirror_share)]
