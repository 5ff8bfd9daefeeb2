"""Judge a trained model (a case with a "trained" spec) from its weights, on the grader's data.

The probe records the model's weights by role and the settings its weights cannot tell (heads and
activation of each block), as data. Here, in the grader's process, those settings are validated
(types, ranges, agreement with the weights' shapes), the reference architecture from solutions/ is
built with them, every weight is loaded strictly (each role present, none extra, exact shapes), and
accuracy is measured on sequences the probe never saw. Whatever the student's own forward() does
plays no part: weights that do not load, or settings that are not valid, score 0 and say why.

Before anything is built, every integer size must lie in 1..SIZE_FACTOR x the task's default (the defaults are the
assignment's data: its spec names them, e.g. "course_lib.<name>:MODEL"), the one size rule of every
assignment: larger settings the constructor would accept could keep the grader's own process busy for minutes; they
score 0 and are flagged for a person. A size below 1 is no model at all: it scores 0 with the reason.

What depends on the assignment comes from its cases package (grading/cases/<assignment>/, named by the spec):
`trained_config(weights, settings, spec)`, the reference constructor's keywords (raising InvalidModel), and
`trained_accuracy(task, model, data, reference)`, the loaded model's accuracy on the grader's evaluation data
(the reference namespace at hand, e.g. for the reference's own decoding function).
"""
import importlib

import torch

from checkers._core import Task
from checkers._modules import build

from ..cases import cases_of
from ..recipes import slots_of
from .provenance_flags import provenance_flag, sightings_flag, tampering_flag

SIZE_FACTOR = 4  # each size (widths, layers, heads) at most 4 x the task's default: the slowest judge
# (an encoder-decoder's) then takes about 15 x its time at the defaults (65 s against 4 s at a load of 9 on 2 cores)


class InvalidModel(Exception):
    """The recorded weights or settings do not make a valid model of the reference architecture."""


class BeyondDefaults(InvalidModel):
    """A size beyond what the task allows the grader to evaluate: not judged, flagged for a person."""


def within_defaults(config, spec):
    """Raise BeyondDefaults for the first integer setting above SIZE_FACTOR x the task's default, InvalidModel for one
    below 1: the only bounds on sizes (the cases' trained_config check what the task fixes, not how large).

    Args:
        config: the reference constructor's keywords; spec: the task's trusted spec, whose "defaults" names the
            assignment's default settings as "module:name" (none named: nothing is bounded here).
    """
    if not spec.get("defaults"):
        return
    module, _, name = spec["defaults"].partition(":")
    defaults = getattr(importlib.import_module(module), name)
    for key, default in defaults.items():
        value = config.get(key)
        if type(default) is int and default >= 1 and type(value) is int and value < 1:  # pad_id 0 is no size
            raise InvalidModel(f"{key} = {value} is not a size: every size is at least 1")
        if type(default) is int and type(value) is int and value > max(default, 1) * SIZE_FACTOR:
            raise BeyondDefaults(f"{key} = {value} is above {max(default, 1) * SIZE_FACTOR}, {SIZE_FACTOR} x the "
                                 f"task's default {default}, the largest the grader evaluates")


def shape(weights, role):
    value = weights.get(role)
    if value is None:
        raise InvalidModel(f"the weights have no `{role}`")
    return tuple(value.shape)


def check_weights(weights):
    """Every recorded weight: a plain, finite floating tensor of at most 3 dimensions (a position embedding of
    shape (1, N + 1, D) has 3)."""
    if not isinstance(weights, dict) or not weights:
        raise InvalidModel("no weights were recorded")
    for role, value in weights.items():
        if not isinstance(role, str) or type(value) is not torch.Tensor:
            raise InvalidModel(f"the weight `{str(role)[:60]}` is not a plain tensor")
        if not value.is_floating_point() or value.dim() > 3 or not torch.isfinite(value).all():
            raise InvalidModel(f"the weight `{role}` is not a finite floating tensor of at most 3 dimensions")


def check_record(weights, settings):
    """The settings are a dict the probe filled without an error (which says why no weights were recorded), and the
    recorded weights plain finite tensors."""
    if not isinstance(settings, dict):
        raise InvalidModel("no settings were recorded")
    if "error" in settings:
        raise InvalidModel(f"the model does not have the pinned layout: {str(settings['error'])[:200]}")
    check_weights(weights)


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


