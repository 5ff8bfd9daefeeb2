"""Small builders for recipes (see grading/recipes.py), so the case lists read like a table."""
import torch

from checkers._core import Task
from checkers._modules import build

from ..recipes import decode, slots_of


def recipe(task, name, visible, obj=0, **parts):
    """One test case of a task.

    Args:
        task: the task number.
        name: how reports and feedback name the case (never its expected values).
        visible: True for a case the notebook's own check also runs.
        obj: index of the object in the task's check call, e.g. 1 for the second name the check takes.
        parts: "build", "call", "grad", "facts", "attribute", "trained", "calls" (see counted), "watch" (see watch),
            "values" (True: the result is plain data, ids or text, compared exactly), and comparison settings
            ("atol", "rtol", "row_atol", "compare", "grad_rows_sum_to_1").
    """
    return {"task": task, "name": name, "visible": visible, "object": obj, **parts}


def module(name, slots=None, weights=None, dtype="float64", mode="eval", native=False, **kwargs):
    """How to build the object: the pinned class name, its keywords, and weights to load by role.

    native: build it under the default dtype `dtype` and never cast it, as a student's notebook does.
    """
    return {"name": name, "kwargs": kwargs, "slots": slots, "weights": weights or {}, "dtype": dtype, "mode": mode,
            "native": native}


def instance(name, *args):
    """How to build an object of a class that is no nn.Module (e.g. a tokenizer): the pinned class name called with
    args (plain data) as they are; nothing is loaded or cast."""
    return {"name": name, "args": list(args), "instance": True}


def called(*args, method=None, repeat=1, raises=False, names=(), **kwargs):
    """How to call the object (or one of its methods) on the inputs; raises: the call is expected to raise, and only
    the kind of error it raises (and what its helper arguments saw) is compared, and whether its message holds each
    of names (e.g. the sizes a pinned message names)."""
    spec = {"args": list(args), "kwargs": kwargs, "method": method, "repeat": repeat}
    spec = dict(spec, names=[str(name) for name in names]) if names else spec
    return dict(spec, raises=True) if raises else spec


def counted(judge, *inputs):
    """Record the torch functions the call makes, and makes again on each of inputs (lists of positional arguments,
    e.g. a larger image); judge ("checkers.<module>:<function>", the task's check uses the same) takes those counts
    and all the calls' arguments and says what is wrong, or None (see grading/judge/compare.py: compare_calls)."""
    return {"judge": judge, "inputs": [list(arguments) for arguments in inputs]}


def watch(name, report, judge, **kwargs):
    """A context of the public checkers package ("checkers.<module>:<class>", e.g. a torch function mode) the call
    runs inside, in the probe; report ("checkers.<module>:<function>") gives what it saw as plain data, and judge (the
    same package's) says in the grader what is wrong with that report, or None (e.g. a tensor the task's text says
    never to build, which counted calls cannot see)."""
    return {"helper": name, "kwargs": kwargs, "report": report, "judge": judge}


def helper(name, report=None, mode=None, **kwargs):
    """An argument the probe builds from the public checkers package ("checkers.<module>:<class>"), e.g. a scripted
    model for a decoding function; report ("checkers.<module>:<function>") says what it saw during the call, as plain
    data compared with what it saw under the reference (see grading/recipes.py: helper, observed)."""
    spec = {"helper": name, "kwargs": kwargs}
    spec.update({key: value for key, value in (("report", report), ("mode", mode)) if value is not None})
    return spec


def random_weights(reference_class, name, slots, generator, scale=0.5, **kwargs):
    """Distinct random values for every weight role of a module of the reference class."""
    kwargs = {key: decode(value) for key, value in kwargs.items()}
    shapes = slots_of(slots)(build(Task(0), reference_class, name, **kwargs))
    return {role: torch.randn(p.shape, generator=generator, dtype=torch.float64) * scale for role, p in shapes.items()}


def randn(generator, *shape, scale=1.0):
    return torch.randn(shape, generator=generator, dtype=torch.float64) * scale


def random_mask(generator, *shape):
    """Bool mask with at least one allowed key per row (a fully masked row has no defined softmax)."""
    mask = torch.rand(shape, generator=generator) < 0.55
    allowed = torch.randint(shape[-1], shape[:-1], generator=generator)
    return mask.scatter(-1, allowed.unsqueeze(-1), True)


def one_hot(generator, batch_size, seq_len, input_dim):
    tokens = torch.randint(input_dim, (batch_size, seq_len), generator=generator)
    return torch.nn.functional.one_hot(tokens, input_dim).double()


def assemble(assignment, reference, visible, hidden_cases, trained_case):
    """{task: [recipe, ...]}: a training task's one trained case; another task's visible cases, then hidden ones.

    Args:
        visible: {task: function returning that task's visible-check recipes}.
        hidden_cases: hidden_cases(task, reference) -> recipes; trained_case(task) -> the trained recipe.
    """
    return {task: [trained_case(task)] if spec.trains else visible[task]() + hidden_cases(task, reference)
            for task, spec in assignment.tasks.items()}
