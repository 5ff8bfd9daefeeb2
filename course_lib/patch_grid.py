"""The vit notebook's look at learned position embeddings: similarity between patch positions on their 2-D grid."""
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from .calls import student_call


def grid_distances(side):
    """(N, N) steps between patch positions on a side x side grid (row-major), moving along rows and columns."""
    row, col = torch.arange(side * side) // side, torch.arange(side * side) % side  # (N,) each
    return (row[:, None] - row[None]).abs() + (col[:, None] - col[None]).abs()  # (N, N)


@torch.no_grad()
def position_similarity(position_embedding):
    """(1, N + 1, D) learned positions, [CLS] first -> (N, N) cosine similarities of the patch positions."""
    positions = position_embedding.detach().cpu().reshape(-1, position_embedding.shape[-1])[1:]  # (N, D)
    return F.cosine_similarity(positions[:, None], positions[None], dim=-1)  # (N, N)


@student_call
def plot_position_similarity(position_embedding):
    """Print the mean similarity at each grid distance, then draw every position against every other on the grid.

    Args:
        position_embedding: (1, N + 1, D) with N a square number of patches, [CLS]'s position first.
    """
    similarity = position_similarity(position_embedding)  # (N, N)
    side = math.isqrt(similarity.shape[0])
    distance = grid_distances(side)
    for steps in range(1, 2 * side - 1):
        print(f"grid distance {steps}: mean cosine similarity {similarity[distance == steps].mean():+.3f}")
    fig, axes = plt.subplots(side, side, figsize=(6.5, 6.5), sharex=True, sharey=True, squeeze=False)
    for index, ax in enumerate(axes.flat):
        image = ax.imshow(similarity[index].reshape(side, side), cmap="viridis", vmin=-1, vmax=1)
        ax.set_xticks([]), ax.set_yticks([])
    fig.supxlabel("patch column (each small square: one position against all)"), fig.supylabel("patch row")
    fig.colorbar(image, ax=axes, shrink=0.7, label="cosine similarity")
    fig.suptitle(f"Learned position embeddings on the {side} x {side} patch grid")
    plt.show()