def load_strictly(model, roles_of, weights):
    """Copy every weight into the reference model's role; every role must be given, none extra, same shape up to
    dimensions of size 1 (a [CLS] token kept as (1, D) loads into the reference's (D,))."""
    slots = roles_of(model)
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
    config = cases_of(spec["assignment"]).trained_config(weights if isinstance(weights, dict) else {},
                                                         record.get("config"), spec)
    within_defaults(config, spec)
    try:
        model = build(Task(task), reference[class_name], class_name, dtype=torch.float32, **config)
    except Exception as error:  # noqa: BLE001 -- the reference refused these sizes
        raise InvalidModel(f"the reference architecture cannot be built with these settings ({error})") from None
    load_strictly(model, slots_of(slots), weights)
    return model


def reference_accuracy(task, reference, record, data):
    """(accuracy of the reference loaded with the student's weights, why a person must look at its fit to the
    sandbox's stand-ins or ''); raises InvalidModel."""
    model = reference_model(task, reference, record, data)
    cases = cases_of(data["assignment"])
    # the notebook's plain data the spec asks for, validated by the cases package
    notebook = record.get("notebook_data") if data.get("notebook_data") else None
    extra = {"notebook": notebook if isinstance(notebook, dict) else {}} if data.get("notebook_data") else {}
    flag = stand_in_flag(cases, model, reference, extra)
    return cases.trained_accuracy(task, model, data, reference, **extra), flag


def stand_in_flag(cases, model, reference, extra):
    """The cases package's reason to look at a model that fits the sandbox's stand-ins for the scored data far
    better than their unseen twins ('' when it does not, or the assignment hides no data); measured before the
    score, so a model that scores 0 is flagged too."""
    if not hasattr(cases, "stand_in_flag"):
        return ""
    try:
        return cases.stand_in_flag(model, reference, **extra)
    except InvalidModel:
        return ""  # the score says why (merges that are not valid)


def trained_problem(task, record, data, reference):
    """(the problem of a trained model's record or None when it reaches the target, why a person must look or '',
    what it trained on for the report or ''): a model that reaches it is flagged when its weights are no state an
    optimizer step of the notebook left (judge/provenance_flags.py); one that trained on the sandbox's stand-ins for
    the scored data, or fits them far better than their unseen twins, is flagged and noted whatever it scores.

    Args:
        record: what the probe recorded ("facts", "weights", "config").
        data: the grader's expected record: the task's spec ("class_name", "slots", and "target", the accuracy
            to reach, or "bound" and "measure", a measure to keep at most the bound, e.g. bits per byte) and its
            evaluation set ("tokens", "labels").
        reference: the reference namespace.
    """
    facts, class_name, target = record.get("facts", {}), data["class_name"], data.get("target")
    if not isinstance(facts, dict) or not facts.get("module"):
        return "the trained model is not an nn.Module", "", ""
    if not facts.get("instance"):
        return f"the trained model is not a {class_name}", "", ""
    try:
        mine, fitted = reference_accuracy(task, reference, record, data)
    except InvalidModel as error:
        flag = f"model settings beyond the task's defaults, not evaluated: {error}" \
            if isinstance(error, BeyondDefaults) else ""
        return (f"the trained model cannot be judged: {error}; the grader measures accuracy with the reference "
                f"{class_name} loaded with your weights"), joined(flag, sightings_flag(record)), sightings_flag(record)
    data_flags = joined(sightings_flag(record), fitted)  # what it trained on, whatever it scores
    if "bound" in data and not mine <= data["bound"]:  # a measure kept low (e.g. bits per byte); NaN fails too
        return (f"{data.get('measure', 'the measure')} {mine:.3f} (the reference {class_name} loaded with your "
                f"weights); at most {data['bound']:g} is needed"), joined(tampering_flag(record), data_flags), \
            data_flags
    if target is not None and mine < target:  # no points to check; a removed step hook is flagged all the same
        return (f"accuracy {mine:.1%} (the reference {class_name} loaded with your weights); at least {target:.0%} "
                "is needed"), joined(tampering_flag(record), data_flags), data_flags
    # its points stand; weights no optimizer step left are flagged
    return None, joined(provenance_flag(record), data_flags), data_flags


def joined(*flags):
    """Every reason to look, in one line ('' when there is none)."""
    return "; ".join(flag for flag in flags if flag)
