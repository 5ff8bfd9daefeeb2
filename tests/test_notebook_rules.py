"""The notebook rules every assignment's notebooks follow, one parametrised test each (tests/notebook_text.py).

What is particular to one assignment (its tasks' rhythm and exceptions, its examples, its measured sentences) stays
in course/<assignment>/tests/test_notebook_text.py. The first assignment's notebook predates the import-cell, glossary,
short-cell and titled-plot rules, so those run from the second assignment on (LATER). Shape comments are
checked per assignment, each with the glossary and shape functions its notebook allows.
"""
import matplotlib

matplotlib.use("Agg")

import pytest

from course.registry import assignments
from notebook_text import (cell_length_problems, import_cell, import_problems, placeholders,
                           plot_problems, staff_note_problems, tasks_of, text_macro_problems, time_claim_problems)

pytestmark = pytest.mark.fast

EVERY = assignments()
LATER = EVERY[1:]
ids = lambda assignment: assignment.name
BOTH = pytest.mark.parametrize("kind", ["source_notebook", "release_notebook"], ids=["solutions", "notebooks"])


@BOTH
@pytest.mark.parametrize("assignment", EVERY, ids=ids)
def test_no_underscore_inside_text_macros(assignment, kind):
    assert text_macro_problems(getattr(assignment, kind)) == []


@pytest.mark.parametrize("assignment", EVERY, ids=ids)
def test_student_notebook_holds_no_note_for_course_staff(assignment):
    assert staff_note_problems(assignment.release_notebook) == []


@pytest.mark.parametrize("assignment", EVERY, ids=ids)
def test_no_time_claim_outside_the_marked_sentences(assignment):
    assert time_claim_problems(assignment.source_notebook) == []


@pytest.mark.parametrize("assignment", LATER, ids=ids)
def test_no_placeholder_is_left_in_the_text(assignment):
    assert placeholders(assignment.source_notebook) == []


@BOTH
@pytest.mark.parametrize("assignment", LATER, ids=ids)
def test_the_import_cell_imports_every_check_and_nothing_unused(assignment, kind):
    assert import_problems(getattr(assignment, kind), assignment.name, tasks_of(assignment.name)) == []


@pytest.mark.parametrize("assignment", LATER, ids=ids)
def test_the_import_cell_runs(assignment):
    """Every name the student's import cell asks for exists in checkers and course_lib."""
    namespace = {}
    exec(compile(import_cell(assignment.release_notebook)[1]["source"], "<import cell>", "exec"), namespace)
    assert all(f"check_task_{task}" in namespace for task in assignment.tasks)
    assert f"{assignment.name}_defaults" in namespace


@BOTH
@pytest.mark.parametrize("assignment", LATER, ids=ids)
def test_given_code_cells_are_short(assignment, kind):
    assert cell_length_problems(getattr(assignment, kind)) == []


@BOTH
@pytest.mark.parametrize("assignment", LATER, ids=ids)
def test_plots_have_titles_and_labelled_axes(assignment, kind):
    assert plot_problems(getattr(assignment, kind)) == []
