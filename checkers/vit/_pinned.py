"""The constructors this assignment's tasks pin, in order, with their defaults (see checkers/_modules.py: build)."""
from .._modules import REQUIRED

PINNED = {
    # Tasks 2-3
    "PatchEmbedding": dict(image_size=REQUIRED, patch_size=REQUIRED, in_channels=REQUIRED, embed_dim=REQUIRED),
    "VisionTransformer": dict(image_size=REQUIRED, patch_size=REQUIRED, in_channels=REQUIRED, num_classes=REQUIRED,
                              embed_dim=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED, num_layers=REQUIRED,
                              dropout=0.0),
}
