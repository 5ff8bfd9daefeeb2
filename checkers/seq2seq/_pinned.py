"""The constructors this assignment's tasks pin, in order, with their defaults (see checkers/_modules.py: build)."""
import torch.nn as nn

from .._modules import REQUIRED

PINNED = {
    "MultiheadAttention": dict(embed_dim=REQUIRED, num_heads=REQUIRED),
    "EncoderBlock": dict(embed_dim=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED, activation=nn.ReLU,
                         dropout=0.0),
    "LayerNorm": dict(embed_dim=REQUIRED, eps=1e-5),
    "DecoderBlock": dict(embed_dim=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED, activation=nn.ReLU,
                         dropout=0.0),
    "Seq2SeqTransformer": dict(
        vocab_size=REQUIRED, embed_dim=REQUIRED, num_heads=REQUIRED, feedforward_dim=REQUIRED,
        num_encoder_layers=REQUIRED, num_decoder_layers=REQUIRED, max_len=512, activation=nn.ReLU, dropout=0.0,
        pad_id=0),
}
