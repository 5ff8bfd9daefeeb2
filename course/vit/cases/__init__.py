"""The vit assignment's test cases: the visible checks' own, hidden ones, and the trained task's spec.

See grading/cases/__init__.py for what an assignment's cases package provides.
"""

from grading.cases.parts import assemble
from .facts import FACT_PROBLEMS
from .hidden import hidden_cases
from .scored_data import STAND_IN_NOTE, stand_ins, stand_in_rows
from .trained_model import evaluation_data, trained_accuracy, trained_case, trained_config
from .visible import VISIBLE

__all__ = ["FACT_PROBLEMS", "STAND_IN_NOTE", "stand_ins", "stand_in_rows",
           "build_cases", "evaluation_data", "trained_accuracy", "trained_config"]


def build_cases(reference, assignment):
    """{task: [recipe, ...]} for every task of the registry's assignment: visible checks' cases, then hidden ones."""
    return assemble(assignment, reference, VISIBLE, hidden_cases, trained_case)
