"""Task 7: what the probe records of the trained GPT, how the grader rebuilds and evaluates it, and its data.

The probe receives no data for this task: it records the model's weights by role (checkers.gpt._roles:tied_gpt_slots:
the embedding, every block, the final norm; the tied head has no role of its own, and an untied one is refused) and
the settings the weights cannot tell (the heads of every attention module, from its `num_heads` or its rotary
table's width; the activation of every block). The grader loads them into the reference GPT and has the reference
`generate` write the answers of fresh problems greedily, so neither the student's forward nor their generate plays
any part: extra weights, a forward that computes the sum or a table of memorised answers score what the reference
architecture does with the pinned weights alone. The same weights re-drawn at random must then fail, so the
accuracy comes from what the weights learned.
"""

import torch

from checkers._trained import redrawn  # the check's own re-draw, with the grader's seed
from checkers.gpt.trained import RESET_CEILING, TARGET_ACCURACY  # one bar for the check and the grade
from course_lib.gpt import PROMPT_LEN, SEQ_LEN, VOCAB_SIZE, addition_sequences
from course_lib.device import cpu_threads

from grading.judge.trained_models import InvalidModel, check_record, one_setting, shape
from grading.cases.parts import recipe

DATA_SEED = 271828  # neither the notebook's data (1, 2) nor a check's
SIZE = 2000
COLLAPSE_SIZE = 500  # problems the re-drawn model answers
COLLAPSE_SEED = 1729
BATCH = 500
SLOTS = "checkers.gpt._roles:tied_gpt_slots"
STACKS = {"blocks": ["attention"]}
ROTARY_PAIRS = "checkers.gpt._facts:rotary_pairs"  # each attention's rotary table width


def evaluation_data(spec):
    """The hidden evaluation set: {"sequences" (N, SEQ_LEN)} of SIZE fresh addition problems with their answers."""
    return {"sequences": addition_sequences(SIZE, torch.Generator().manual_seed(DATA_SEED))}


def trained_case(task):
    """The one case of the training task: the model's weights and settings (no data goes to the probe)."""
    spec = {"assignment": "gpt", "class_name": "GPT", "slots": SLOTS, "stacks": STACKS, "target": TARGET_ACCURACY,
            "attention_facts": {"rotary_pairs": ROTARY_PAIRS},  # heads_of reads them where num_heads is not kept
            "defaults": "course_lib.gpt:MODEL"}  # the sizes the judge allows
    return recipe(task, f"hidden: exact answers of greedy generation on {SIZE} fresh addition problems", False,
                  trained=spec)


def layers(weights):
    """How many blocks the roles ("blocks.0....", "blocks.1....") name."""
    return len({role.split(".")[1] for role in weights if role.startswith("blocks.")})


def heads_of(settings, embed_dim):
    """Each attention module's head count: its `num_heads`, else embed_dim over its rotary table's head_dim."""
    heads = settings.get("num_heads")
    pairs = settings.get("rotary_pairs") or [None] * len(heads or [])
    if not isinstance(heads, list) or not isinstance(pairs, list) or len(pairs) != len(heads):
        raise InvalidModel("the heads were not recorded for every block")
    return [count if type(count) is int else embed_dim // (2 * pair) if type(pair) is int and pair > 0 else count
            for count, pair in zip(heads, pairs)]


def trained_config(weights, settings, spec):
    """Keywords of the reference GPT from the weights' shapes and the settings; raises InvalidModel."""
    check_record(weights, settings)
    vocab_size, embed_dim = shape(weights, "token_embedding.weight")
    num_layers = layers(weights)
    if num_layers < 1:
        raise InvalidModel("the model holds no blocks")
    heads, activations = heads_of(settings, embed_dim), settings.get("activation")
    if len(heads) != num_layers or not isinstance(activations, list) or len(activations) != num_layers:
        raise InvalidModel("the heads and activation were not recorded for every block")
    num_heads = one_setting(heads, "num_heads", lambda h: type(h) is int and 1 <= h <= embed_dim and
                            embed_dim % h == 0 and (embed_dim // h) % 2 == 0)
    one_setting(activations, "activation", lambda name: name == "GELU")  # GPT's blocks take GPTBlock's default
    config = dict(vocab_size=vocab_size, embed_dim=embed_dim, num_heads=num_heads, num_layers=num_layers,
                  feedforward_dim=shape(weights, "blocks.0.feedforward.in.weight")[0], max_len=SEQ_LEN, dropout=0.0)
    if vocab_size != VOCAB_SIZE:
        raise InvalidModel(f"vocab_size is {vocab_size}, the addition language has {VOCAB_SIZE} tokens")
    return config


def generated_accuracy(model, sequences, generate):
    """Fraction of problems whose answer the reference generate writes exactly, greedily, in batches."""
    prompts = sequences[:, :PROMPT_LEN]  # (N, P)
    written = torch.cat([generate(model, batch, SEQ_LEN - PROMPT_LEN, temperature=0)
                         for batch in prompts.split(BATCH)])  # (N, SEQ_LEN)
    return (written == sequences).all(dim=1).float().mean().item()


def trained_accuracy(task, model, data, reference):
    """Exact answers of the reference generate (greedy) on the loaded reference GPT; raises InvalidModel when the same
    architecture with re-drawn weights still scores RESET_CEILING or more (the accuracy would not come from what the
    weights learned)."""
    generate, sequences = reference["generate"], data["sequences"]
    with cpu_threads(1):  # small matrices: one thread is faster, and graders run side by side
        accuracy = generated_accuracy(model, sequences, generate)
        chance = 0.0 if accuracy < data["target"] else \
            generated_accuracy(redrawn(model, COLLAPSE_SEED), sequences[:COLLAPSE_SIZE], generate)
    if chance >= RESET_CEILING:
        raise InvalidModel(f"the same architecture with re-drawn weights still scores {chance:.0%}, so the "
                           "accuracy does not come from the trained weights")
    return accuracy
