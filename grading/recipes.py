"""Run one test case (a "recipe") on given objects and record what comes out.

The same code runs on both sides of the grading wall: the probe process runs every recipe on
the student's objects, the scorer runs it on the reference, and only the two records are
compared. A recipe holds inputs and weights, never expected values, so a probe that reads it
learns nothing it could copy. This module is copied into the sandbox: it may import only
torch and the public `checkers` package.
"""
import contextlib
import importlib

import torch
import torch.nn as nn

from checkers._calls import recorded_calls
from checkers._core import NotImplementedYet, Task
from checkers._facts import plain
from checkers._modules import build, load
from checkers._weights import encoder_blocks


def slots_of(name):
    """The function giving a module's weights by role, named as "module:function" by the assignment's cases (e.g.
    "checkers.<assignment>._roles:block_slots"), imported from the runtime."""
    return named(name)


def facts_of(name):
    """The function giving a module's facts as plain data, named as "module:function" by the assignment's cases (e.g.
    "checkers.<assignment>._facts:<fact>": a function of the public checkers package, which the runtime holds)."""
    return named(name)


def named(name):
    """The function a "module:function" name names."""
    module, colon, function = name.partition(":")
    if not colon:
        raise ValueError(f"{name!r} does not name a function as \"module:function\"")
    return getattr(importlib.import_module(module), function)


DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16}
# Captured at import, before any student code runs: a notebook that rebinds torch.Tensor.clone
# cannot change what the probe records (it could only make its own record wrong, never right).
_clone, _detach = torch.Tensor.clone, torch.Tensor.detach


PLAIN = (torch.Tensor, nn.Parameter, nn.Buffer) if hasattr(nn, "Buffer") else (torch.Tensor, nn.Parameter)


def snapshot(tensor):
    """A detached CPU copy of a tensor as a plain torch.Tensor, made with the functions captured at import.

    A tensor subclass is stripped to its data first, so its own methods cannot change what is recorded.
    """
    with torch._C.DisableTorchFunctionSubclass():
        return _clone(_detach(torch.Tensor.as_subclass(tensor, torch.Tensor))).cpu()


def subclasses(tensors):
    """Names of the tensor subclasses among tensors (nn.Parameter and buffers are ordinary)."""
    return sorted({type(t).__name__ for t in tensors if type(t) not in PLAIN})


def decode(value):
    """Recipe values are plain data; the string 'nn.X' stands for the class torch.nn.X when torch.nn has a module
    class X (any other string, text that happens to start with "nn." say, stays a string), and {"helper": ...} for an
    object of the public checkers package (see helper)."""
    if isinstance(value, str) and value.startswith("nn.") and _module_class(value[3:]):
        return getattr(nn, value[3:])
    if isinstance(value, dict) and "helper" in value:
        return helper(value)
    return value


def _module_class(name):
    """Whether torch.nn has a public nn.Module subclass called name."""
    found = getattr(nn, name, None) if name.isidentifier() and not name.startswith("_") else None
    return isinstance(found, type) and issubclass(found, nn.Module)


def helper(spec):
    """An object a case passes to the student's function, e.g. a scripted model for a decoding loop.

    Args:
        spec: {"helper": "checkers.<module>:<class>", "kwargs": {...}, "mode": "train" or "eval" (optional),
            "report": "checkers.<module>:<function>" (optional: what the object saw, see observed)}; only the
            public checkers package is importable (it is what the sandbox holds beside this file).
    """
    made = checkers_object(spec["helper"])(**{key: decode(value) for key, value in spec.get("kwargs", {}).items()})
    if "mode" in spec:
        made.train(spec["mode"] == "train")
    return made


def checkers_object(name):
    """The object a "checkers.<module>:<name>" string names (nothing outside the public checkers package)."""
    module, _, attribute = name.partition(":")
    if not module.startswith("checkers."):
        raise ValueError(f"a case's helper must come from the checkers package, not {module!r}")
    return getattr(importlib.import_module(module), attribute)


def observed(specs, args):
    """After a call: for each argument made from a helper spec with a "report", what it saw (plain data), else None.

    E.g. a scripted model passed to a decoding loop reports the mode it ran in and whether gradients were on.
    """
    return [checkers_object(spec["report"])(made) if isinstance(spec, dict) and "report" in spec else None
            for spec, made in zip(specs, args)]


