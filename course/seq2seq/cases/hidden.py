"""Hidden cases of Tasks 1-6: other shapes, eps, pad ids, head counts, activations and decoding scripts.

A notebook that special-cases the visible inputs (or is right only for them) fails these. Every input obeys the
task's stated contract (each query may attend to at least one key, a source has at least one real token), so a
correct answer in any formulation passes. Weights are random per role, drawn with the shapes of the reference's
modules; an embedding's padding row is zero, as nn.Embedding(padding_idx=...) makes it.
"""
import torch

from course_lib.seq2seq import BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE

from grading.cases.parts import called, counted, helper, module, randn, random_mask, random_weights, recipe

SEED = 737373  # never a seed of the notebook, the checkers or make_fixtures
TOLERANCE = dict(atol=1e-5, rtol=1e-5)
WEIGHTS = "checkers.seq2seq._weights"
ATTENTION, LAYER_NORM, DECODER_BLOCK, SEQ2SEQ = (
    f"{WEIGHTS}:{name}" for name in ("attention_slots", "layer_norm_slots", "decoder_block_slots", "seq2seq_slots"))


def natural(weights, generator):
    """Weights with every LayerNorm's scale near 1 and shift near 0, as training keeps them: a stack of blocks whose
    norms scale by random numbers of either sign forgets its input, so its outputs would hardly tell mistakes apart."""
    norms = {role: value for role, value in weights.items() if ".norm" in role or role.startswith("norm")}
    drawn = {role: (1.0 if role.endswith("weight") else 0.0) + randn(generator, *value.shape, scale=0.2)
             for role, value in norms.items()}
    return {**weights, **drawn}


def layer_norm_cases(reference, generator):
    """Task 1: odd widths, 1-D to 4-D inputs, other eps, a large offset, float32, gradients."""
    cls, cases = reference["LayerNorm"], []
    for embed_dim, eps, shape, offset, scale in ((7, 1e-5, (3, 5), 0.0, 1.0), (7, 1e-5, (2, 3, 4), 0.0, 3.0),
                                                 (5, 0.1, (4, 6), 0.0, 0.2), (9, 1e-5, (6,), 1e4, 1.0),
                                                 (3, 1e-2, (), 0.5, 0.05)):
        weights = random_weights(cls, "LayerNorm", LAYER_NORM, generator, embed_dim=embed_dim, eps=eps)
        built = module("LayerNorm", LAYER_NORM, weights, embed_dim=embed_dim, eps=eps)
        x = randn(generator, *shape, embed_dim, scale=scale) + offset
        name = (f"hidden: width {embed_dim}, input {tuple(x.shape)}, eps={eps:g}"
                + (f", offset {offset:g}" * bool(offset)))
        cases.append(recipe(1, name, False, build=built, call=called(x), **TOLERANCE))
    cases.append(recipe(1, "hidden: gradients", False, build=built, grad=True, call=called(x), **TOLERANCE))
    fresh = module("LayerNorm", LAYER_NORM, None, embed_dim=embed_dim)  # no weights loaded: its own initial values
    cases.append(recipe(1, "hidden: a new LayerNorm starts as weight ones, bias zeros", False, build=fresh,
                        call=called(x), **TOLERANCE))
    native = module("LayerNorm", LAYER_NORM, weights, "float32", native=True, embed_dim=embed_dim, eps=eps)
    cases.append(recipe(1, "hidden: float32, module built under float32", False, build=native,
                        call=called(x.float()), atol=1e-4, rtol=1e-4))
    cases.append(recipe(1, "hidden: computed by hand", False, build=built, call=called(x), **TOLERANCE,
                        calls=counted("checkers.seq2seq.layer_norm:torch_norm_problem")))
    return cases


