"""How the seq2seq assignment's fixtures are built: fixed random inputs and weights, run through the reference.

Read by tools/make_fixtures.py (`make fixtures`), which runs each builder on the reference namespace and on every
known mistake (course/seq2seq/mistakes.py). Instructor-side only: the fixtures ship, these builders do not.
"""
import torch
import torch.nn as nn

from checkers.seq2seq._scripted import ScriptedModel
from checkers.seq2seq._weights import attention_slots, decoder_block_slots, layer_norm_slots, seq2seq_slots
from course.transformer.fixtures import randomize, weights

# Fixture entries holding outputs; a mistake's differing output is stored beside them under "mistakes".
OUTPUT_KEYS = ("outputs", "causal", "padding", "attention", "self_attention", "cross_attention", "memory", "logits",
               "tokens")

# ---- Tasks 1-4: LayerNorm, masks, attention with a context, decoder block ----

def layer_norm_fixture(ref, generator):
    """Task 1: LayerNorm with random weight and bias on rows of very different scales (some with a variance near
    eps, where eps outside the square root shows), on 3-D and 2-D inputs, and with another eps."""
    embed_dim = 6
    x = torch.randn(2, 4, embed_dim, generator=generator) * torch.tensor([1e-3, 1.0, 10.0, 3e-3]).view(1, 4, 1)
    x = x + torch.randn(2, 4, 1, generator=generator)  # rows with a nonzero mean
    rows = torch.randn(5, embed_dim, generator=generator) * 2
    cases = {}
    for name, inputs, eps in (("3-D", x, 1e-5), ("2-D", rows, 1e-5), ("eps=0.1", x, 0.1)):
        norm = randomize(ref["LayerNorm"](embed_dim, eps=eps), generator)
        cases[name] = dict(x=inputs, eps=eps, weights=weights(layer_norm_slots(norm)), outputs=norm(inputs))
    return dict(embed_dim=embed_dim, cases=cases)


def masks_fixture(ref, generator):
    """Task 2: causal masks of a few lengths, padding masks of token batches with two pad ids."""
    causal = {seq_len: ref["causal_mask"](seq_len) for seq_len in (1, 2, 5)}
    tokens = torch.randint(3, 13, (3, 6), generator=generator)
    tokens[0, 4:], tokens[1, 2:] = 0, 0  # padded at the end; row 2 has no padding
    other = torch.where(tokens == 0, 7, torch.where(tokens == 7, 8, tokens))  # the same batch with pad id 7
    padding = {pad_id: dict(tokens=batch, padding=ref["padding_mask"](batch, pad_id))
               for pad_id, batch in ((0, tokens), (7, other))}
    return dict(causal={seq_len: dict(seq_len=seq_len, causal=mask) for seq_len, mask in causal.items()},
                padding=padding)


def multihead_fixture(ref, generator):
    """Task 3: MultiheadAttention as self-attention and as cross-attention (context of another length, and of the
    same length), with each mask shape the API names."""
    batch_size, query_len, key_len, embed_dim = 2, 3, 5, 8
    x = torch.randn(batch_size, query_len, embed_dim, generator=generator)
    context = torch.randn(batch_size, key_len, embed_dim, generator=generator)
    same = torch.randn(batch_size, query_len, embed_dim, generator=generator)  # a context as long as x
    tokens = torch.tensor([[3, 4, 5, 0, 0], [6, 7, 8, 9, 0]])
    pairwise = torch.rand(batch_size, 1, query_len, key_len, generator=generator) < 0.6
    pairwise[..., 0] = True  # every query may attend some key
    inputs = {
        "self-attention": dict(x=x),
        "self-attention, causal (L, L) mask": dict(x=x, mask=ref["causal_mask"](query_len)),
        "cross-attention": dict(x=x, context=context),
        "cross-attention, context as long as x": dict(x=x, context=same),
        "cross-attention, padding (B, 1, 1, L_k) mask": dict(x=x, context=context,
                                                             mask=ref["padding_mask"](tokens, 0)),
        "cross-attention, (B, 1, L_q, L_k) mask": dict(x=x, context=context, mask=pairwise),
    }
    cases = {}
    for num_heads in (2, 4):
        layer = randomize(ref["MultiheadAttention"](embed_dim, num_heads), generator)
        runs = {}
        for name, kwargs in inputs.items():
            try:
                outputs, attention = layer(**kwargs, return_attention=True)
            except RuntimeError:  # only a known mistake fails here (say, with L_k != L_q): its other runs still count
                continue
            runs[name] = dict(kwargs, outputs=outputs, attention=attention)
        cases[num_heads] = dict(weights=weights(attention_slots(layer)), runs=runs)
    return dict(embed_dim=embed_dim, cases=cases)