def run(recipe, objects, namespace=None):
    """Run one recipe on objects (the arguments of the task's check call).

    Args:
        recipe: dict with "task", "object" (index into objects) and optional "build", "facts", "attribute" (with
            "rows"), "call", "calls", "values", "watch" and "trained" entries (see grading/cases/parts.py).
        objects: the student's (or the reference's) function, classes or trained model.
        namespace: the notebook's namespace, for a trained model's class.

    Returns:
        dict of plain data and tensors: "facts", "attribute", "structure", "outputs", "inputs_after", "grads",
        "calls" (the torch functions each call made, when the recipe asks: see invoke), "values" (a result of plain
        data, when the recipe asks: see values), "watched" (what the recipe's "watch" saw during the call).
    """
    task = Task(recipe["task"])
    target = objects[recipe["object"]]
    if "trained" in recipe:
        return run_trained(task, target, recipe["trained"], namespace or {})
    module = make_module(task, target, recipe["build"]) if "build" in recipe else target
    record = {}
    if recipe.get("facts"):
        record["facts"] = {name: facts_of(name)(module) for name in recipe["facts"]}
    if "attribute" in recipe:
        record["attribute"] = attribute(module, recipe)
    if "call" in recipe:
        record.update(call(task, module, recipe))
    return record


def attribute(module, recipe):
    """A copy of the module's tensor attribute (e.g. `pe`), only the recipe's rows if it names some; else None."""
    value = getattr(module, recipe["attribute"], None)
    if not isinstance(value, torch.Tensor):
        return None
    if "rows" in recipe and value.dim() == 3:
        value = value[:, recipe["rows"]]  # the positions the visible check looks at
    return snapshot(value)


def make_module(task, cls, spec):
    """Build the class with the pinned keywords, load the recipe's weights by role, set the mode; a spec of an
    "instance" (a class that is no nn.Module, e.g. a tokenizer) is called with its arguments as they are."""
    if spec.get("instance"):
        return task.call(f"{spec['name']}(...)", cls, *[fresh(value) for value in spec.get("args", [])])
    kwargs = {key: decode(value) for key, value in spec.get("kwargs", {}).items()}
    dtype = DTYPES[spec.get("dtype", "float64")]
    # native: built under the default dtype, without the .to(dtype) that would hide a tensor of a fixed dtype
    module = build(task, cls, spec["name"], dtype=dtype, native=spec.get("native", False), **kwargs)
    if spec.get("weights"):
        weights = {role: value.to(dtype) for role, value in spec["weights"].items()}
        load(task, module, slots_of(spec["slots"]), weights, spec["name"])
    module.train(spec.get("mode") == "train")
    return module


def call(task, target, recipe):
    """Call the function or module on copies of the inputs; record outputs, inputs after, gradients."""
    spec = recipe["call"]
    args = [fresh(value) for value in spec.get("args", [])]
    kwargs = {key: fresh(value) for key, value in spec.get("kwargs", {}).items()}
    if recipe.get("grad"):
        for _, tensor in input_tensors(args):
            if tensor.is_floating_point():
                tensor.requires_grad_(True)
    function = getattr(target, spec["method"], None) if spec.get("method") else target
    if function is None:
        task.fail(f"{type(target).__name__} has no method {spec['method']}.")
    if spec.get("raises"):
        return raising(function, args, kwargs, spec)
    if recipe.get("compare") == "devices":
        return devices(task, recipe, function, args, kwargs)
    calls = [] if "calls" in recipe else None
    watcher = helper(recipe["watch"]) if "watch" in recipe else contextlib.nullcontext()
    with watcher:
        results = [invoke(task, recipe.get("what", "the call"), function, args, kwargs, calls)
                   for _ in range(spec.get("repeat", 1))]
    outputs = [leaves(result) for result in results]
    record = {"structure": describe(results[0]),
              "inputs_after": [snapshot(a) if isinstance(a, torch.Tensor) else None for a in args]}
    if calls is not None:
        for inputs in recipe["calls"].get("inputs", []):
            invoke(task, recipe.get("what", "the call"), function, [fresh(value) for value in inputs],
                   {key: fresh(value) for key, value in spec.get("kwargs", {}).items()}, calls)
        record["calls"] = calls
    names = sorted(kwargs)
    reports = observed(spec.get("args", []), args) + observed([spec["kwargs"][key] for key in names],
                                                              [kwargs[key] for key in names])
    if any(report is not None for report in reports):
        record["observed"] = reports
    odd = subclasses(tensor for result in outputs for tensor in result)
    if odd:
        record["subclasses"] = odd
    if recipe.get("grad"):
        record["grads"] = gradients(task, target, recipe, args, outputs[0])
    record["outputs"] = [[snapshot(t) for t in result] for result in outputs]
    if recipe.get("values"):
        record["values"] = values(results[0])
    if "watch" in recipe:  # what a context of the public checkers package saw during the call, as plain data
        record["watched"] = checkers_object(recipe["watch"]["report"])(watcher)
    return record


