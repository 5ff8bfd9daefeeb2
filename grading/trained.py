"""Judge a trained model (tasks 6 and 8): accuracy of its own logits, cross-checked against its weights.

The probe reports the model's logits on fresh palindromes and its weights by role. A model whose
logits reach 95% passes; when its weights also load into the reference architecture, that
architecture must reach 95% with them too, and if it does not while the student's architecture
passed its own task (5 or 7), the logits did not come from the weights: the task fails, flagged.
"""
import torch
import torch.nn as nn

from checkers._core import Task
from checkers._modules import build, load
from course_lib.metrics import predictions

from .cases import TRAINED
from .recipes import SLOTS, predict

TARGET = 0.95
ARCHITECTURE_TASK = {6: 5, 8: 7}


def accuracy(logits, labels):
    return (predictions(logits) == labels).float().mean().item()


def infer_config(weights, settings, linformer):
    """Constructor keywords from the weights' shapes and the reported heads and activation, or None."""
    try:
        config = dict(input_dim=weights["input_embedding.weight"].shape[1],
                      embed_dim=weights["input_embedding.weight"].shape[0],
                      num_classes=weights["classifier.weight"].shape[0], num_heads=int(settings["num_heads"]),
                      feedforward_dim=weights["encoder.0.feedforward.in.weight"].shape[0],
                      num_layers=len({role.split(".")[1] for role in weights if role.startswith("encoder.")}),
                      activation=getattr(nn, settings["activation"]))
        if linformer:
            config["proj_dim"], config["sequence_length"] = weights["encoder.0.attention.e_proj.weight"].shape
    except (KeyError, AttributeError, TypeError, ValueError, IndexError):
        return None
    return config


def reference_accuracy(task, reference, record, spec, labels):
    """Accuracy of the reference architecture loaded with the student's trained weights, or None."""
    class_name, slots = TRAINED[task]
    config = infer_config(record.get("weights") or {}, record.get("config") or {}, task == 8)
    if config is None or config["num_heads"] <= 0:
        return None
    try:
        model = build(Task(task), reference[class_name], class_name, dtype=torch.float32, **config)
        load(Task(task), model, SLOTS[slots], record["weights"], class_name)
        return accuracy(predict(Task(task), model, spec["tokens"], spec["vocab_size"]), labels)
    except Exception:  # noqa: BLE001 -- weights of another shape or layout: no cross-check possible
        return None


def judge_trained(task, recipe, record, labels, reference, architecture_passed):
    """(problem or None, note or None) for a trained model's record."""
    facts, class_name = record.get("facts", {}), TRAINED[task][0]
    if not facts.get("module"):
        return "the trained model is not an nn.Module", None
    if not facts.get("instance"):
        return f"the trained model is not a {class_name}", None
    logits = record.get("logits")
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or logits.size(0) != len(labels):
        return "the model's logits should have shape (batch_size, num_classes)", None
    mine = accuracy(logits, labels)
    if mine < TARGET:
        return f"accuracy {mine:.1%} on {len(labels)} fresh sequences; at least {TARGET:.0%} is needed", None
    theirs = reference_accuracy(task, reference, record, recipe["trained"], labels)
    if theirs is not None and theirs >= TARGET:
        return None, None
    if theirs is None:
        return None, "accuracy not cross-checked: the weights do not fit the reference layout"
    if architecture_passed:
        return (f"the model's outputs ({mine:.1%}) do not follow from its weights ({theirs:.1%} in the same "
                "architecture)", "tampering suspected: logits do not follow from the trained weights")
    return None, f"accuracy not cross-checked: task {ARCHITECTURE_TASK[task]} did not pass"
