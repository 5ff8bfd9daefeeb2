"""An assignment lives in one place: the code every assignment shares names no assignment, none of an assignment's
classes and no task number (course/slices.py lists where an assignment's own parts live).

The search reads the registry, so an assignment added to course.toml is searched for too.
"""
import ast
import re
from pathlib import Path

import pytest

from course.reference import reference_source
from course.registry import assignments

ROOT = Path(__file__).resolve().parent.parent
TASK_NUMBER = r"\b[Tt]asks? \d|\btask_\d"  # "Task 3", "tasks 3 and 7", check_task_3


def shared_files(root=ROOT):
    """The files every assignment shares: the top of checkers/, course_lib/ but its assignments' modules, grading/,
    course/*.py, tools/, tests/*.py and the checkout's own Python files."""
    names = {assignment.name for assignment in assignments(root)}
    own = lambda path: any(part in names or part.removesuffix(".py") in names for part in path.parts)
    files = [*root.glob("checkers/*.py"), *root.glob("course/*.py"), *root.glob("tests/*.py"), *root.glob("*.py")]
    for folder in ("course_lib", "grading", "tools"):
        files += [path for path in (root / folder).rglob("*.py") if not own(path.relative_to(root / folder))]
    return sorted(files)


def assignment_names(assignment):
    """{pattern: what it is} naming the assignment: its name and the classes its reference defines."""
    tree = ast.parse(reference_source(assignment))
    classes = sorted(node.name for node in tree.body if isinstance(node, ast.ClassDef))
    # torch's own layer of the same name (nn.MultiheadAttention) is not the assignment's class
    return {rf"\b{assignment.name}\b": f"the assignment {assignment.name}",
            **{rf"(?<!nn\.)\b{name}\b": f"{assignment.name}'s class {name}" for name in classes}}


def mentions(path, patterns):
    """['line N: what'] for each line of path that matches a pattern."""
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        found += [f"{path.relative_to(ROOT)}:{number}: {what}" for pattern, what in patterns.items()
                  if re.search(pattern, line)]
    return found


def test_the_search_has_something_to_find():
    """The search is not vacuous: every assignment has a name and classes to look for, and a planted line is found."""
    for assignment in assignments():
        patterns = assignment_names(assignment)
        assert len(patterns) > 2, assignment.name
        planted = f"x = {assignment.name}_model()  # Task 3"
        assert any(re.search(p, planted) for p in patterns) and re.search(TASK_NUMBER, planted)
    assert len(shared_files()) > 50


@pytest.mark.parametrize("assignment", assignments(), ids=lambda a: a.name)
def test_shared_code_names_no_assignment(assignment):
    found = [line for path in shared_files() for line in mentions(path, assignment_names(assignment))]
    assert not found, (f"{len(found)} lines of shared code name {assignment.name}; move them into its own folders "
                       "(course/slices.py):\n" + "\n".join(found))


def test_shared_code_names_no_task_number():
    found = [line for path in shared_files() for line in mentions(path, {TASK_NUMBER: "a task number"})]
    assert not found, f"{len(found)} lines of shared code name a task number:\n" + "\n".join(found)
