"""Task 7: what the probe records of the trained Llama, how the grader rebuilds and scores it, and its text.

The probe receives no text for this task: it records the model's weights by role (checkers.llm._facts:llama_slots:
the embedding, every block's norms, attention and SwiGLU, the final norm; the head must be tied and has no role of its
own), each attention's rotary table width (its head size) and the notebook's `merges`, the tokenizer's merges the
model's ids come from (plain pairs of ints). The grader validates the merges (pairs of ints, each id below 256 + its
index, at most vocab_size - 256 of them), cuts its own held-out text into ids with the REFERENCE BPETokenizer built
from them, loads the weights into the reference Llama and measures bits per byte (course_lib.llm.bits_per_byte), so
neither the student's tokenizer nor their forward plays any part. Bits per byte are per byte of text, so any list
of valid merges gives a fair number: merges that do not fit the model only make it worse. The same weights re-drawn
at random must then need far more, so the number comes from what the weights learned.
"""
from checkers._trained import redrawn  # the check's own re-draw, with the grader's seed
from checkers.llm.trained import TARGET_BPB  # one bar for the check and the grade
from course_lib import llm as llm_defaults
from course_lib.device import cpu_threads
from course_lib.llm import bits_per_byte, split_topics, utf8_size

from grading.judge.trained_models import InvalidModel, check_record, one_setting, shape
from grading.cases.parts import recipe

SLOTS = "checkers.llm._facts:llama_slots"
STACKS = {"blocks": ["attention"]}
ROTARY_PAIRS = "checkers.llm._facts:rotary_pairs"  # each attention's rotary table width: head_dim // 2
MERGES = "checkers.llm._facts:notebook_merges"
# The grader's part of the held-out topics (of the grader's own Python): the part the check scores, so that a ✓ pays.
# The same trained reference needs 1.68, 1.91, 1.60 and 2.13 bits per byte on the held-out topics' four parts of
# 12,000 characters (Python 3.11): a bound calibrated on one part does not hold on another.
GRADE_CHARS = (0, llm_defaults.EVAL_CHARS)
COLLAPSE_CHARS = 3000  # held-out characters the re-drawn model is scored on
COLLAPSE_SEED = 1729
# The re-drawn model must need more than bound + COLLAPSE_MARGIN: the trained reference re-drawn needs 3.63 (a uniform
# guess over 1,024 tokens 3.7); 4 x the vocabulary (the largest the judge evaluates) makes a uniform guess about 3.0
COLLAPSE_MARGIN = 0.5


def evaluation_data(spec):
    """The grader's own held-out text: {"text": GRADE_CHARS of the held-out help topics of its Python}."""
    start, end = GRADE_CHARS
    return {"text": split_topics()[1][start:end]}


def trained_case(task):
    """The one case of the training task: the model's weights, settings and merges (no text goes to the probe)."""
    spec = {"assignment": "llm", "class_name": "Llama", "slots": SLOTS, "stacks": STACKS,
            "attention_facts": {"rotary_pairs": ROTARY_PAIRS}, "notebook_data": {"merges": MERGES},
            "bound": TARGET_BPB, "measure": "bits per byte",
            "defaults": "course_lib.llm:MODEL"}  # the sizes the judge allows
    return recipe(task, "hidden: bits per byte on held-out help topics, cut by the reference tokenizer with your "
                        "merges", False, trained=spec)


def layers(weights):
    """How many blocks the roles ("blocks.0....", "blocks.1....") name."""
    return len({role.split(".")[1] for role in weights if role.startswith("blocks.")})


def head_dim_of(settings, embed_dim):
    """The head size every attention module tells: twice its rotary table's width, else embed_dim over its
    `num_heads` (neither is pinned: the given RoPE may be kept under any name, or written inline)."""
    pairs, heads = settings.get("rotary_pairs"), settings.get("num_heads")
    if isinstance(pairs, list) and pairs and all(type(p) is int for p in pairs):
        return 2 * one_setting(pairs, "the rotary table's width", lambda p: p >= 1)
    heads = one_setting(heads, "num_heads", lambda h: type(h) is int and 1 <= h <= embed_dim and embed_dim % h == 0)
    return embed_dim // heads


