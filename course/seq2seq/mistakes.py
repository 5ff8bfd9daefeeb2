"""Known student mistakes of the seq2seq assignment, each a few edits of the reference source (the solutions
notebook). See course/transformer/mistakes.py for how they are used. Instructor-side only: never shipped.
"""
from checkers.seq2seq.decoding import (BOS_CONSTANT, BUILDS_GRAPH, DROPS_EOS, EOS_CONSTANT, FIRST_STOPS,
                                       HARD_CODED_PAD, KEEPS_BOS, MODE_NOT_RESTORED, NEVER_STOPS, NOT_PADDED,
                                       PADS_WITH_EOS, PREFIX_NOT_FED, SAMPLES, TRAIN_MODE)
from checkers.seq2seq.model import (BLOCK_MEMORY_IS_X, DROPOUT_MISSING, ENCODER_PADDING, MEMORY_MASK_FROM_TARGET,
                                    MEMORY_PADDING, NO_OUTPUT_LAYER, OUTPUT_ON_MEMORY, PAD_ID_HARD_CODED, PAD_ID_NOT_STORED,
                                    SEPARATE_EMBEDDINGS)
from checkers.seq2seq import attention as _attention, decoder as _decoder, layer_norm as _norm, masks as _masks
from checkers.seq2seq import model as _model
from course.mutant import Mutant

# ---- Tasks 1-4: the reference lines the mistakes edit ----
VARIANCE = "var = (centered * centered).mean(dim=-1, keepdim=True)  # (..., 1), biased: divided by D"
NORMALISE = "return centered / torch.sqrt(var + self.eps) * self.weight + self.bias  # (..., D)"
MEAN = "mean = x.mean(dim=-1, keepdim=True)  # (..., 1)"
CAUSAL = "return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()  # (L, L)"
PADDING = "return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, L)"
KEY = "key = self.k_proj(context).view("
VALUE = "value = self.v_proj(context).view("
QUERY = "query = self.q_proj(x).view("
MHA_CALL = "heads, attention = scaled_softmax_attention(query, key, value, mask)"
MERGE = "reshape(batch_size, query_len, self.embed_dim)"
SELF = "attended, self_weights = self.self_attention(x, mask=self_mask, return_attention=True)  # (B, T, D)"
NORM1 = "x = self.norm1(x + self.dropout(attended))"  # also in the provided EncoderBlock: edit with NORM1_CROSS
NORM1_CROSS = NORM1 + "\n        attended, cross_weights"
CROSS = """        attended, cross_weights = self.cross_attention(
            x, context=memory, mask=memory_mask, return_attention=True)  # (B, T, D), (B, H, T, S)
        x = self.norm2(x + self.dropout(attended))
"""
FFN = "x = self.norm3(x + self.dropout(self.feedforward(x)))"
NORMS = "self.norm1, self.norm2, self.norm3 = LayerNorm(embed_dim), LayerNorm(embed_dim), LayerNorm(embed_dim)"

