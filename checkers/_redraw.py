"""A trained model's weights drawn afresh, for the checks that ask whether its accuracy lives in its weights."""
import copy

import torch


def model_device(model):
    """The device of the model's first parameter (the CPU for a model without parameters)."""
    parameter = next(model.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")


def redrawn(model, seed, then=None):
    """A copy of model with every weight drawn afresh from seed: each layer's reset_parameters, N(0, 1) noise for any
    parameter no reset_parameters covers (a student's own LayerNorm, a bare nn.Parameter). The caller's random state
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
