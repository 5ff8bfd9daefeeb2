"""Every task's test cases (recipes), and what each must produce, computed from the reference.

`build_cases` is instructor-side: it needs the reference namespace (course.reference.load_reference,
derived from solutions/), which never reaches a student or a probe. The recipes it returns hold
inputs and weights only; `expected.py` runs them on the reference to get the values to compare with.
"""

from .hidden import hidden_cases
from .trained import TRAINED, trained_case
from .visible import VISIBLE


def build_cases(reference, assignment):
    """{task: [recipe, ...]} for every task of the registry's assignment: visible checks' cases, then hidden ones."""
    cases = {}
    for task in assignment.tasks:
        if assignment.tasks[task].trains:
            cases[task] = [trained_case(task)]
        else:
            cases[task] = VISIBLE[task]() + hidden_cases(task, reference)
    return cases