# Task 6: greedy_decode
STOP = "if finished.all():\n                    break"
RETURN = "return tokens[:, 1:]"
PAD_AFTER_EOS = "next_token.masked_fill(finished, model.pad_id)"
RESTORE = "model.train(mode_before)"
LOOP = "for _ in range(max_len):"
DECODE_STEP = "model.decode(tokens, memory, source)"
ARGMAX_STEP = "model.decode(tokens, memory, source)[:, -1].argmax(dim=-1)"
SAMPLED = SAMPLES.partition(":")[0]  # the rest names the row and token the draw gave
DECODE_START = "    mode_before = model.training\n"
IMPORT_IDS = "    from course_lib.seq2seq import BOS_ID, EOS_ID  # what the notebook's first cell imports\n"
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
SCALED_BY_D = _model.EMBEDDING_SCALED_BY_D
MODEL_MUTANTS = [
    Mutant(5, "decoder sees the next token", ((SELF_MASK, "self_mask = torch.ones(target_input.size(1), "
                                               "target_input.size(1), dtype=torch.bool).tril(1)"),),
           _model.DECODER_SEES_NEXT),
    Mutant(5, "no causal mask in decode", ((SELF_MASK, "self_mask = None"),),
           _model.NO_CAUSAL_MASK),
    Mutant(5, "memory padding ignored in the cross-attention", ((MEMORY_MASK, "memory_mask = None"),), MEMORY_PADDING),
    Mutant(5, "source padding ignored in the encoder", ((ENCODER_CALL, "x, weights = block(x, return_attention=True)"),),
           ENCODER_PADDING),
    Mutant(5, "embedding not scaled", ((SCALE, ""),),
           _model.EMBEDDING_NOT_SCALED),
    Mutant(5, "embedding scaled by embed_dim", ((SCALE, " * self.embed_dim"),), SCALED_BY_D),
    Mutant(5, "embedding scaled twice", ((SCALE, " * math.sqrt(self.embed_dim) * math.sqrt(self.embed_dim)"),),
           SCALED_BY_D),
    Mutant(5, "embedding divided by sqrt(embed_dim)", ((SCALE, " / math.sqrt(self.embed_dim)"),),
           _model.EMBEDDING_DIVIDED),
    Mutant(5, "target embedding not scaled", ((DECODE_EMBED, DECODE_EMBED.replace(SCALE, "")),),
           _model.TARGET_NOT_SCALED),
    Mutant(5, "separate target embedding",
           ((EMBEDDING, EMBEDDING + "\n        self.target_embedding = nn.Embedding(vocab_size, embed_dim, "
                                    "padding_idx=pad_id)"),
            (DECODE_EMBED, DECODE_EMBED.replace("self.embedding(", "self.target_embedding("))), SEPARATE_EMBEDDINGS.format(count=2)),
    Mutant(5, "no padding_idx", ((EMBEDDING, "self.embedding = nn.Embedding(vocab_size, embed_dim)"),), "padding_idx"),
    Mutant(5, "positional encoding missing on the target",
           ((DECODE_EMBED, "x = self.embedding(target_input) * math.sqrt(self.embed_dim)"),),
           _model.NO_TARGET_POSITIONS),
    Mutant(5, "positional encoding missing on the source",
           ((ENCODE_EMBED, "x = self.embedding(source) * math.sqrt(self.embed_dim)"),),
           _model.NO_SOURCE_POSITIONS),
    Mutant(5, "positional encoding before the scaling",
           ((DECODE_EMBED, "x = self.positional_encoding(self.embedding(target_input)) * math.sqrt(self.embed_dim)"),
            (ENCODE_EMBED, "x = self.positional_encoding(self.embedding(source)) * math.sqrt(self.embed_dim)")),
           _model.POSITIONS_SCALED),
    Mutant(5, "output layer missing", ((OUTPUT, "return x"),), NO_OUTPUT_LAYER[-60:]),
    Mutant(5, "output layer applied to the memory", ((OUTPUT, "return self.output(memory)"),), OUTPUT_ON_MEMORY[-60:]),
    Mutant(5, "pad_id not stored", (("self.pad_id, self.embed_dim = pad_id, embed_dim", "self.embed_dim = embed_dim"),),
           PAD_ID_NOT_STORED.format(pad_id=0, found="nothing")),
    Mutant(5, "pad id 0 hard-coded in the masks", ((MEMORY_MASK, "memory_mask = padding_mask(source, 0)"),
                                                   ("mask = padding_mask(source, self.pad_id)  # (B, 1, 1, S)",
                                                    "mask = padding_mask(source, 0)  # (B, 1, 1, S)")),
           PAD_ID_HARD_CODED.format(found=0, pad_id=3)),
    Mutant(5, "memory_mask from target_input", ((MEMORY_MASK, "memory_mask = padding_mask(target_input, self.pad_id)"),),
           MEMORY_MASK_FROM_TARGET),
    Mutant(5, "decoder blocks given x as the memory", (("block(x, memory, self_mask, memory_mask,",
                                                        "block(x, x, self_mask, memory_mask,"),), BLOCK_MEMORY_IS_X),
    Mutant(5, "activation not passed on", ((SIZES, SIZES.replace("activation,", "nn.ReLU,")),),
           _model.ACTIVATION_NOT_PASSED),
    Mutant(5, "dropout not passed on", ((SIZES, SIZES.replace(", dropout)", ")")),), "pass `dropout` on"),
    Mutant(5, "dropout given to the decoder blocks only",
           (("EncoderBlock(*sizes) for", "EncoderBlock(*sizes[:-1]) for"),),
           DROPOUT_MISSING.format(method="encode", stack="encoder")),
    Mutant(5, "dropout given to the encoder blocks only",
           (("DecoderBlock(*sizes) for", "DecoderBlock(*sizes[:-1]) for"),),
           DROPOUT_MISSING.format(method="decode", stack="decoder")),
    Mutant(5, "one decoder block for every layer",
           (("nn.ModuleList(DecoderBlock(*sizes) for _ in range(num_decoder_layers))",
             "nn.ModuleList([DecoderBlock(*sizes)] * num_decoder_layers)"),), "is the same module as"),
]