def mask_cases(reference, generator):
    """Task 2: causal masks of several sizes and device arguments; padding masks of other pad ids and batches."""
    cases = [recipe(2, f"hidden: causal_mask({size})", False, call=called(size)) for size in (1, 2, 9)]
    cases.append(recipe(2, "hidden: causal_mask(6, device='cpu')", False, call=called(6, device="cpu")))
    cases.append(recipe(2, "hidden: causal_mask(4, None)", False, call=called(4, None)))
    cases.append(recipe(2, "hidden: causal_mask(5, device='meta')", False, call=called(5, device="meta"),
                        compare="devices"))  # where the mask is made, as a GPU run needs: the check's cpu:0 probe
    for batch_size, length, pad_id in ((1, 1, 0), (3, 8, 0), (4, 6, 7), (2, 5, 12)):
        tokens = torch.randint(VOCAB_SIZE, (batch_size, length), generator=generator)
        tokens[0, -1] = pad_id  # at least one padded position, and the pad id may appear anywhere
        cases.append(recipe(2, f"hidden: padding_mask of {batch_size} x {length} tokens, pad_id {pad_id}", False,
                            obj=1, call=called(tokens, pad_id)))
    return cases


def attention_cases(reference, generator):
    """Task 3: 1, 3 and 6 heads, L_q != L_k, every mask shape, self-attention by default, gradients, float32."""
    cls, cases = reference["MultiheadAttention"], []
    for embed_dim, heads, batch, query_len, key_len in ((12, 3, 2, 5, 7), (6, 6, 3, 4, 2), (8, 1, 2, 3, 6)):
        weights = random_weights(cls, "MultiheadAttention", ATTENTION, generator, embed_dim=embed_dim,
                                 num_heads=heads)
        built = module("MultiheadAttention", ATTENTION, weights, embed_dim=embed_dim, num_heads=heads)
        x, context = randn(generator, batch, query_len, embed_dim), randn(generator, batch, key_len, embed_dim)
        masks = {"none": None, "(L_q, L_k)": random_mask(generator, query_len, key_len),
                 "(B, 1, L_q, L_k)": random_mask(generator, batch, 1, query_len, key_len),
                 "(B, 1, 1, L_k)": random_mask(generator, batch, 1, 1, key_len)}
        for name, mask in masks.items():
            extra = {} if mask is None else {"mask": mask}
            cases.append(recipe(3, f"hidden: {heads} heads, {query_len} queries over {key_len} keys, mask {name}",
                                False, build=built, call=called(x, context=context, return_attention=True, **extra),
                                **TOLERANCE))
        cases.append(recipe(3, f"hidden: {heads} heads, self-attention (context=None), causal mask", False,
                            build=built, call=called(x, mask=torch.ones(query_len, query_len, dtype=torch.bool).tril(),
                                                     return_attention=True), **TOLERANCE))
        cases.append(recipe(3, f"hidden: {heads} heads, gradients through x and context", False, build=built,
                            grad=True, call=called(x, context, masks["(B, 1, 1, L_k)"]), **TOLERANCE))
    float32 = module("MultiheadAttention", ATTENTION, weights, "float32", embed_dim=embed_dim, num_heads=heads)
    cases.append(recipe(3, "hidden: float32", False, build=float32, call=called(x.float(), context.float()),
                        atol=1e-4, rtol=1e-4))
    return cases


