"""How the transformer assignment's fixtures are built: fixed random inputs and weights, run through the reference.

Read by tools/make_fixtures.py (`make fixtures`), which runs each builder on the reference namespace and on every
known mistake (course/transformer/mistakes.py). Instructor-side only: the fixtures ship, these builders do not.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from checkers.transformer._roles import (attention_slots, block_slots, classifier_slots, linformer_attention_slots,
                                         linformer_block_slots, linformer_classifier_slots)

# Fixture entries holding outputs; a mistake's differing output is stored beside them under "mistakes".
OUTPUT_KEYS = ("res", "attention", "outputs", "masked_outputs", "logits", "rows", "table")


def randomize(module, generator, scale=0.5):
    """Give every parameter (LayerNorm's included) distinct random values, so swapped or reused weights show."""
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * scale)
    return module


def weights(slots):
    return {name: parameter.detach().clone() for name, parameter in slots.items()}


def random_mask(shape, generator):
    """Bool mask with at least one allowed key in every row (a fully masked row has no defined softmax)."""
    mask = torch.rand(shape, generator=generator) < 0.6
    allowed = torch.randint(shape[-1], shape[:-1], generator=generator)
    return mask.scatter(-1, allowed.unsqueeze(-1), True)


def attention_fixture(ref, generator):
    """Task 1: scaled_softmax_attention on unbatched, batched, masked and large-logit inputs."""
    randn = lambda *shape: torch.randn(shape, generator=generator)
    cases = {
        "unbatched": dict(query=randn(3, 4), key=randn(5, 4), value=randn(5, 6)),
        "batched": dict(query=randn(2, 3, 4, 8), key=randn(2, 3, 6, 8), value=randn(2, 3, 6, 5)),
        "random_mask": dict(query=randn(2, 4, 8), key=randn(2, 6, 8), value=randn(2, 6, 3),
                            mask=random_mask((2, 4, 6), generator)),
        "causal_mask": dict(query=randn(1, 5, 4), key=randn(1, 5, 4), value=randn(1, 5, 4),
                            mask=torch.tril(torch.ones(5, 5, dtype=torch.bool))),
        "padding_mask": dict(query=randn(2, 2, 3, 4), key=randn(2, 2, 5, 4), value=randn(2, 2, 5, 4),
                             mask=torch.tensor([True, True, True, False, False]).expand(2, 1, 1, 5).clone()),
        "large_logits": dict(query=randn(2, 4, 16) * 30, key=randn(2, 6, 16) * 30, value=randn(2, 6, 4)),
    }
    for inputs in cases.values():
        inputs["res"], inputs["attention"] = ref["scaled_softmax_attention"](
            inputs["query"], inputs["key"], inputs["value"], inputs.get("mask"))
    return cases


def multihead_fixture(ref, generator):
    """Task 2: MultiheadAttention with 2 and 4 heads, with each supported mask shape."""
    batch_size, seq_len, embed_dim = 2, 5, 8
    cases = {}
    for num_heads in (2, 4):
        layer = randomize(ref["MultiheadAttention"](embed_dim, num_heads), generator)
        x = torch.randn(batch_size, seq_len, embed_dim, generator=generator)
        masks = {
            "none": None,
            "causal (L, L)": torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool)),
            "(B, L, L)": random_mask((batch_size, seq_len, seq_len), generator),
            "(B, 1, L, L)": random_mask((batch_size, 1, seq_len, seq_len), generator),
            "(B, H, L, L)": random_mask((batch_size, num_heads, seq_len, seq_len), generator),
        }
        outputs = {}
        for name, mask in masks.items():
            out, attention = layer(x, mask=mask, return_attention=True)
            outputs[name] = dict(mask=mask, outputs=out.detach(), attention=attention.detach())
        cases[num_heads] = dict(x=x, weights=weights(attention_slots(layer)), masks=outputs)
    return dict(embed_dim=embed_dim, cases=cases)


