"""Task 7: what the probe records of the trained model, how the grader rebuilds and evaluates it, and its data.

The probe receives no data for this task: it records the model's weights by role and the settings the weights
cannot tell (heads of every attention module, activation of every block). The grader loads them into the
reference Seq2SeqTransformer and decodes fresh reversal pairs with the reference greedy_decode, so neither the
student's forward, encode, decode nor their decoding loop plays any part: a `decode` that reads the answer from
`source`, or a hand-written copy of the memory, scores what the reference architecture does with those weights.
The same weights re-drawn at random must then fail, so the accuracy comes from what the weights learned.
"""
import copy

import torch
import torch.nn as nn

from checkers.seq2seq.trained import RESET_CEILING, TARGET_ACCURACY  # one bar for the check and the grade
from course_lib.device import cpu_threads
from course_lib.seq2seq import BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE, ReversalDataset, exact_match

from grading.judge.trained_models import InvalidModel, check_record, one_setting, shape
from grading.cases.parts import recipe

ACTIVATIONS = ("ReLU", "GELU", "SiLU", "Tanh", "LeakyReLU", "ELU", "SELU", "CELU", "Mish", "Softplus", "Sigmoid",
               "Hardswish", "Hardtanh", "ReLU6", "Softsign", "Tanhshrink", "LogSigmoid", "PReLU", "RReLU")
DATA_SEED = 161803  # neither the notebook's data (1, 2) nor a check's
SIZE = 2000
COLLAPSE_SIZE = 500  # pairs the re-drawn model is decoded on
COLLAPSE_SEED = 1729
BATCH = 500
SLOTS = "checkers.seq2seq._weights:seq2seq_slots"
STACKS = {"encoder": ["attention"], "decoder": ["self_attention", "cross_attention"]}


def evaluation_data(spec):
    """The hidden evaluation set: {"sources" (N, MAX_LEN), "targets" (N, MAX_LEN + 1)} of SIZE fresh pairs."""
    data = ReversalDataset(SIZE, seed=DATA_SEED)
    return {"sources": data.sources, "targets": data.targets}


def trained_case(task):
    """The one case of the training task: the model's weights and settings (no data goes to the probe)."""
    spec = {"assignment": "seq2seq", "class_name": "Seq2SeqTransformer", "slots": SLOTS, "stacks": STACKS,
            "target": TARGET_ACCURACY, "defaults": "course_lib.seq2seq:MODEL"}  # the sizes the judge allows
    return recipe(task, f"hidden: exact match of greedy decoding on {SIZE} fresh reversal pairs", False,
                  trained=spec)


def layers(weights, stack):
    """How many blocks the roles of a stack ("encoder.0....", "encoder.1....") name."""
    return len({role.split(".")[1] for role in weights if role.startswith(f"{stack}.")})


def trained_config(weights, settings, spec):
    """Keywords of the reference Seq2SeqTransformer from the weights' shapes and the settings; raises InvalidModel."""
    check_record(weights, settings)
    vocab_size, embed_dim = shape(weights, "embedding.weight")
    encoder_layers, decoder_layers = layers(weights, "encoder"), layers(weights, "decoder")
    if encoder_layers < 1 or decoder_layers < 1:
        raise InvalidModel("the encoder or the decoder holds no blocks")
    heads, activations = settings.get("num_heads"), settings.get("activation")
    if not isinstance(heads, list) or len(heads) != encoder_layers + 2 * decoder_layers or \
            not isinstance(activations, list) or len(activations) != encoder_layers + decoder_layers:
        raise InvalidModel("the heads and activation were not recorded for every block")
    num_heads = one_setting(heads, "num_heads", lambda h: type(h) is int and 1 <= h <= embed_dim and embed_dim % h == 0)
    activation = one_setting(activations, "activation", lambda name: type(name) is str and name in ACTIVATIONS)
    config = dict(vocab_size=vocab_size, embed_dim=embed_dim, num_heads=num_heads,
                  feedforward_dim=shape(weights, "encoder.0.feedforward.in.weight")[0],
                  num_encoder_layers=encoder_layers, num_decoder_layers=decoder_layers,
                  activation=getattr(nn, activation), dropout=0.0, pad_id=PAD_ID)
    if vocab_size != VOCAB_SIZE:
        raise InvalidModel(f"vocab_size is {vocab_size}, the reversal task has {VOCAB_SIZE} tokens")
    return config


def decoded_accuracy(model, sources, targets, greedy_decode):
    """Exact match of the reference greedy_decode on the model, in batches, with max_len = source width + 1."""
    decoded = [greedy_decode(model, batch, batch.size(1) + 1, BOS_ID, EOS_ID) for batch in sources.split(BATCH)]
    width = max(part.size(1) for part in decoded)
    decoded = torch.cat([nn.functional.pad(part, (0, width - part.size(1)), value=PAD_ID) for part in decoded])
    return exact_match(decoded, targets)


def redrawn(model):
    """A copy of the model with every weight drawn afresh (each layer's own initialisation; norms 1 and 0)."""
    fresh = copy.deepcopy(model)
    torch.manual_seed(COLLAPSE_SEED)
    with torch.no_grad():
        for part in fresh.modules():
            if isinstance(part, (nn.Linear, nn.Embedding)):
                part.reset_parameters()
            elif part is not fresh and not list(part.children()) and hasattr(part, "weight"):
                part.weight.fill_(1.0)  # the hand-written LayerNorm: its initial scale and shift
                part.bias.zero_()
    return fresh


def trained_accuracy(task, model, data, reference):
    """Exact match of the reference greedy_decode on the loaded reference model; raises InvalidModel when the same
    architecture with re-drawn weights still scores RESET_CEILING or more (the accuracy would not come from what the
    weights learned)."""
    greedy_decode = reference["greedy_decode"]
    with cpu_threads(1):  # small matrices: one thread is faster, and graders run side by side
        accuracy = decoded_accuracy(model, data["sources"], data["targets"], greedy_decode)
        chance = 0.0 if accuracy < data["target"] else decoded_accuracy(
            redrawn(model), data["sources"][:COLLAPSE_SIZE], data["targets"][:COLLAPSE_SIZE], greedy_decode)
    if chance >= RESET_CEILING:
        raise InvalidModel(f"the same architecture with re-drawn weights still scores {chance:.0%}, so the "
                           "accuracy does not come from the trained weights")
    return accuracy
