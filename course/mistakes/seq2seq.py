"""Known student mistakes of the seq2seq assignment, each a few edits of the reference source (the solutions
notebook). See course/mistakes/transformer.py for how they are used. Instructor-side only: never shipped.
"""
from checkers.seq2seq.decoding import (BUILDS_GRAPH, DROPS_EOS, FIRST_STOPS, HARD_CODED_PAD, KEEPS_BOS,
                                       MODE_NOT_RESTORED, NEVER_STOPS, NOT_PADDED, PADS_WITH_EOS, PREFIX_NOT_FED,
                                       TRAIN_MODE)
from checkers.seq2seq.model import (ENCODER_PADDING, MEMORY_PADDING, NO_OUTPUT_LAYER, OUTPUT_ON_MEMORY,
                                    PAD_ID_NOT_STORED, SEPARATE_EMBEDDINGS)
from course.mistakes import Mutant

# Task 6: greedy_decode
STOP = "if finished.all():\n                    break"
RETURN = "return tokens[:, 1:]"
PAD_AFTER_EOS = "next_token.masked_fill(finished, model.pad_id)"
RESTORE = "model.train(was_training)"
LOOP = "for _ in range(max_len):"
DECODE_STEP = "model.decode(tokens, memory, source)"
# Task 5: Seq2SeqTransformer
SCALE = " * math.sqrt(self.embed_dim)"
ENCODE_EMBED = "x = self.positional_encoding(self.embedding(source) * math.sqrt(self.embed_dim))"
DECODE_EMBED = "x = self.positional_encoding(self.embedding(target_input) * math.sqrt(self.embed_dim))"
SELF_MASK = "self_mask = causal_mask(target_input.size(1), device=target_input.device)"
MEMORY_MASK = "memory_mask = padding_mask(source, self.pad_id)"
ENCODER_CALL = "x, weights = block(x, mask=mask, return_attention=True)"
SIZES = "sizes = (embed_dim, num_heads, feedforward_dim, activation, dropout)"
EMBEDDING = "self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)"
OUTPUT = "return self.output(x)  # (B, T, vocab_size)"
SCALED_BY_D = "the embeddings are multiplied by embed_dim (or by √embed_dim twice); multiply them by √embed_dim once."
MODEL_MUTANTS = [
    Mutant(5, "decoder sees the next token", ((SELF_MASK, "self_mask = torch.ones(target_input.size(1), "
                                               "target_input.size(1), dtype=torch.bool).tril(1)"),),
           "the decoder's self-attention mask lets position t see position t + 1: use causal_mask(T), True where "
           "key j <= query i."),
    Mutant(5, "no causal mask in decode", ((SELF_MASK, "self_mask = None"),),
           "decode gives the decoder blocks no causal mask, so every target position sees the whole target: pass "
           "causal_mask(T) as self_mask."),
    Mutant(5, "memory padding ignored in the cross-attention", ((MEMORY_MASK, "memory_mask = None"),), MEMORY_PADDING),
    Mutant(5, "source padding ignored in the encoder", ((ENCODER_CALL, "x, weights = block(x, return_attention=True)"),),
           ENCODER_PADDING),
    Mutant(5, "embedding not scaled", ((SCALE, ""),),
           "the embeddings are not multiplied by √embed_dim before the positional encoding: use "
           "self.embedding(tokens) * math.sqrt(embed_dim)."),
    Mutant(5, "embedding scaled by embed_dim", ((SCALE, " * self.embed_dim"),), SCALED_BY_D),
    Mutant(5, "embedding scaled twice", ((SCALE, " * math.sqrt(self.embed_dim) * math.sqrt(self.embed_dim)"),),
           SCALED_BY_D),
    Mutant(5, "embedding divided by sqrt(embed_dim)", ((SCALE, " / math.sqrt(self.embed_dim)"),),
           "the embeddings are divided by √embed_dim; multiply them by √embed_dim."),
    Mutant(5, "target embedding not scaled", ((DECODE_EMBED, DECODE_EMBED.replace(SCALE, "")),),
           "the target embeddings in decode are not multiplied by √embed_dim: scale them as the source's in encode."),
    Mutant(5, "separate target embedding",
           ((EMBEDDING, EMBEDDING + "\n        self.target_embedding = nn.Embedding(vocab_size, embed_dim, "
                                    "padding_idx=pad_id)"),
            (DECODE_EMBED, DECODE_EMBED.replace("self.embedding(", "self.target_embedding("))), SEPARATE_EMBEDDINGS.format(count=2)),
    Mutant(5, "no padding_idx", ((EMBEDDING, "self.embedding = nn.Embedding(vocab_size, embed_dim)"),), "padding_idx"),
    Mutant(5, "positional encoding missing on the target",
           ((DECODE_EMBED, "x = self.embedding(target_input) * math.sqrt(self.embed_dim)"),),
           "decode adds no positional encoding to the target embeddings: apply self.positional_encoding there as "
           "in encode."),
    Mutant(5, "positional encoding missing on the source",
           ((ENCODE_EMBED, "x = self.embedding(source) * math.sqrt(self.embed_dim)"),),
           "encode adds no positional encoding to the source embeddings: apply self.positional_encoding to "
           "the scaled embeddings."),
    Mutant(5, "positional encoding before the scaling",
           ((DECODE_EMBED, "x = self.positional_encoding(self.embedding(target_input)) * math.sqrt(self.embed_dim)"),
            (ENCODE_EMBED, "x = self.positional_encoding(self.embedding(source)) * math.sqrt(self.embed_dim)")),
           "the positional encoding is scaled by √embed_dim too: scale the embeddings first, then add the "
           "positions."),
    Mutant(5, "output layer missing", ((OUTPUT, "return x"),), NO_OUTPUT_LAYER[-60:]),
    Mutant(5, "output layer applied to the memory", ((OUTPUT, "return self.output(memory)"),), OUTPUT_ON_MEMORY[-60:]),
    Mutant(5, "pad_id not stored", (("self.pad_id, self.embed_dim = pad_id, embed_dim",
                                     "self.pad_id, self.embed_dim = 0, embed_dim"),),
           PAD_ID_NOT_STORED.format(pad_id=3, found=0)),
    Mutant(5, "activation not passed on", ((SIZES, SIZES.replace("activation,", "nn.ReLU,")),),
           "the blocks ignore the `activation` argument: pass activation on to every encoder and decoder block."),
    Mutant(5, "dropout not passed on", ((SIZES, SIZES.replace(", dropout)", ")")),), "pass `dropout` on"),
    Mutant(5, "one decoder block for every layer",
           (("nn.ModuleList(DecoderBlock(*sizes) for _ in range(num_decoder_layers))",
             "nn.ModuleList([DecoderBlock(*sizes)] * num_decoder_layers)"),), "is the same module as"),
]