def decoder_cases(reference, generator):
    """Task 4: 3 heads, nn.Tanh and nn.GELU, with and without masks, dropout in eval mode, gradients."""
    cls, cases = reference["DecoderBlock"], []
    sizes = dict(embed_dim=12, num_heads=3, feedforward_dim=20)
    x, memory = randn(generator, 3, 6, 12), randn(generator, 3, 4, 12)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    memory_mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)[:, None, None, :]
    for activation in ("nn.Tanh", "nn.GELU"):
        weights = natural(random_weights(cls, "DecoderBlock", DECODER_BLOCK, generator, activation=activation,
                                         **sizes), generator)
        built = module("DecoderBlock", DECODER_BLOCK, weights, activation=activation, **sizes)
        cases += [
            recipe(4, f"hidden: {activation}, no masks", False, build=built,
                   call=called(x, memory, return_attention=True), **TOLERANCE),
            recipe(4, f"hidden: {activation}, causal self-mask only", False, build=built,
                   call=called(x, memory, self_mask=causal, return_attention=True), **TOLERANCE),
            recipe(4, f"hidden: {activation}, memory padding mask only", False, build=built,
                   call=called(x, memory, memory_mask=memory_mask, return_attention=True), **TOLERANCE),
            recipe(4, f"hidden: {activation}, both masks, outputs only", False, build=built,
                   call=called(x, memory, causal, memory_mask), **TOLERANCE),
            recipe(4, f"hidden: {activation}, gradients", False, build=built, grad=True,
                   call=called(x, memory, causal, memory_mask), **TOLERANCE)]
    dropout = module("DecoderBlock", DECODER_BLOCK, weights, activation="nn.GELU", dropout=0.4, **sizes)
    cases.append(recipe(4, "hidden: dropout=0.4 in eval mode", False, build=dropout,
                        call=called(x, memory, causal, memory_mask), **TOLERANCE))
    cases.append(recipe(4, "hidden: dropout=0.4 in train mode", False, build=dict(dropout, mode="train"),
                        compare="differ", call=called(x, memory, causal, memory_mask, repeat=2)))
    # Every sub-layer outputs zeros, so dropout on them changes nothing and the output is deterministic, unless
    # dropout acts on the residual sum instead.
    silent = dict(weights, **{role: torch.zeros_like(value) for role, value in weights.items()
                              if role.startswith(("self_attention.o_proj.", "cross_attention.o_proj.",
                                                  "feedforward.out."))})
    silenced = module("DecoderBlock", DECODER_BLOCK, silent, activation="nn.GELU", dropout=0.5, mode="train", **sizes)
    cases.append(recipe(4, "hidden: dropout=0.5 in train mode, sub-layers silenced", False, build=silenced,
                        call=called(x, memory, causal, memory_mask), **TOLERANCE))
    # One sub-layer at a time, the other two silenced: its output must get dropout (or dropout inside it).
    outputs = {"self-attention": "self_attention.o_proj.", "cross-attention": "cross_attention.o_proj.",
               "feed-forward": "feedforward.out."}
    for kept, prefix in outputs.items():
        alone = dict(weights, **{role: torch.zeros_like(value) for role, value in weights.items()
                                 if role.startswith(tuple(outputs.values())) and not role.startswith(prefix)})
        cases.append(recipe(4, f"hidden: dropout=0.5 in train mode, {kept} alone", False, compare="differ",
                            build=module("DecoderBlock", DECODER_BLOCK, alone, activation="nn.GELU", dropout=0.5,
                                         mode="train", **sizes),
                            call=called(x, memory, causal, memory_mask, repeat=2)))
    return cases


def padded(generator, batch_size, length, vocab_size, pad_id, lengths):
    """(B, L) tokens of vocab_size ids other than pad_id, padded with pad_id after each row's length."""
    tokens = torch.randint(vocab_size - 1, (batch_size, length), generator=generator)
    tokens = tokens + (tokens >= pad_id).long()  # every id but pad_id
    return tokens.masked_fill(torch.arange(length) >= torch.tensor(lengths)[:, None], pad_id)  # (B, L)


