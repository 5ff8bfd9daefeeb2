"""The parts every registered assignment brings with it (its "slice"), and which of them are missing.

Adding an assignment means adding these and nothing else (docs/maintainers.md: "Add an assignment");
tests/test_registry.py fails while any registered assignment lacks one.
"""
import ast

# (what the part is, where it lives relative to the checkout, how it is made)
PARTS = (
    ("reference notebook", "solutions/{name}/{name}.ipynb", "written by hand, with nbgrader markup"),
    ("student notebook", "notebooks/{name}/{name}.ipynb", "`make release ASSIGNMENT={name}`"),
    ("checks", "checkers/{name}/__init__.py", "exports check_task_<N> for every task"),
    ("fixture builders", "course/fixtures/{name}.py", "BUILDERS, one per definition task, and OUTPUT_KEYS"),
    ("fixtures", "checkers/{name}/fixtures", "`make fixtures ASSIGNMENT={name}`"),
    ("known mistakes", "course/mistakes/{name}.py", "MUTANTS: edits of the reference that a check must name"),
    ("hidden grading cases", "grading/cases/{name}/__init__.py", "the cases `make grade` scores every task with"),
    ("tests", "tests/{name}/__init__.py", "its checks tested both ways: planted mistakes fail, variants pass"),
    ("bench", "tools/bench/{name}.py",
     "SETTINGS, SECTIONS, goals (tools/bench/runner.py): its layers against torch-native ones, time to target"),
)


def names_defined(path):
    """Top-level names a Python file defines, assigns or imports, read without running it."""
    names = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def missing_parts(assignment):
    """What the assignment's slice lacks, one line each (empty when it is whole)."""
    missing = []
    for what, pattern, how in PARTS:
        if not (assignment.root / pattern.format(name=assignment.name)).exists():
            missing.append(f"{assignment.name}: no {what} ({pattern.format(name=assignment.name)}: {how})")
    for pattern, needed in (("course/fixtures/{name}.py", {"BUILDERS", "OUTPUT_KEYS"}),
                            ("course/mistakes/{name}.py", {"MUTANTS"}),
                            ("tools/bench/{name}.py", {"SETTINGS", "SECTIONS", "goals"}),
                            ("checkers/{name}/__init__.py", {t.check_function for t in assignment.tasks.values()})):
        path = assignment.root / pattern.format(name=assignment.name)
        if path.is_file() and needed - names_defined(path):
            missing.append(f"{assignment.name}: {path.relative_to(assignment.root)} defines no "
                           f"{', '.join(sorted(needed - names_defined(path)))}")
    foreign = [t.check for t in assignment.tasks.values()
               if t.check_module.split(".")[:2] != ["checkers", assignment.name]]
    if foreign:
        missing.append(f"{assignment.name}: checks outside checkers.{assignment.name}: {', '.join(foreign)}")
    tests = assignment.root / "tests" / assignment.name
    if tests.is_dir() and not any(tests.glob("test_*.py")):
        missing.append(f"{assignment.name}: tests/{assignment.name}/ holds no test_*.py")
    return missing