VALUES_LIMIT = 100_000  # items of a result recorded as values: far above any case's, far below the record's limit


def values(result, depth=0):
    """A result that is plain data (ids, pairs, text) as plain data to compare exactly: an int, str, bool or float as
    it is, a list or tuple as a list (the first VALUES_LIMIT items), a tensor as "tensor" (compared as an output),
    anything else, a subclass included (its own __eq__ could answer anything), as its type's name."""
    if type(result) in (int, str, bool, float):
        return result
    if type(result) in (list, tuple) and depth < 8:
        return [values(item, depth + 1) for item in result[:VALUES_LIMIT]] + (["..."] if len(result) > VALUES_LIMIT
                                                                                else [])
    return "tensor" if isinstance(result, torch.Tensor) else {"type": type(result).__name__}


def devices(task, recipe, function, args, kwargs):
    """The record of a call asked to make its outputs on another device (e.g. "meta"): only where they are.

    An op with no kernel for that device raises NotImplementedError, which only code that did send its tensors there
    can meet: recorded as None, nothing to judge ("Task N is not implemented yet" is then left to the other cases).
    """
    try:
        result = invoke(task, recipe.get("what", "the call"), function, args, kwargs)
    except NotImplementedYet:
        return {"devices": None}
    return {"devices": [str(tensor.device) for tensor in leaves(result)]}


def invoke(task, what, function, args, kwargs, calls=None):
    """function(*args, **kwargs) through task.call; with a list `calls`, also the torch functions the call made, as
    {qualified name: count} appended to it (the recipe's "calls": what a task's text says not to call, or how the
    work grows with the input, is judged from these)."""
    if calls is None:
        return task.call(what, function, *args, **kwargs)
    with recorded_calls() as counts:
        result = task.call(what, function, *args, **kwargs)
    calls.append(dict(counts))
    return result


def raising(function, args, kwargs, spec):
    """The record of a call expected to raise: the built-in kind of what it raised (None: nothing), the reports of
    its helper arguments (e.g. the mode a model was left in after the error) and, when the spec lists "names" (e.g.
    the sizes a pinned message must name), whether each appears in the error's message."""
    message = ""
    try:
        function(*args, **kwargs)
        raised = None
    except Exception as error:  # noqa: BLE001 -- any error is data here
        raised = next(kind.__name__ for kind in type(error).__mro__ if kind.__module__ == "builtins")
        message = str(error)
    names = sorted(kwargs)
    reports = observed(spec.get("args", []), args) + observed([spec["kwargs"][key] for key in names],
                                                              [kwargs[key] for key in names])
    record = {"raised": raised, "observed": reports}
    if spec.get("names"):
        record["named"] = [str(name) in message for name in spec["names"]]
    return record


def fresh(value):
    """An argument as the call gets it: a copy of a tensor, or of the tensors in a tuple or list (a cache of
    (keys, values) per block), so a call that changes them in place cannot reach the recipe; else decode(value)."""
    if isinstance(value, torch.Tensor):
        return _clone(value)
    if type(value) in (tuple, list):
        return type(value)(fresh(item) for item in value)
    return decode(value)


def describe(value):
    """The shape of a result as text: 'tensor', 'seq(tensor,tensor)', or a type name."""
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, (list, tuple)):
        return "seq(" + ",".join(describe(item) for item in value) + ")"
    if isinstance(value, dict):
        return "map(" + ",".join(f"{str(key)[:40]}:{describe(item)}" for key, item in items(value)) + ")"
    return type(value).__name__


def items(mapping):
    """A dict's (key, value) pairs in the order of their keys as text, so two dicts of the same keys line up."""
    return sorted(mapping.items(), key=lambda pair: str(pair[0]))


