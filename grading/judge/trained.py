"""Judge a trained sequence classifier (a case with a "trained" spec) from its weights, on the grader's data.

The probe records the model's weights by role and the settings its weights cannot tell (heads and
activation of each block), as data. Here, in the grader's process, those settings are validated
(types, ranges, agreement with the weights' shapes), the reference architecture from solutions/ is
built with them, every weight is loaded strictly (each role present, none extra, exact shapes), and
accuracy is measured on sequences the probe never saw. Whatever the student's own forward() does
plays no part: weights that do not load, or settings that are not valid, score 0 and say why.
"""
import torch
import torch.nn as nn

from checkers._core import Task
from checkers._modules import build
from course_lib.data import VOCAB_SIZE
from course_lib.defaults import SEQ_LEN
from course_lib.metrics import predictions

from ..run.recipes import SLOTS, predict

ACTIVATIONS = ("ReLU", "GELU", "SiLU", "Tanh", "LeakyReLU", "ELU", "SELU", "CELU", "Mish", "Softplus", "Sigmoid",
               "Hardswish", "Hardtanh", "ReLU6", "Softsign", "Tanhshrink", "LogSigmoid", "PReLU", "RReLU")
LIMITS = {"embed_dim": 1024, "feedforward_dim": 8192, "num_layers": 16, "proj_dim": 1024}  # the grader's CPU time


class InvalidModel(Exception):
    """The recorded weights or settings do not make a valid model of the reference architecture."""


def accuracy(logits, labels):
    return (predictions(logits) == labels).float().mean().item()


def shape(weights, role):
    value = weights.get(role)
    if value is None:
        raise InvalidModel(f"the weights have no `{role}`")
    return tuple(value.shape)


def check_weights(weights):
    """Every recorded weight: a plain, finite floating tensor of at most 2 dimensions."""
    if not isinstance(weights, dict) or not weights:
        raise InvalidModel("no weights were recorded")
    for role, value in weights.items():
        if not isinstance(role, str) or type(value) is not torch.Tensor:
            raise InvalidModel(f"the weight `{str(role)[:60]}` is not a plain tensor")
        if not value.is_floating_point() or value.dim() > 2 or not torch.isfinite(value).all():
            raise InvalidModel(f"the weight `{role}` is not a finite floating tensor of at most 2 dimensions")


def one_setting(values, name, valid):
    """The single value every block reports for a setting, if it is valid."""
    if not isinstance(values, list) or not values:
        raise InvalidModel(f"no `{name}` was recorded")
    if any(type(value) is not type(values[0]) or value != values[0] for value in values):
        raise InvalidModel(f"the encoder blocks disagree on `{name}`")
    if isinstance(values[0], dict):  # the probe records only the type of a value that is no int, bool or str
        raise InvalidModel(f"`{name}` is a {str(values[0].get('type'))[:40]}, not a valid value")
    if not valid(values[0]):
        raise InvalidModel(f"`{name}` = {values[0]!r} is not valid")
    return values[0]


def infer_config(weights, settings, linformer):
    """Constructor keywords of the reference class from the weights' shapes and the settings; raises InvalidModel."""
    check_weights(weights)
    if not isinstance(settings, dict):
        raise InvalidModel("no settings were recorded")
    if "error" in settings:
        raise InvalidModel(f"the model does not have the pinned layout: {str(settings['error'])[:200]}")
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
    """Sizes the grader's data and CPU can take, and the ones the task fixes."""
    if config["input_dim"] != VOCAB_SIZE:
        raise InvalidModel(f"input_dim is {config['input_dim']}, the data has {VOCAB_SIZE} tokens")
    if config["num_classes"] not in (1, 2):
        raise InvalidModel(f"num_classes is {config['num_classes']}; a palindrome classifier has 1 or 2")
    for name, limit in LIMITS.items():
        if name in config and not 1 <= config[name] <= limit:
            raise InvalidModel(f"{name} = {config[name]} is outside 1..{limit}")
    if linformer and config["sequence_length"] != SEQ_LEN + 1:
        raise InvalidModel(f"sequence_length is {config['sequence_length']}, the data has {SEQ_LEN} tokens "
                           "plus [CLS]")


def load_strictly(model, slots_of, weights):
    """Copy every weight into the reference model's role; every role must be given, none extra, same shape."""
    slots = slots_of(model)
    missing, extra = sorted(set(slots) - set(weights)), sorted(set(weights) - set(slots))
    if missing or extra:
        raise InvalidModel(f"the weights do not fit the reference layout ({len(missing)} missing, e.g. "
                           f"{(missing or ['-'])[0]}; {len(extra)} extra, e.g. {(extra or ['-'])[0]})")
    for role, slot in slots.items():
        value = weights[role]
        if tuple(value.shape) != tuple(slot.shape) and tuple(value.squeeze().shape) != tuple(slot.squeeze().shape):
            raise InvalidModel(f"`{role}` has shape {tuple(value.shape)}, the reference needs {tuple(slot.shape)}")
        with torch.no_grad():
            slot.copy_(value.reshape(slot.shape))


def reference_model(task, reference, record, spec):
    """The reference architecture loaded with the student's trained weights; raises InvalidModel.

    Args:
        spec: the task's trusted spec from its case ("class_name", "slots"), never the probe's record.
    """
    class_name, slots = spec["class_name"], spec["slots"]
    weights = record.get("weights")
    config = infer_config(weights if isinstance(weights, dict) else {}, record.get("config"),
                          slots.startswith("linformer"))
    try:
        model = build(Task(task), reference[class_name], class_name, dtype=torch.float32, **config)
    except Exception as error:  # noqa: BLE001 -- the reference refused these sizes
        raise InvalidModel(f"the reference architecture cannot be built with these settings ({error})") from None
    load_strictly(model, SLOTS[slots], weights)
    return model


def reference_accuracy(task, reference, record, data):
    """Accuracy of the reference loaded with the student's weights; raises InvalidModel."""
    model = reference_model(task, reference, record, data)
    return accuracy(predict(Task(task), model, data["tokens"], VOCAB_SIZE), data["labels"])


def judge_trained(task, record, data, reference):
    """The problem of a trained model's record, or None when it reaches the target.

    Args:
        record: what the probe recorded ("facts", "weights", "config").
        data: the grader's expected record: the task's spec ("class_name", "slots", "target") and its
            evaluation set ("tokens", "labels").
        reference: the reference namespace.
    """
    facts, class_name, target = record.get("facts", {}), data["class_name"], data["target"]
    if not isinstance(facts, dict) or not facts.get("module"):
        return "the trained model is not an nn.Module"
    if not facts.get("instance"):
        return f"the trained model is not a {class_name}"
    try:
        mine = reference_accuracy(task, reference, record, data)
    except InvalidModel as error:
        return (f"the trained model cannot be judged: {error}; the grader measures accuracy with the reference "
                f"{class_name} loaded with your weights")
    if mine < target:
        return (f"accuracy {mine:.1%} (the reference {class_name} loaded with your weights); at least {target:.0%} "
                "is needed")
    return None