MUTANTS = [
    # ---- Tasks 1-4 ----
    # Task 1: LayerNorm
    Mutant(1, "unbiased variance", ((VARIANCE, "var = x.var(dim=-1, keepdim=True)"),), _norm.UNBIASED),
    Mutant(1, "eps outside the square root", ((NORMALISE, NORMALISE.replace(
        "torch.sqrt(var + self.eps)", "(torch.sqrt(var) + self.eps)")),), _norm.EPS_OUTSIDE),
    Mutant(1, "normalised over the wrong axis", ((MEAN, "mean = x.mean(dim=0, keepdim=True)"),
                                                 (VARIANCE, "var = (centered * centered).mean(dim=0, keepdim=True)")),
           _norm.WRONG_AXIS),
    Mutant(1, "normalised over every axis but the batch", ((MEAN, "mean = x.mean(dim=tuple(range(1, x.dim())), "
                                                                  "keepdim=True)"),
                                                           (VARIANCE, "var = (centered * centered).mean(dim=tuple("
                                                                      "range(1, x.dim())), keepdim=True)")),
           _norm.AXES_BUT_BATCH),
    Mutant(1, "mean detached", ((MEAN, "mean = x.mean(dim=-1, keepdim=True).detach()"),), _norm.MEAN_DETACHED),
    Mutant(1, "variance detached", ((VARIANCE, VARIANCE.replace(".mean(dim=-1, keepdim=True)",
                                                                ".mean(dim=-1, keepdim=True).detach()")),),
           _norm.VARIANCE_DETACHED),
    Mutant(1, "weight and bias not applied", ((NORMALISE, "return centered / torch.sqrt(var + self.eps)"),),
           _norm.AFFINE_NOT_APPLIED),
    Mutant(1, "weight and bias plain tensors", (("self.weight = nn.Parameter(torch.ones(embed_dim))",
                                                 "self.weight = torch.ones(embed_dim)"),
                                                ("self.bias = nn.Parameter(torch.zeros(embed_dim))",
                                                 "self.bias = torch.zeros(embed_dim)")), _norm.NOT_PARAMETER),
    Mutant(1, "eps argument ignored", ((NORMALISE, NORMALISE.replace("self.eps", "1e-5")),),
           _norm.EPS_IGNORED),
    Mutant(1, "torch's layer norm called", ((NORMALISE, "return torch.nn.functional.layer_norm(x, x.shape[-1:], "
                                                        "self.weight, self.bias, self.eps)"),), _norm.BY_HAND),
    # Task 2: masks
    Mutant(2, "causal mask inverted", ((CAUSAL, CAUSAL.replace(".tril()", ".tril().logical_not()")),),
           _masks.CAUSAL_INVERTED),
    Mutant(2, "causal mask transposed", ((CAUSAL, CAUSAL.replace(".tril()", ".triu()")),), _masks.CAUSAL_TRANSPOSED),
    Mutant(2, "causal mask without the diagonal", ((CAUSAL, CAUSAL.replace(".tril()", ".tril(-1)")),),
           _masks.CAUSAL_NO_DIAGONAL),
    Mutant(2, "causal mask sees the next position", ((CAUSAL, CAUSAL.replace(".tril()", ".tril(1)")),),
           _masks.CAUSAL_SEES_NEXT),
    Mutant(2, "padding mask on the queries", ((PADDING, "return (tokens != pad_id)[:, None, :, None]"),),
           _masks.PADDING_ON_QUERIES),
    Mutant(2, "padding mask of shape (B, L)", ((PADDING, "return tokens != pad_id"),), _masks.PADDING_NO_AXES),
    Mutant(2, "padding mask of shape (B, 1, L)", ((PADDING, "return (tokens != pad_id).unsqueeze(1)"),),
           _masks.PADDING_NO_AXES),
    Mutant(2, "padding mask inverted", ((PADDING, "return (tokens == pad_id)[:, None, None, :]"),),
           _masks.PADDING_INVERTED),
    Mutant(2, "padding mask with pad id 0", ((PADDING, "return (tokens != 0)[:, None, None, :]"),),
           _masks.PAD_ID_IGNORED),
    # Task 3: MultiheadAttention
    Mutant(3, "keys and values from x", ((KEY, "key = self.k_proj(x).view("), (VALUE, "value = self.v_proj(x).view(")),
           _attention.KV_FROM_X),
    Mutant(3, "queries from the context", ((QUERY, "query = self.q_proj(context).view("),), _attention.Q_FROM_CONTEXT),
    Mutant(3, "queries from the context, keys and values from x",
           ((QUERY, "query = self.q_proj(context).view("), (KEY, "key = self.k_proj(x).view("),
            (VALUE, "value = self.v_proj(x).view(")), _attention.SWAPPED),
    Mutant(3, "heads merged with the key length", ((MERGE, "reshape(batch_size, key_len, self.embed_dim)"),),
           _attention.MERGE_KEY_LEN),
    Mutant(3, "mask not broadcast over the heads", ((MHA_CALL, MHA_CALL.replace(
        "value, mask)", "value, mask if mask is None or mask.dim() < 4 else mask[:, 0])")),), _attention.MASK_HEADS),
    Mutant(3, "no output projection", (("outputs = self.o_proj(heads.transpose(1, 2)",
                                         "outputs = (heads.transpose(1, 2)"),)),
    Mutant(3, "context ignored", (("context = x if context is None else context", "context = x"),),
           _attention.KV_FROM_X),
    # Task 4: DecoderBlock
    Mutant(4, "pre-norm", ((SELF, SELF.replace("self.self_attention(x,", "self.self_attention(self.norm1(x),")),
                           (NORM1_CROSS, NORM1_CROSS.replace(NORM1, "x = x + self.dropout(attended)")),
                           (CROSS, CROSS.replace("self.cross_attention(\n            x,",
                                                 "self.cross_attention(\n            self.norm2(x),")
                            .replace("x = self.norm2(x + self.dropout(attended))", "x = x + self.dropout(attended)")),
                           (FFN, "x = x + self.dropout(self.feedforward(self.norm3(x)))")), _decoder.PRE_NORM),
    Mutant(4, "cross-attention before self-attention",
           ((SELF + "\n        " + NORM1 + "\n" + CROSS,
             CROSS.replace("x = self.norm2", "x = self.norm1").lstrip() + "        " + SELF
             + "\n        " + NORM1.replace("norm1", "norm2") + "\n"),), _decoder.CROSS_FIRST),
    Mutant(4, "memory_mask not passed", (("context=memory, mask=memory_mask,", "context=memory,"),),
           _decoder.MEMORY_MASK_IGNORED),
    Mutant(4, "self_mask not passed", ((SELF, SELF.replace("mask=self_mask, ", "")),), _decoder.SELF_MASK_IGNORED),
    Mutant(4, "one LayerNorm reused", (("x = self.norm2(x + self.dropout(attended))",
                                        "x = self.norm1(x + self.dropout(attended))"),
                                       (FFN, FFN.replace("norm3", "norm1"))), _decoder.ONE_NORM),
    Mutant(4, "one LayerNorm module for all three", ((NORMS, "self.norm1 = self.norm2 = self.norm3 = "
                                                      "LayerNorm(embed_dim)"),), _decoder.SHARED),
    Mutant(4, "one attention for self and cross", (("self.cross_attention = MultiheadAttention(embed_dim, num_heads)",
                                                    "self.cross_attention = self.self_attention"),), _decoder.SHARED),
    Mutant(4, "dropout active in eval mode", ((NORM1_CROSS, NORM1_CROSS.replace(
        NORM1, "x = self.norm1(x + F.dropout(attended, self.dropout.p, training=True))")),), _decoder.DROPOUT_IN_EVAL),
    Mutant(4, "dropout on the residual sum", ((NORM1_CROSS, NORM1_CROSS.replace(
        NORM1, "x = self.norm1(self.dropout(x + attended))")),
                                              (FFN, "x = self.norm3(self.dropout(x + self.feedforward(x)))")),
           _decoder.DROPOUT_ON_RESIDUAL),
    Mutant(4, "no dropout on the feed-forward output", ((FFN, "x = self.norm3(x + self.feedforward(x))"),),
           _decoder.NO_SUBLAYER_DROPOUT.format(name="feedforward", formula=_decoder.SUBLAYER_FORMULAS["feedforward"])),
    Mutant(4, "no dropout on the self-attention output", ((NORM1_CROSS, NORM1_CROSS.replace(
        NORM1, "x = self.norm1(x + attended)")),), _decoder.NO_SUBLAYER_DROPOUT.format(
            name="self_attention", formula=_decoder.SUBLAYER_FORMULAS["self_attention"])),
    Mutant(4, "cross-attention queries from the memory", ((CROSS, CROSS.replace(
        "            x, context=memory,", "            memory, context=x,")),), _decoder.CROSS_QUERIES_FROM_MEMORY),
    Mutant(4, "cross-attention without context", ((CROSS, CROSS.replace("x, context=memory,", "x,")),),
           _decoder.CROSS_NO_CONTEXT),
    Mutant(4, "self_mask in the cross-attention", ((CROSS, CROSS.replace("mask=memory_mask", "mask=self_mask")),),
           _decoder.CROSS_GETS_SELF_MASK),
    Mutant(4, "memory_mask in the self-attention", ((SELF, SELF.replace("mask=self_mask", "mask=memory_mask")),),
           _decoder.SELF_GETS_MEMORY_MASK),
    Mutant(4, "no residual around cross-attention", (("x = self.norm2(x + self.dropout(attended))",
                                                      "x = self.norm2(self.dropout(attended))"),),
           _decoder.RESIDUAL_MISSING.format(name="cross_attention")),

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
    Mutant(6, "EOS_ID constant instead of eos_id", ((DECODE_START, IMPORT_IDS + DECODE_START),
                                                     ("finished |= next_token == eos_id",
                                                      "finished |= next_token == EOS_ID")),
           EOS_CONSTANT.format(course=2, eos_id=6)),
    Mutant(6, "BOS_ID constant instead of bos_id", ((DECODE_START, IMPORT_IDS + DECODE_START),
                                                     ("bos_id, dtype=torch.long", "BOS_ID, dtype=torch.long")),
           BOS_CONSTANT.format(course=1, bos_id=5)),
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
    Mutant(6, "samples with torch.multinomial", ((ARGMAX_STEP, "torch.multinomial(torch.softmax(model.decode(tokens, "
                                                              "memory, source)[:, -1], dim=-1), 1).squeeze(1)"),),
           SAMPLED),
    Mutant(6, "samples with Categorical", ((ARGMAX_STEP, "torch.distributions.Categorical(logits=model.decode("
                                                        "tokens, memory, source)[:, -1]).sample()"),), SAMPLED),
]
