"""Tasks 6 and 8: what the probe records of a trained model, how the grader rebuilds and evaluates it, and its data.

The probe receives no data for these tasks: it records the model's weights by role and the settings
the weights cannot tell (heads, activation). The grader loads them into the reference architecture
and measures accuracy on sequences drawn here from a seed of its own; neither the sequences nor the
labels ever reach a probe.
"""
import torch
import torch.nn as nn

from checkers._core import Task
from checkers.transformer.trained import TARGET_ACCURACY  # one target for the notebook's check and the grader
from course_lib.transformer import VOCAB_SIZE, PalindromeDataset
from course_lib.transformer import SEQ_LEN as DEFAULT_SEQ_LEN
from course_lib.metrics import predictions

from grading.judge.trained_models import InvalidModel, check_record, one_setting, shape
from grading.recipes import snapshot
from grading.cases.parts import recipe
from .hidden import CLASSIFIER, LINFORMER_CLASSIFIER

ACTIVATIONS = ("ReLU", "GELU", "SiLU", "Tanh", "LeakyReLU", "ELU", "SELU", "CELU", "Mish", "Softplus", "Sigmoid",
               "Hardswish", "Hardtanh", "ReLU6", "Softsign", "Tanhshrink", "LogSigmoid", "PReLU", "RReLU")
DATA_SEED = 271828  # neither the notebook's data (1, 2) nor the visible check's (31337)
SIZE = 2000
STACKS = {"encoder": ["attention"]}  # the classifier's stack of blocks and each block's attention modules
TRAINED = {6: ("TransformerForSequenceClassification", CLASSIFIER, "course_lib.transformer:CLASSIFIER"),
           8: ("LinformerForSequenceClassification", LINFORMER_CLASSIFIER, "course_lib.transformer:LINFORMER")}


def evaluation_data(spec):
    """The hidden evaluation set of a trained task's spec: {"tokens", "labels"} of SIZE sequences (grader only)."""
    data = PalindromeDataset(SIZE, DEFAULT_SEQ_LEN, seed=DATA_SEED)
    return {"tokens": data.tokens, "labels": data.labels.long()}


def trained_case(task):
    """The one case of a training task: the trained model's weights and settings (no data goes to the probe)."""
    class_name, slots, defaults = TRAINED[task]  # defaults: the sizes the judge allows (trained_models.SIZE_FACTOR)
    spec = {"assignment": "transformer", "class_name": class_name, "slots": slots, "stacks": STACKS,
            "target": TARGET_ACCURACY, "defaults": defaults}
    return recipe(task, f"hidden: accuracy on {SIZE} fresh sequences of length {DEFAULT_SEQ_LEN}", False,
                  trained=spec)


def trained_config(weights, settings, spec):
    """Constructor keywords of the reference class from the weights' shapes and the settings; raises InvalidModel."""
    linformer = spec["slots"] == LINFORMER_CLASSIFIER
    check_record(weights, settings)
    embed_dim, input_dim = shape(weights, "input_embedding.weight")
    num_layers = len({role.split(".")[1] for role in weights if role.startswith("encoder.")})
    if num_layers < 1:
        raise InvalidModel("the encoder holds no blocks")
    if any(not isinstance(settings.get(key), list) or len(settings[key]) != num_layers
           for key in ("num_heads", "activation")):
        raise InvalidModel("the heads and activation were not recorded for every encoder block")
    heads = one_setting(settings.get("num_heads"), "num_heads",
                        lambda h: type(h) is int and 1 <= h <= embed_dim and embed_dim % h == 0)
    activation = one_setting(settings.get("activation"), "activation",
                             lambda name: type(name) is str and name in ACTIVATIONS)
    config = dict(input_dim=input_dim, embed_dim=embed_dim, num_classes=shape(weights, "classifier.weight")[0],
                  num_heads=heads, feedforward_dim=shape(weights, "encoder.0.feedforward.in.weight")[0],
                  num_layers=num_layers, activation=getattr(nn, activation))
    if linformer:
        config["proj_dim"], config["sequence_length"] = shape(weights, "encoder.0.attention.e_proj.weight")
    validate(config, linformer)
    return config


def validate(config, linformer):
    """The sizes the task fixes (the bounds on the others: judge.trained_models.within_defaults)."""
    if config["input_dim"] != VOCAB_SIZE:
        raise InvalidModel(f"input_dim is {config['input_dim']}, the data has {VOCAB_SIZE} tokens")
    if config["num_classes"] not in (1, 2):
        raise InvalidModel(f"num_classes is {config['num_classes']}; a palindrome classifier has 1 or 2")
    if linformer and config["sequence_length"] != DEFAULT_SEQ_LEN + 1:
        raise InvalidModel(f"sequence_length is {config['sequence_length']}, the data has {DEFAULT_SEQ_LEN} tokens "
                           "plus [CLS]")


def trained_accuracy(task, model, data, reference=None):
    """Accuracy of the loaded reference classifier on the grader's palindromes (its forward alone: no reference
    function is needed)."""
    logits = predict(Task(task), model, data["tokens"], VOCAB_SIZE)
    return (predictions(logits) == data["labels"]).float().mean().item()


def predict(task, model, tokens, vocab_size):
    """model(x) in eval mode, without gradients, in batches of 500 one-hot sequences."""
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    was_training, outputs = model.training, []
    model.eval()
    try:
        with torch.no_grad():
            for batch in tokens.split(500):
                inputs = nn.functional.one_hot(batch, vocab_size).float().to(device)
                logits = task.call("model(x)", model, inputs)
                if not isinstance(logits, torch.Tensor):
                    task.fail(f"model(x) returned {type(logits).__name__}, not a tensor of logits.")
                outputs.append(snapshot(logits).float())
    finally:
        model.train(was_training)
    return torch.cat(outputs)
