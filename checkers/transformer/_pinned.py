"""The constructors this assignment's tasks pin, in order, with their defaults (see checkers/_modules.py: build)."""
import torch.nn as nn

from .._modules import REQUIRED

PINNED = {
    "MultiheadAttention": dict(embed_dim=REQUIRED, num_heads=REQUIRED),
    "EncoderBlock": dict(embed_dim=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED, activation=nn.ReLU,
                         dropout=0.0),
    "PositionalEncoding": dict(embed_dim=REQUIRED, max_len=5000),
    "TransformerForSequenceClassification": dict(
        input_dim=REQUIRED, embed_dim=REQUIRED, num_classes=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED,
        num_layers=REQUIRED, activation=nn.GELU, max_len=5000, dropout=0.0),
    "LinformerAttention": dict(embed_dim=REQUIRED, num_heads=REQUIRED, sequence_length=REQUIRED, proj_dim=REQUIRED),
    "LinformerBlock": dict(embed_dim=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED, sequence_length=REQUIRED,
                           proj_dim=REQUIRED, activation=nn.ReLU, dropout=0.0),
    "LinformerForSequenceClassification": dict(
        input_dim=REQUIRED, embed_dim=REQUIRED, num_classes=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED,
        num_layers=REQUIRED, sequence_length=REQUIRED, proj_dim=REQUIRED, activation=nn.GELU, max_len=5000,
        dropout=0.0),
}