def leaves(value):
    """The tensors of a result, depth first (the structure says where each sits)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in leaves(item)]
    if isinstance(value, dict):
        return [leaf for _, item in items(value) for leaf in leaves(item)]
    return []


def input_tensors(args):
    """(name, tensor) for each tensor argument ("input 0") and each tensor in a list or tuple argument ("input 0.1",
    e.g. attention maps, one per layer)."""
    named = []
    for index, value in enumerate(args):
        if isinstance(value, torch.Tensor):
            named.append((f"input {index}", value))
        elif type(value) in (tuple, list):
            named += [(f"input {index}.{item}", part) for item, part in enumerate(value)
                      if isinstance(part, torch.Tensor)]
    return named


def gradients(task, target, recipe, args, outputs):
    """Backward from the sum of squares of every floating output; gradients of inputs and weights by role."""
    floating = [t for t in outputs if t.is_floating_point() and t.requires_grad]
    if not floating:
        return {}
    task.call("backward", lambda: sum((t ** 2).sum() for t in floating).backward())
    grads = {name: snapshot(tensor.grad) for name, tensor in input_tensors(args) if tensor.grad is not None}
    slots_name = recipe.get("build", {}).get("slots")
    if slots_name:
        for role, parameter in slots_of(slots_name)(target).items():
            if parameter.grad is not None:
                grads[role] = snapshot(parameter.grad)
    return grads


def run_trained(task, model, spec, namespace):
    """What the grader needs to judge a trained model: what it is, its weights by role and its settings.

    Only data leaves the probe (plain tensors, ints, strings): the grader rebuilds the reference
    architecture from them and measures accuracy itself, so nothing the model's own forward does counts.
    """
    cls = namespace.get(spec["class_name"])
    record = {"facts": {"module": isinstance(model, nn.Module),
                        "instance": isinstance(cls, type) and isinstance(model, cls)}}
    if not record["facts"]["module"]:
        return record
    record["weights"], record["config"] = trained_weights(model, spec["slots"], spec.get("stacks"),
                                                          spec.get("attention_facts"))
    if spec.get("notebook_data"):
        record["notebook_data"] = notebook_data(spec["notebook_data"], namespace)
    return record


def notebook_data(functions, namespace):
    """{name: plain data} the notebook holds beside its trained model, e.g. what its inputs were made with (the
    grader validates it, then uses it on its own data), each read by a function of the public checkers package
    ("module:function", given the notebook's namespace); None where the function fails."""
    data = {}
    for name, function in functions.items():
        try:
            data[name] = facts_of(function)(namespace)
        except Exception:  # noqa: BLE001 -- the notebook's objects may raise anything: nothing recorded
            data[name] = None
    return data


def trained_weights(model, slots_name, stacks=None, attention_facts=None):
    """({role: float64 tensor}, settings): the weights by role, and per block the heads and activation.

    Args:
        stacks: {stack attribute: [attention attributes of each of its blocks]}, in order (an encoder-decoder names
            its decoder's self_attention and cross_attention too); none: a model without a stack of blocks (its
            settings are then empty lists).
        attention_facts: {setting: "module:function"}, more settings read from each attention module by the
            assignment's own function (e.g. the width of a table that tells its head count).

    Settings are plain data the grader validates: {"num_heads": [per attention module of each block, in order],
    "activation": [per block], and each of attention_facts: [per attention module]}, or {"error": why} when the
    model's layout does not have the pinned parts.
    """
    try:
        weights = {role: snapshot(p).double() for role, p in slots_of(slots_name)(model).items()}
        blocks = [(block, attentions) for stack, attentions in (stacks or {}).items()
                  for block in encoder_blocks(model, stack)]
    except Exception as error:  # noqa: BLE001 -- a model of another layout: the grader says why it scores 0
        return {}, {"error": str(error)[:300]}
    attentions = [getattr(block, name, None) for block, names in blocks for name in names]
    settings = {"num_heads": [plain(getattr(attention, "num_heads", None)) for attention in attentions],
                "activation": [next((type(m).__name__ for m in block.feedforward.modules()
                                     if not isinstance(m, (nn.Linear, nn.Dropout, nn.Sequential))), "")
                               if isinstance(getattr(block, "feedforward", None), nn.Module) else ""
                               for block, _ in blocks]}
    for setting, fact in (attention_facts or {}).items():
        settings[setting] = [facts_of(fact)(attention) for attention in attentions]
    return weights, settings