MUTANTS = [
    # ---- Tasks 1-4 ----

    # ---- Tasks 5-7 ----
    *MODEL_MUTANTS,
    Mutant(6, "never stops", ((STOP, "pass"),), NEVER_STOPS),
    Mutant(6, "EOS dropped", ((RETURN, "return tokens[:, 1:].masked_fill(tokens[:, 1:] == eos_id, model.pad_id)"),),
           DROPS_EOS),
    Mutant(6, "BOS kept", ((RETURN, "return tokens"),), KEEPS_BOS),
    Mutant(6, "padded with EOS", ((PAD_AFTER_EOS, "next_token.masked_fill(finished, eos_id)"),), PADS_WITH_EOS),
    Mutant(6, "not padded after EOS", ((PAD_AFTER_EOS, "next_token"),), NOT_PADDED),
    Mutant(6, "PAD id hard-coded", ((PAD_AFTER_EOS, "next_token.masked_fill(finished, 0)"),),
           HARD_CODED_PAD.format(found=0, pad_id=4)),
    Mutant(6, "train mode (dropout active)", (("    model.eval()\n    try:", "    try:"),), TRAIN_MODE),
    Mutant(6, "mode not restored", ((RESTORE, "pass"),), MODE_NOT_RESTORED.format(after="eval", before="train")),
    Mutant(6, "train mode set afterwards", ((RESTORE, "model.train()"),),
           MODE_NOT_RESTORED.format(after="train", before="eval")),
    Mutant(6, "gradients on", (("with torch.no_grad():", "with torch.enable_grad():"),), BUILDS_GRAPH),
    Mutant(6, "float tokens", (("bos_id, dtype=torch.long", "bos_id, dtype=torch.float"),), "torch.long"),
    Mutant(6, "one token short of max_len", ((LOOP, "for _ in range(max_len - 1):"),), "generate at most max_len"),
    Mutant(6, "one token over max_len", ((LOOP, "for _ in range(max_len + 1):"),), "generate at most max_len"),
    Mutant(6, "stops when the first sequence finishes", (("if finished.all():", "if finished.any():"),), FIRST_STOPS),
    Mutant(6, "only the last token fed back", ((DECODE_STEP, "model.decode(tokens[:, -1:], memory, source)"),),
           PREFIX_NOT_FED),
]