def decoder_fixture(ref, generator):
    """Task 4: DecoderBlock with ReLU and GELU, with and without its two masks."""
    embed_dim, num_heads, feedforward_dim, target_len, source_len = 8, 2, 16, 4, 5
    x = torch.randn(2, target_len, embed_dim, generator=generator)
    memory = torch.randn(2, source_len, embed_dim, generator=generator)
    source = torch.tensor([[3, 4, 5, 0, 0], [6, 7, 8, 9, 10]])
    masks = dict(self_mask=ref["causal_mask"](target_len), memory_mask=ref["padding_mask"](source, 0))
    cases = {}
    for activation in (nn.ReLU, nn.GELU):
        block = randomize(ref["DecoderBlock"](embed_dim, num_heads, feedforward_dim, activation), generator).eval()
        masked, self_attention, cross_attention = block(x, memory, **masks, return_attention=True)
        cases[activation.__name__] = dict(weights=weights(decoder_block_slots(block)), outputs=masked,
                                          self_attention=self_attention, cross_attention=cross_attention,
                                          unmasked=dict(outputs=block(x, memory)))
    return dict(embed_dim=embed_dim, num_heads=num_heads, feedforward_dim=feedforward_dim, x=x, memory=memory,
                **masks, cases=cases)


# ---- Tasks 5-6: the model, greedy decoding ----

def padded_tokens(lengths, seq_len, vocab_size, pad_id, generator, first=None):
    """(B, seq_len) random non-PAD tokens with the given lengths, pad_id after each end; `first` put at position 0."""
    tokens = torch.randint(vocab_size - 1, (len(lengths), seq_len), generator=generator)  # (B, L)
    tokens = tokens + (tokens >= pad_id).long()  # every id but pad_id
    if first is not None:
        tokens[:, 0] = first
    return tokens.masked_fill(torch.arange(seq_len) >= torch.tensor(lengths)[:, None], pad_id)  # (B, L)


def model_case(ref, generator, config, activation):
    """The reference model with random weights on a padded batch: memory, logits and every attention map."""
    model = randomize(ref["Seq2SeqTransformer"](**config, activation=getattr(nn, activation)), generator).eval()
    source = padded_tokens([5, 3, 1], 5, config["vocab_size"], config["pad_id"], generator)  # (B, S)
    # Decoder inputs without PAD: the logits at a PAD input are ignored by the loss and never used by greedy decoding,
    # so a decoder that also masks padded target keys (as nn.Transformer's tgt_key_padding_mask) is right too.
    target_input = padded_tokens([4, 4, 4], 4, config["vocab_size"], config["pad_id"], generator, first=1)  # (B, T)
    memory = model.encode(source)
    return dict(config=config, activation=activation, weights=weights(seq2seq_slots(model)),
                source=source, target_input=target_input, memory=memory,
                logits=model.decode(target_input, memory, source),
                attention=model.forward_attention(source, target_input))


def model_fixture(ref, generator):
    """Task 5: Seq2SeqTransformer with the defaults (PAD 0, ReLU), and with PAD 3 and GELU."""
    sizes = dict(vocab_size=11, embed_dim=8, num_heads=2, feedforward_dim=16, num_encoder_layers=2,
                 num_decoder_layers=2, max_len=32, dropout=0.0)
    return dict(cases={
        "defaults": model_case(ref, generator, dict(sizes, pad_id=0), "ReLU"),
        "pad_id 3, GELU": model_case(ref, generator, dict(sizes, pad_id=3), "GELU"),
    })


def scripted_source(lengths, symbols, pad_id, generator, seq_len):
    """(B, seq_len) rows of random symbols with the given lengths, pad_id after each end."""
    symbols = torch.tensor(symbols)
    picks = symbols[torch.randint(len(symbols), (len(lengths), seq_len), generator=generator)]  # (B, S)
    return picks.masked_fill(torch.arange(seq_len) >= torch.tensor(lengths)[:, None], pad_id)  # (B, S)


def decoding_case(ref, source, max_len, ids, training):
    """greedy_decode on a scripted model: its tokens, the decode calls it took, and where the first row finishes."""
    pad_id, bos_id, eos_id = ids
    model = ScriptedModel(pad_id, bos_id, eos_id).train(training)
    tokens = ref["greedy_decode"](model, source, max_len, bos_id, eos_id)
    first_finished = min(min(len(model.script(row)) for row in source), max_len)
    return dict(source=source, max_len=max_len, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id, training=training,
                tokens=tokens, steps=len(model.calls), first_finished=first_finished)


def decoding_fixture(ref, generator):
    """Task 6: greedy_decode on scripted models (scripts end at different steps; course ids and others)."""
    course_ids, course_symbols = (0, 1, 2), list(range(3, 13))
    other_ids, other_symbols = (4, 5, 6), [0, 1, 2, 3, 7, 8, 9, 10, 11, 12]
    source = scripted_source([3, 1, 5, 2], course_symbols, 0, generator, 6)
    cases = {
        "all finish": decoding_case(ref, source, 8, course_ids, False),
        "cut at max_len": decoding_case(ref, source, 4, course_ids, False),
        "other token ids, train mode": decoding_case(
            ref, scripted_source([2, 4, 1], other_symbols, 4, generator, 5), 7, other_ids, True),
        "max_len = script length": decoding_case(
            ref, scripted_source([4], course_symbols, 0, generator, 4), 5, course_ids, True),
    }
    return dict(cases=cases)

BUILDERS = {1: layer_norm_fixture, 2: masks_fixture, 3: multihead_fixture, 4: decoder_fixture, 5: model_fixture,
            6: decoding_fixture}  # {task: builder(reference namespace, generator) -> fixture}