def trained_config(weights, settings, spec):
    """Keywords of the reference Llama from the weights' shapes and the rotary tables' width; raises InvalidModel."""
    check_record(weights, settings)
    vocab_size, embed_dim = shape(weights, "token_embedding.weight")
    num_layers = layers(weights)
    if num_layers < 1:
        raise InvalidModel("the model holds no blocks")
    if any(not isinstance(settings.get(key), list) or len(settings[key]) != num_layers
           for key in ("rotary_pairs", "num_heads")):
        raise InvalidModel("the heads were not recorded for every block")
    head_dim = head_dim_of(settings, embed_dim)
    kv_dim, hidden_dim = shape(weights, "blocks.0.attention.k_proj.weight")[0], \
        shape(weights, "blocks.0.feedforward.gate_proj.weight")[0]
    if embed_dim % head_dim or kv_dim % head_dim or (embed_dim // head_dim) % max(kv_dim // head_dim, 1):
        raise InvalidModel(f"head_dim {head_dim} does not divide embed_dim {embed_dim} into groups of the "
                           f"{kv_dim // head_dim} key/value heads")
    if vocab_size <= 256:
        raise InvalidModel(f"vocab_size is {vocab_size}: the tokens are the 256 bytes and the merges")
    return dict(vocab_size=vocab_size, embed_dim=embed_dim, num_heads=embed_dim // head_dim,
                num_kv_heads=kv_dim // head_dim, hidden_dim=hidden_dim, num_layers=num_layers,
                max_len=llm_defaults.MODEL["max_len"])


def valid_merges(merges, vocab_size):
    """The recorded merges as a list of (int, int) pairs; raises InvalidModel unless each is a pair of ids made
    before it (below 256 + its index) and there are at most vocab_size - 256 of them."""
    if not isinstance(merges, list):
        raise InvalidModel("the notebook's `merges` (a list of pairs of ids, what train_bpe returned) was not found")
    if len(merges) > vocab_size - 256:
        raise InvalidModel(f"there are {len(merges)} merges but the model has {vocab_size} tokens: at most "
                           f"{vocab_size - 256} merges fit")
    for index, pair in enumerate(merges):
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(i) is int and 0 <= i < 256 + index
                                                                  for i in pair)):
            raise InvalidModel(f"merge {index} of the notebook's `merges` is not a pair of ids below {256 + index}")
    return [tuple(pair) for pair in merges]


def held_out_bpb(model, tokenizer, text):
    """Bits per byte of the model on text cut into ids by tokenizer, windowed as the check does."""
    ids = tokenizer.encode(text)
    return bits_per_byte(model, ids, utf8_size(text), llm_defaults.MODEL["max_len"])


def trained_accuracy(task, model, data, reference, notebook=None):
    """Bits per byte of the loaded reference Llama on the grader's text, cut by the reference BPETokenizer with the
    notebook's merges; raises InvalidModel for merges that are not valid, or when the same architecture with re-drawn
    weights needs less than COLLAPSE_MARGIN above the bound (the number would not come from the trained weights)."""
    merges = valid_merges((notebook or {}).get("merges"), model.token_embedding.num_embeddings)
    tokenizer = reference["BPETokenizer"](merges)
    model.eval()
    with cpu_threads(1):  # small matrices: one thread is fast enough, and graders run side by side
        bpb = held_out_bpb(model, tokenizer, data["text"])
        chance = float("inf") if not bpb <= data["bound"] else \
            held_out_bpb(redrawn(model, COLLAPSE_SEED), tokenizer, data["text"][:COLLAPSE_CHARS])
    if chance < data["bound"] + COLLAPSE_MARGIN:
        raise InvalidModel(f"the same architecture with re-drawn weights still needs only {chance:.2f} bits per byte, "
                           "so the number does not come from the trained weights")
    return bpb
