"""An assignment lives in one place: the code every assignment shares names no assignment, none of an assignment's
classes and no task number, and reads by name no attribute that only some assignments pin (course/slices.py lists
where an assignment's own parts live).

The search reads the registry, so an assignment added to course.toml is searched for too.
"""
import ast
import re
from pathlib import Path

import pytest

from course.reference import reference_source
from course.registry import assignments

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parent.parent
TASK_NUMBER = r"\b[Tt]asks? \d|\btask_\d"  # "Task <N>", "tasks <N> and <M>", check_task_<N>


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
    # an underscore separates words here: <name>_defaults and check_<name> name an assignment too
    return {rf"(?<![A-Za-z0-9]){assignment.name}(?![A-Za-z0-9])": f"the assignment {assignment.name}",
            **{rf"(?<!nn\.)\b{name}\b": f"{assignment.name}'s class {name}" for name in classes}}


def pinned_attributes(assignment):
    """The attributes the assignment's reference classes set on self (self.x = ..., self.register_buffer("x", ...))."""
    names = set()
    for node in ast.walk(ast.parse(reference_source(assignment))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "register_buffer" and node.args \
                and isinstance(node.args[0], ast.Constant):
            names.add(node.args[0].value)
    return names


READERS = ("getattr", "hasattr", "setattr", "delattr", "_child")  # _child: checkers/_weights.py's pinned submodule


def attributes_read(source):
    """[(line, name)] for each attribute the code reads by a constant name: getattr(module, "name"), _child(...)."""
    return [(node.lineno, node.args[1].value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in READERS
            and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)]


def own_attributes(pinned):
    """{name: the assignments that pin it} for the attributes some but not all assignments pin: reading one is an
    assignment's business (its facts, its weight roles), so it lives in that assignment's folders."""
    every = set.intersection(*pinned.values())
    return {name: sorted(a for a, names in pinned.items() if name in names)
            for name in set.union(*pinned.values()) - every}


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
        planted = f"x = {assignment.name}_model()  # Task {len(assignment.tasks)}"
        assert any(re.search(p, planted) for p in patterns) and re.search(TASK_NUMBER, planted)
    assert len(shared_files()) > 50


@pytest.mark.parametrize("assignment", assignments(), ids=lambda a: a.name)
def test_shared_code_names_no_assignment(assignment):
    found = [line for path in shared_files() for line in mentions(path, assignment_names(assignment))]
    assert not found, (f"{len(found)} lines of shared code name {assignment.name}; move them into its own folders "
                       "(course/slices.py):\n" + "\n".join(found))


def test_shared_code_reads_no_attribute_of_some_assignments_only():
    """Shared code reads by name only the attributes every assignment pins (num_heads, q_proj, feedforward, ...): a
    fact or weight role of one assignment's classes (its [CLS] token, its tables) is read in checkers/<assignment>/."""
    own = own_attributes({assignment.name: pinned_attributes(assignment) for assignment in assignments()})
    found = [f"{path.relative_to(ROOT)}:{line}: {name!r}, pinned by {', '.join(own[name])} only"
             for path in shared_files() for line, name in attributes_read(path.read_text()) if name in own]
    assert not found, f"{len(found)} reads of an attribute only some assignments pin:\n" + "\n".join(found)


def test_the_attribute_search_has_something_to_find():
    """The rule is not vacuous: attributes only some assignments pin exist, and a read of one is found."""
    pinned = {assignment.name: pinned_attributes(assignment) for assignment in assignments()}
    own = own_attributes(pinned)
    name = sorted(own)[0]
    assert attributes_read(f"x = getattr(module, {name!r}, None)\ny = getattr(module, name)") == [(1, name)]
    assert all(pinned.values()) and own


def test_shared_code_names_no_task_number():
    found = [line for path in shared_files() for line in mentions(path, {TASK_NUMBER: "a task number"})]
    assert not found, f"{len(found)} lines of shared code name a task number:\n" + "\n".join(found)
