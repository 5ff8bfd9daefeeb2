"""Compare one case's record from the probe with the reference's record; say what differs, in one line.

Messages name the case and the quantity (shape, dtype, largest deviation), never an expected value.
"""
import torch

from ..cases import fact_problem
from ..recipes import checkers_object


def human(structure):
    """'tensor' -> 'one tensor', 'seq(tensor,tensor)' -> 'a sequence of 2 items', else 'a <type>'."""
    if structure == "tensor":
        return "one tensor"
    if structure.startswith("map("):
        return f"a dict of keys {', '.join(repr(key) for key in top_keys(structure))}"
    if structure.startswith("seq("):
        depth, items = 0, 1 if structure != "seq()" else 0
        for char in structure[4:-1]:
            depth += (char == "(") - (char == ")")
            items += char == "," and depth == 0
        return f"a sequence of {items} item{'s' if items != 1 else ''}"
    return f"a {structure}"


def top_keys(structure):
    """The keys of a 'map(key:structure,...)' description, outer level only."""
    keys, depth, start = [], 0, 4
    for index, char in enumerate(structure[4:-1] + ",", start=4):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            keys.append(structure[start:index].split(":", 1)[0])
            start = index + 1
    return [key for key in keys if key]


def compare_tensor(what, got, expected, atol, rtol, row_atol=0.0, positions=None):
    """None when got matches expected within atol + rtol·|expected| (+ row_atol·position), else the problem.

    Args:
        positions: the position of each row (dim -2) for row_atol; default 0, 1, 2, ...
    """
    if not isinstance(got, torch.Tensor):
        return f"{what} is not a tensor"
    if tuple(got.shape) != tuple(expected.shape):
        return f"{what} has shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if got.dtype != expected.dtype:
        return f"{what} has dtype {got.dtype}, expected {expected.dtype} (the dtype should follow the input)"
    if got.is_floating_point() and not torch.isfinite(got).all():
        return f"{what} contains NaN or inf"
    got, expected = got.double(), expected.double()
    tolerance = atol + rtol * expected.abs()
    if row_atol and expected.dim() >= 2:
        rows = torch.arange(expected.size(-2)) if positions is None else positions
        tolerance = tolerance + row_atol * rows.to(torch.float64).unsqueeze(-1)
    excess = (got - expected).abs() - tolerance
    if excess.numel() and excess.max() > 0:
        return f"{what} differs from the reference (largest deviation {(got - expected).abs().max().item():.3g})"
    return None


def compare_facts(got, expected):
    """The sentence for the first fact (name -> {key: value}) whose value differs from the reference's, or None."""
    for fact, values in expected.items():
        for key, value in values.items():
            if got.get(fact, {}).get(key) != value:
                return fact_problem(fact, key)
    return None


def counts(record):
    """(tensors per call, inputs recorded after the call) of a record: the comparison goes through all of them."""
    return ([len(result) for result in record.get("outputs", [])], len(record.get("inputs_after", [])),
            len(record.get("observed", [])))


def compare_devices(got, expected):
    """The problem with where a call made its outputs (recipes.devices), or None; got None: an op of the student's
    had no kernel there, which only a call that sent its tensors there meets, so there is nothing to hold against it."""
    if got is None or got == expected:
        return None
    if not isinstance(got, list) or not all(isinstance(device, str) for device in got):
        raise ValueError("the record's devices are not a list of names")
    return (f"the output is on {', '.join(sorted(set(got))) or 'no device'} where the call asked for "
            f"{', '.join(sorted(set(expected)))}: the device argument never reaches the tensors it makes")


def compare_outputs(recipe, got, expected):
    """Structure, then every output tensor, then the inputs (unchanged), then the gradients."""
    if recipe.get("compare") == "devices":
        return compare_devices(got.get("devices"), expected["devices"])
    if got.get("structure") != expected["structure"]:
        return f"returned {human(got.get('structure', 'nothing'))}, expected {human(expected['structure'])}"
    if counts(got) != counts(expected):  # a real call records every output and input: a short list is forged
        raise ValueError("the record leaves out outputs or inputs that its structure says it has")
    if recipe.get("compare") == "differ":
        first, second = got["outputs"][0], got["outputs"][-1]
        same = all(torch.equal(a, b) for a, b in zip(first, second))
        return "two forward passes in train mode gave the same output: dropout is not applied" if same else None
    tolerance = (recipe.get("atol", 1e-6), recipe.get("rtol", 1e-6))
    single = expected["structure"] == "tensor"
    for index, (mine, theirs) in enumerate(zip(got["outputs"][0], expected["outputs"][0])):
        problem = compare_tensor("the output" if single else f"result[{index}]", mine, theirs, *tolerance)
        if problem:
            return problem
    if "values" in expected and got.get("values") != expected["values"]:  # plain data (ids, pairs, text): exact
        return "the result differs from the reference"
    for mine, theirs in zip(got.get("inputs_after", []), expected["inputs_after"]):
        if theirs is not None and (not isinstance(mine, torch.Tensor) or not torch.equal(mine, theirs)):
            return "the call modified its input in place (e.g. `x += ...`); build a new tensor instead"
    for mine, theirs in zip(got.get("observed", []), expected.get("observed", [])):
        problem = compare_observed(mine, theirs)
        if problem:
            return problem
    return compare_grads(got.get("grads", {}), expected.get("grads", {}), tolerance, recipe.get("grad_rows_sum_to_1"))