def model_cases(reference, generator):
    """Task 5: other sizes, more decoder than encoder layers, pad_id 4, padded batches, every method, gradients."""
    cls = reference["Seq2SeqTransformer"]
    config = dict(vocab_size=11, embed_dim=12, num_heads=3, feedforward_dim=24, num_encoder_layers=1,
                  num_decoder_layers=3, max_len=40, activation="nn.GELU", pad_id=4)
    weights = natural(random_weights(cls, "Seq2SeqTransformer", SEQ2SEQ, generator, scale=0.3, **config), generator)
    weights = {role: value.index_fill(0, torch.tensor([config["pad_id"]]), 0.0) if role.startswith("embedding")
               else value for role, value in weights.items()}  # the padding row, zero as nn.Embedding makes it
    built = module("Seq2SeqTransformer", SEQ2SEQ, weights, **config)
    source = padded(generator, 3, 7, 11, 4, [7, 4, 1])  # (B, S)
    # (B, T) decoder inputs without PAD: the logits at a PAD input are ignored by the loss and never used by greedy
    # decoding, so a decoder that also masks padded target keys is right too; the sources stay padded.
    target = padded(generator, 3, 5, 11, 4, [5, 5, 5])
    full_source = padded(generator, 2, 6, 11, 4, [6, 6])
    memory = randn(generator, 3, 7, 12)
    dropout = module("Seq2SeqTransformer", SEQ2SEQ, weights, mode="train", **dict(config, dropout=0.5))
    return [
        recipe(5, "hidden: logits, 1 encoder and 3 decoder layers, pad_id 4, padded batch", False, build=built,
               call=called(source, target), **TOLERANCE),
        recipe(5, "hidden: logits of a batch of one", False, build=built, call=called(source[1:2], target[1:2]),
               **TOLERANCE),
        recipe(5, "hidden: forward_attention, padded batch", False, build=built,
               call=called(source, target, method="forward_attention"), **TOLERANCE),
        recipe(5, "hidden: encode of unpadded sources", False, build=built,
               call=called(full_source, method="encode"), **TOLERANCE),
        recipe(5, "hidden: decode with a given memory and padded source", False, build=built,
               call=called(target, memory, source, method="decode"), **TOLERANCE),
        recipe(5, "hidden: gradients", False, build=built, grad=True, call=called(source, target), **TOLERANCE),
        # The memory at PAD positions depends on the PAD embedding, whose row padding_idx keeps without a gradient.
        recipe(5, "hidden: gradients through encode of padded sources", False, build=built, grad=True,
               call=called(source, method="encode"), **TOLERANCE),
        recipe(5, "hidden: dropout=0.5 in train mode", False, compare="differ", build=dropout,
               call=called(source, target, repeat=2)),
        # Each stack on its own: dropout given to the decoder blocks only (or the encoder's only) shows here.
        recipe(5, "hidden: dropout=0.5 in train mode, encode", False, compare="differ", build=dropout,
               call=called(source, method="encode", repeat=2)),
        recipe(5, "hidden: dropout=0.5 in train mode, decode with a given memory", False, compare="differ",
               build=dropout, call=called(target, memory, source, method="decode", repeat=2)),
    ]


def scripted(ids, mode="eval"):
    """A model for greedy_decode whose next token is known: the source reversed, then EOS (checkers' ScriptedModel)."""
    pad_id, bos_id, eos_id = ids
    return helper("checkers.seq2seq._scripted:ScriptedModel", "checkers.seq2seq._scripted:observed", mode,
                  pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)


def decoding_cases(reference, generator):
    """Task 6: EOS at different steps, the max_len cut-off, a batch of one, train mode, other token ids."""
    course, other = (PAD_ID, BOS_ID, EOS_ID), (7, 3, 11)

    def source(lengths, ids, seq_len):
        symbols = torch.tensor([token for token in range(VOCAB_SIZE) if token not in ids])
        picks = symbols[torch.randint(len(symbols), (len(lengths), seq_len), generator=generator)]  # (B, S)
        return picks.masked_fill(torch.arange(seq_len) >= torch.tensor(lengths)[:, None], ids[0])  # (B, S)

    staggered = source([2, 6, 4, 1, 3], course, 7)  # EOS at steps 3, 7, 5, 2, 4
    cases = [
        ("EOS at steps 3, 7, 5, 2 and 4, max_len 10", scripted(course), staggered, 10, course),
        ("cut off at max_len 5 before two sequences end", scripted(course), staggered, 5, course),
        ("max_len 1", scripted(course), staggered, 1, course),
        ("a batch of one", scripted(course), staggered[3:4], 6, course),
        ("model in train mode", scripted(course, "train"), staggered, 9, course),
        ("pad_id 7, BOS 3, EOS 11, train mode", scripted(other, "train"), source([3, 1, 5], other, 6), 8, other),
        ("pad_id 7, BOS 3, EOS 11, cut off", scripted(other), source([4, 2], other, 5), 3, other),
    ]
    return [recipe(6, f"hidden: {name}", False, call=called(model, tokens, max_len, ids[1], ids[2]))
            for name, model, tokens, max_len, ids in cases]


HIDDEN = {1: layer_norm_cases, 2: mask_cases, 3: attention_cases, 4: decoder_cases, 5: model_cases,
          6: decoding_cases}


def hidden_cases(task, reference):
    """The hidden cases of one task, drawn from a seed of their own."""
    generator = torch.Generator().manual_seed(SEED + task)
    return HIDDEN[task](reference, generator)
