"""What the checks of a trained model share: bad input refused, its device, and its weights drawn afresh (to ask
whether its accuracy lives in its weights), and the check of the task whose class the model is."""
import contextlib
import copy
import inspect
import io

import torch
import torch.nn as nn

from ._core import Diagnosis, CheckFailure, one_line

NOT_THE_CLASS_TASK = Diagnosis(
    "not-the-class-task",
    "the model's class does not pass check_task_{number}: fix Task {number} first, then train again")


def expect_trained_model(task, model, kind):
    """Fail, naming the task, unless model is a model object (an nn.Module instance); kind names the class expected."""
    if model is None:
        task.fail("got None instead of the trained model: build and train it in the cells above.")
    if inspect.isclass(model):
        task.fail(f"got the class {model.__name__}, not a trained model: pass the model object you trained.")
    if not isinstance(model, nn.Module):
        task.fail(f"expected the trained {kind} (an nn.Module), got {type(model).__name__}.")


def model_device(model):
    """The device of the model's first parameter (the CPU for a model without parameters)."""
    parameter = next(model.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")


def redrawn(model, seed, then=None):
    """A copy of model with every weight drawn afresh from seed: each layer's reset_parameters, N(0, 1) noise for any
    parameter no reset_parameters covers (a student's own layer norm, a bare nn.Parameter). The caller's random state
    (CPU, and the model's GPU) is left as it was.

    Args:
        model: an nn.Module; seed: the draw's seed.
        then: optional then(copy), drawn in the same seeded state last (an assignment's own initialisation).
    Returns:
        the re-drawn deep copy, on the model's device.
    """
    fresh = copy.deepcopy(model)
    device = model_device(model)
    cuda = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda), torch.no_grad():
        torch.manual_seed(seed)
        reset = set()
        for module in fresh.modules():
            if callable(getattr(module, "reset_parameters", None)):
                module.reset_parameters()
                reset.update(id(parameter) for parameter in module.parameters(recurse=False))
        for parameter in fresh.parameters():
            if id(parameter) not in reset:
                parameter.normal_(0.0, 1.0)
        if then is not None:
            then(fresh)
    return fresh


def expect_class_passes(task, number, check, *classes):
    """Fail unless check(*classes), the check of Task `number` on the model's own classes, passes (run quietly).

    The grade loads the trained weights into the reference classes and pays the trained task only when Task `number`
    earns its points (course.toml's `needs`): a model whose class computes something else (a pre-norm block where
    the task asks post-norm, say) was trained for another function than the one graded.
    """
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # a passing check prints its ✓ line
            check(*classes)
    except CheckFailure as failure:
        inner = one_line(str(failure).split(": ", 1)[-1], 160)
        task.fail(f"{NOT_THE_CLASS_TASK.format(number=number)} (check_task_{number}: {inner}).",
                  NOT_THE_CLASS_TASK.slug)