OBSERVED_PROBLEMS = {
    "train_mode": "the model ran in train mode (dropout active): call model.eval() before using it",
    "gradients": "the model ran with gradients enabled: wrap the loop in `with torch.no_grad():`",
    "mode_after": ("the call left the model in another train/eval mode than it had: remember model.training first "
                   "and call model.train(was_training) before returning"),
    "idle_calls": "the model was called again after every sequence had produced EOS: stop once all are finished",
    "generator": ("the generator was drawn from another number of times than the pinned sampling draws from it: "
                  "once per call with torch.multinomial(probabilities, 1, generator=generator), never at "
                  "temperature 0 (greedy) and never from the global random generator"),
    "random_state_kept": ("the call changed the global random state: greedy decoding takes the argmax of the logits "
                          "and draws nothing (no torch.multinomial, no Categorical(...).sample(), no seeding)"),
    "fed": ("the model was not fed the positions generate should feed it: with use_cache=True the first call takes "
            "the whole prompt and every later call only the newest token with the cache it returned; with "
            "use_cache=False every call takes the whole sequence so far and no cache; one call per new token"),
}


def compare_observed(got, expected):
    """What a helper object passed to the call saw (its report) against what it saw under the reference."""
    if expected is None:
        return None
    for key, value in expected.items():
        if not isinstance(got, dict) or got.get(key) != value:
            return OBSERVED_PROBLEMS.get(key, f"the object passed to the call saw another `{key}` than the reference")
    return None


def compare_grads(got, expected, tolerance, rows_sum_to_1=False):
    """Every gradient the reference has must exist and match (looser: backward adds its own rounding).

    rows_sum_to_1: the inputs are maps whose rows sum to 1 (attention weights), so answers that agree on every such
    map may differ in their gradient along each row's all-ones direction (0.5 * A + 0.5 * I against (A + I) / its row
    sums): the gradients are compared with each row's mean taken out, their part along such maps.
    """
    atol, rtol = (max(value, 1e-6) * 10 for value in tolerance)
    for name, value in expected.items():
        if name not in got:
            return f"no gradient reaches {name}: is it detached, or created but not used?"
        mine = got[name]
        if isinstance(mine, torch.Tensor) and mine.numel() == value.numel():
            mine = mine.reshape(value.shape)  # a weight may hold the same numbers in another shape, e.g. (1, 1, D)
        if rows_sum_to_1 and isinstance(mine, torch.Tensor) and mine.shape == value.shape:
            mine, value = mine - mine.mean(dim=-1, keepdim=True), value - value.mean(dim=-1, keepdim=True)
        problem = compare_tensor(f"the gradient of {name}", mine, value, atol, rtol)
        if problem:
            return problem
    return None


def compare_case(recipe, got, expected):
    """The problem with one (non-training) case's record, or None when it matches the reference."""
    if got is None:
        return "not run"
    if "error" in got:
        return got["error"]
    problem = compare_facts(got.get("facts", {}), expected.get("facts", {}))
    if not problem and "attribute" in recipe:
        if expected.get("attribute") is None or got.get("attribute") is None:
            problem = f"no tensor `{recipe['attribute']}`" if got.get("attribute") is None else None
        else:
            problem = compare_tensor(f"`{recipe['attribute']}`", got["attribute"], expected["attribute"],
                                     recipe.get("atol", 1e-6), recipe.get("rtol", 0.0), recipe.get("row_atol", 0.0),
                                     recipe.get("rows"))
    if not problem and "call" in recipe:
        raises = recipe["call"].get("raises")
        problem = compare_raised(got, expected) if raises else compare_outputs(recipe, got, expected)
    if not problem and "calls" in recipe:
        problem = compare_calls(recipe, got)
    if not problem and "watch" in recipe:  # the judge of the public checkers package reads the probe's report
        problem = checkers_object(recipe["watch"]["judge"])(got.get("watched"))
    return problem


def compare_calls(recipe, got):
    """What the torch functions the call made show to be wrong, or None: the recipe's "calls" names the judge, a
    function of the public checkers package (the one the task's check uses, so both say the same), and "inputs", the
    arguments of further calls made only to count them (e.g. a larger image, to see whether the work grows)."""
    spec, call = recipe["calls"], recipe["call"]
    inputs = [call.get("args", [])] * call.get("repeat", 1) + list(spec.get("inputs", []))
    counts = got.get("calls")
    if not isinstance(counts, list) or len(counts) != len(inputs):
        raise ValueError("the record leaves out the calls its recipe asked for")
    return checkers_object(spec["judge"])(counts, inputs)


def compare_raised(got, expected):
    """A call that must raise: the same built-in kind of error as the reference, its message naming what the
    reference's names (the case's "names"), then what its helpers saw."""
    if got.get("raised") != expected["raised"]:
        raised = got.get("raised")
        return (f"the call should raise a {expected['raised']}, but "
                + (f"it raised a {str(raised)[:40]}" if raised else "it raised nothing"))
    if "named" in expected and got.get("named") != expected["named"]:
        return "the error's message should name the sizes that do not fit, as the task asks"
    for mine, theirs in zip(got.get("observed", []), expected.get("observed", [])):
        problem = compare_observed(mine, theirs)
        if problem:
            return problem
    return None
