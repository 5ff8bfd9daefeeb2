"""Probes of a VisionTransformer that cannot be built or loaded (Task 3): what its parts were built with.

Each probe reads sizes off the student's own modules (a block's feed-forward width, patch_embedding's projection and
positions), so it names what the model passed on, whatever code produced it.
"""
import torch.nn as nn

from .._weights import MissingPart, feedforward_linears
from ._roles import vit_blocks
from .._core import Diagnosis

SWAPPED = Diagnosis(
    "swapped",
    "num_heads and feedforward_dim reach PreNormBlock swapped: built with feedforward_dim={feedforward_dim} "
    "instead, its blocks' feed-forward layer has {width} hidden units, the num_heads given; call "
    "PreNormBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout).")
EMBEDDING_SIZES = Diagnosis(
    "embedding-sizes",
    "patch_embedding is built for other images than the model's: {found}; pass the model's own "
    "image_size, patch_size and in_channels on to PatchEmbedding.")


def _feedforward_width(model):
    """The hidden width of blocks[0]'s feed-forward network, or None when it has no such part."""
    try:
        first, _ = feedforward_linears(vit_blocks(model)[0].feedforward, "")
    except (MissingPart, AttributeError, IndexError, TypeError):
        return None
    return first.out_features


def swapped_block_sizes(build, config):
    """SWAPPED filled in when the model, built with feedforward_dim = embed_dim (which every num_heads dividing
    embed_dim builds either way), gets blocks whose feed-forward width is num_heads; else None.

    Args:
        build: config -> the student's model (raising as it does), config: the model's keyword arguments.
    """
    probe = dict(config, feedforward_dim=config["embed_dim"])
    if config["num_heads"] == probe["feedforward_dim"]:
        return None
    try:
        model = build(probe)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    if _feedforward_width(model) != config["num_heads"]:
        return None
    return SWAPPED.format(feedforward_dim=probe["feedforward_dim"], width=config["num_heads"])


def embedding_sizes(model, config):
    """EMBEDDING_SIZES filled in with the sizes patch_embedding's projection and positions were built for, when they
    are not the model's; else None."""
    embedding = getattr(model, "patch_embedding", None)
    projection, positions = getattr(embedding, "projection", None), getattr(embedding, "position_embedding", None)
    patch_size, found = config["patch_size"], []
    channels_size = config["in_channels"] * patch_size ** 2
    if isinstance(projection, nn.Linear) and projection.in_features != channels_size:
        found.append(f"its projection takes {projection.in_features} values per patch (in_channels="
                     f"{config['in_channels']} and patch_size={patch_size} give {channels_size})")
    rows = (config["image_size"] // patch_size) ** 2 + 1
    if positions is not None and hasattr(positions, "shape") and positions.dim() >= 2 and positions.shape[-2] != rows:
        found.append(f"its position_embedding has {positions.shape[-2]} rows (image_size={config['image_size']} and "
                     f"patch_size={patch_size} give {rows})")
    return EMBEDDING_SIZES.format(found=" and ".join(found)) if found else None
