"""What every case must produce: the recipes run on the reference, in the grader's own process.

The reference comes from solutions/ through course.reference (never a copy);
nothing computed here is written where a probe or a student can read it.
"""
import torch

from course.reference import load_reference, reference_source
from course_lib.device import cpu_threads

from ..cases import evaluation_data
from ..recipes import run


def reference_namespace(assignment, source_notebook=None):
    """The reference classes and functions, executed from the answer cells of the source notebook.

    Args:
        assignment: the registry's Assignment (which tasks are answered by definitions).
        source_notebook: the solutions notebook (default: the assignment's in the checkout).
    """
    return load_reference(reference_source(assignment, source_notebook))


def expected_records(cases, reference, names):
    """{task: [record per case]}: the reference's record of every recipe; for a trained task its spec and data.

    Args:
        cases: {task: [recipe, ...]} from grading.cases.build_cases.
        reference: the reference namespace.
        names: {task: [argument names of the check call]}, e.g. {2: ["Attention"], ...}.
    """
    with cpu_threads(1):  # repeatable on one machine: multi-threaded float64 sin differed in the last bits
        return {task: [_record(recipe, reference, names[task]) for recipe in recipes]
                for task, recipes in cases.items()}


def _record(recipe, reference, names):
    if "trained" in recipe:  # judged on the grader's own data: the spec (trusted, from the cases) and the data
        return dict(recipe["trained"], **evaluation_data(recipe["trained"]))
    # a check may also take the student's trained model (e.g. check(generate, model)), which the reference
    # namespace has not: the cases of such a task never use it (they pass a helper model instead)
    objects = [reference.get(name) for name in names]
    torch.manual_seed(0)  # dropout in train mode is the only randomness, and it is never compared by value
    return run(recipe, objects)