def encoder_fixture(ref, generator):
    """Task 3: EncoderBlock with ReLU and GELU feed-forward networks, without and with a mask."""
    embed_dim, num_heads, feedforward_dim = 8, 2, 16
    x = torch.randn(2, 5, embed_dim, generator=generator)
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    cases = {}
    for activation in (nn.ReLU, nn.GELU):
        block = randomize(ref["EncoderBlock"](embed_dim, num_heads, feedforward_dim, activation), generator).eval()
        out, attention = block(x, return_attention=True)
        masked_out, masked_attention = block(x, mask=causal, return_attention=True)
        cases[activation.__name__] = dict(weights=weights(block_slots(block)), outputs=out.detach(),
                                          attention=attention.detach(), masked_outputs=masked_out.detach(),
                                          masked_attention=masked_attention.detach())
    return dict(embed_dim=embed_dim, num_heads=num_heads, feedforward_dim=feedforward_dim, x=x, mask=causal,
                cases=cases)


def positional_fixture(ref, generator):
    """Task 4: the table for a long max_len (sampled rows) and a small one (whole), plus one forward."""
    long_table = ref["PositionalEncoding"](16, 5000).pe[0]  # (5000, 16)
    far = torch.randint(64, 5000, (64,), generator=generator).unique()
    positions = torch.cat([torch.arange(64), far])
    small = ref["PositionalEncoding"](6, 50)
    x = torch.randn(2, 10, 6, generator=generator)
    return dict(long=dict(embed_dim=16, max_len=5000, positions=positions, rows=long_table[positions].clone()),
                small=dict(embed_dim=6, max_len=50, table=small.pe[0].clone(), x=x, outputs=small(x)))


def one_hot_batch(generator, batch_size, seq_len, input_dim):
    return F.one_hot(torch.randint(input_dim, (batch_size, seq_len), generator=generator), input_dim).double()


def classifier_fixture(ref, generator):
    """Task 5: the classifier's logits and attention maps, with GELU (default) and ReLU activations."""
    config = dict(input_dim=5, embed_dim=8, num_classes=3, num_heads=2, feedforward_dim=16, num_layers=2, max_len=16)
    x = one_hot_batch(generator, 2, 6, config["input_dim"])
    cases = {}
    for activation in (nn.GELU, nn.ReLU):
        model = randomize(ref["TransformerForSequenceClassification"](**config, activation=activation), generator)
        model.eval()
        cases[activation.__name__] = dict(weights=weights(classifier_slots(model)), logits=model(x).detach(),
                                          attention=[a.detach() for a in model.forward_attention(x)])
    return dict(config=config, x=x, cases=cases)


def linformer_fixture(ref, generator):
    """Task 7: LinformerAttention, LinformerBlock and LinformerForSequenceClassification."""
    embed_dim, num_heads, seq_len, proj_dim = 8, 2, 6, 3
    x = torch.randn(2, seq_len, embed_dim, generator=generator)
    attention = randomize(ref["LinformerAttention"](embed_dim, num_heads, seq_len, proj_dim), generator)
    attention_out, attention_weights = attention(x, return_attention=True)
    block = randomize(ref["LinformerBlock"](embed_dim, num_heads, 16, seq_len, proj_dim), generator).eval()
    block_out, block_weights = block(x, return_attention=True)
    config = dict(input_dim=5, embed_dim=8, num_classes=3, num_heads=2, feedforward_dim=16, num_layers=2,
                  sequence_length=seq_len + 1, proj_dim=proj_dim, max_len=16)
    model = randomize(ref["LinformerForSequenceClassification"](**config), generator).eval()
    tokens = one_hot_batch(generator, 2, seq_len, config["input_dim"])
    return dict(
        attention=dict(args=(embed_dim, num_heads, seq_len, proj_dim), x=x, outputs=attention_out.detach(),
                       attention=attention_weights.detach(),
                       weights=weights(linformer_attention_slots(attention))),
        block=dict(args=(embed_dim, num_heads, 16, seq_len, proj_dim), x=x, outputs=block_out.detach(),
                   attention=block_weights.detach(),
                   weights=weights(linformer_block_slots(block))),
        classifier=dict(config=config, x=tokens, logits=model(tokens).detach(),
                        attention=[a.detach() for a in model.forward_attention(tokens)],
                        weights=weights(linformer_classifier_slots(model))),
    )


BUILDERS = {1: attention_fixture, 2: multihead_fixture, 3: encoder_fixture, 4: positional_fixture,
            5: classifier_fixture, 7: linformer_fixture}  # {task: builder(reference namespace, generator) -> fixture}
