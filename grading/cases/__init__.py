"""Every task's test cases (recipes), and what each must produce, computed from the reference.

`build_cases` is instructor-side: it needs the reference namespace (tools/make_fixtures.load_reference,
derived from solutions/), which never reaches a student or a probe. The recipes it returns hold
inputs and weights only; `expected.py` runs them on the reference to get the values to compare with.
"""
from course_lib.data import VOCAB_SIZE

from .hidden import hidden_cases
from .trained import TRAINED, trained_case
from .visible import VISIBLE

TASKS = (1, 2, 3, 4, 5, 6, 7, 8)


def build_cases(reference):
    """{task: [recipe, ...]} for tasks 1-8: the visible checks' cases first, then the hidden ones."""
    cases = {}
    for task in TASKS:
        if task in TRAINED:
            cases[task] = [trained_case(task, VOCAB_SIZE)]
        else:
            cases[task] = VISIBLE[task]() + hidden_cases(task, reference)
    return cases
