"""The course registry (course.toml) matches the notebooks, the checkers and nbgrader_config.py, and the layers
import only what they may: grading/ nothing from tools/, the student packages nothing instructor-side."""
import ast
import importlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell

from course_paths import ROOT

from course import registry
from course.slices import PARTS, missing_parts
from grading.collect import collect
from grading.folders import load_config

pytestmark = pytest.mark.fast

STUDENT_PACKAGES = ("checkers", "course_lib")
INSTRUCTOR_PACKAGES = ("grading", "tools", "course")


def check_cells(notebook):
    """{grade_id: nbgrader metadata} of the notebook's grade cells."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    return {cell["metadata"]["nbgrader"]["grade_id"]: (cell["metadata"]["nbgrader"], "".join(cell["source"]))
            for cell in cells if cell["metadata"].get("nbgrader", {}).get("grade")}


def problems(assignment):
    """Everything about one assignment that disagrees with its registry entry."""
    found = []
    for notebook in (assignment.source_notebook, assignment.release_notebook):
        if not notebook.is_file():
            found.append(f"{notebook.relative_to(assignment.root)} is missing")
            continue
        cells = check_cells(notebook)
        expected = {f"check_task_{number}" for number in assignment.tasks}
        if set(cells) != expected:
            found.append(f"{notebook.name}: grade cells {sorted(cells)}, registered {sorted(expected)}")
        for number, task in assignment.tasks.items():
            metadata, source = cells.get(f"check_task_{number}", ({}, ""))
            if not metadata.get("locked") or metadata.get("points") != task.points:
                found.append(f"{notebook.name}: check_task_{number} is not locked with {task.points} point(s)")
            if f"{task.check_function}(" not in source:
                found.append(f"{notebook.name}: check_task_{number} does not call {task.check_function}")
    for number, task in assignment.tasks.items():
        if task.check_module.split(".")[0] not in STUDENT_PACKAGES:
            found.append(f"task {number}: {task.check} is not in the student package")
            continue
        try:
            function = getattr(importlib.import_module(task.check_module), task.check_function)
        except (ImportError, AttributeError) as error:
            found.append(f"task {number}: {task.check} cannot be imported ({error})")
            continue
        if not callable(function):
            found.append(f"task {number}: {task.check} is not a function")
    total = sum(assignment.points.values())  # 10 for most assignments; a larger one may be worth more (README)
    if total < 10 or total != int(total):
        found.append(f"points sum to {total}, not a whole number of at least 10")
    return found


def copy_registry(tmp_path, edit):
    """A scratch course folder whose course.toml is the real one after edit(text), with the real notebooks."""
    for name in ("solutions", "notebooks"):
        shutil.copytree(ROOT / name, tmp_path / name)
    text = (ROOT / "course.toml").read_text()
    edited = edit(text)
    assert edited != text, "the edit changed nothing"
    (tmp_path / "course.toml").write_text(edited)
    return tmp_path


def test_registry_parses_in_release_order():
    names = [assignment.name for assignment in registry.assignments()]
    assert names and len(set(names)) == len(names)
    done = subprocess.run([sys.executable, "-m", "course.registry", "names"], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert done.stdout.split() == names


@pytest.mark.parametrize("name", [assignment.name for assignment in registry.assignments()])
def test_every_assignment_matches_its_notebooks_and_checkers(name):
    assert problems(registry.assignment(name)) == []


FIRST = registry.assignments()[0]  # the edits below break the first assignment of course.toml
LAST_TASK = FIRST.tasks[max(FIRST.tasks)]  # no task needs it: needs name earlier tasks only
FIRST_TASK = FIRST.tasks[min(FIRST.tasks)]
TRAINED = next(task for task in FIRST.tasks.values() if task.needs)  # a trained task and the tasks it needs
DEFINITION = FIRST.definition_tasks
# a second assignment appended to course.toml, whose one task borrows the first assignment's first check
SECOND = ('\n[[assignments]]\nname = "decoder"\ntitle = "x"\n[assignments.tasks]\n'
          f'1 = {{ points = 10, check = "{FIRST_TASK.check}", trains = false }}\n')


def task_line(text, number):
    """The line of the first assignment's task number in course.toml's text."""
    block = text.split("[[assignments]]")[1]
    lines = [line for line in block.splitlines() if line.startswith(f"{number} = {{")]
    assert len(lines) == 1, (number, lines)
    return lines[0]


def edit_task(number, old, new):
    """An edit of course.toml's text: old becomes new in the first assignment's line of task number only."""
    def edit(text):
        line = task_line(text, number)
        assert old in line, (old, line)
        return text.replace(line, line.replace(old, new))
    return edit


def drop_task(number):
    return lambda text: text.replace(task_line(text, number) + "\n", "")


def points_of(task):
    return f"points = {task.points}"


@pytest.mark.parametrize("edit, problem", [
    (edit_task(LAST_TASK.number, points_of(LAST_TASK), f"points = {LAST_TASK.points + 1}"),
     f"check_task_{LAST_TASK.number} is not locked with {LAST_TASK.points + 1}"),
    (edit_task(LAST_TASK.number, LAST_TASK.check, f"{LAST_TASK.check_module}:no_such_check"), "cannot be imported"),
    (edit_task(LAST_TASK.number, LAST_TASK.check, "grading.judge.score:score_submission"),
     "not in the student package"),
    (lambda text: text.replace(f'name = "{FIRST.name}"', 'name = "decoder"'), "is missing"),
    (drop_task(LAST_TASK.number), "grade cells"),
    (edit_task(LAST_TASK.number, LAST_TASK.check, FIRST_TASK.check), f"does not call {FIRST_TASK.check_function}"),
])
def test_a_broken_registry_is_caught(tmp_path, edit, problem):
    """Each way the registry can disagree with the course is reported (the test above cannot pass vacuously)."""
    broken = registry.assignments(copy_registry(tmp_path, edit))[0]
    assert any(problem in line for line in problems(broken)), problems(broken)


@pytest.mark.parametrize("edit", [
    lambda text: text.replace("trains = false", "trains = 0", 1),
    edit_task(FIRST_TASK.number, f'check = "{FIRST_TASK.check}"', f'check = "{FIRST_TASK.check_function}"'),
    lambda text: text.replace("[limits]", "[limitz]"),
    edit_task(TRAINED.number, f"needs = {list(TRAINED.needs)}", f"needs = [{TRAINED.number}]"),  # itself
    edit_task(TRAINED.number, f"needs = {list(TRAINED.needs)}", f'needs = "{TRAINED.needs[0]}"'),
    # a needed task that trains: a definition task made to train, or one that trains already
    edit_task(TRAINED.needs[0], "trains = false", "trains = true"),
    edit_task(DEFINITION[1], "trains = false }", f"trains = false, needs = [{DEFINITION[0]}] }}"),  # trains nothing
    lambda text: text.replace(f'name = "{FIRST.name}"', 'name = "my assignment"'),
    lambda text: text + f'\n[[assignments]]\nname = "{FIRST.name}"\n[assignments.tasks]\n'
                        f'1 = {{ points = 10, check = "{FIRST_TASK.check}", trains = false }}\n',
])
def test_the_loader_refuses_an_impossible_registry(tmp_path, edit):
    with pytest.raises(registry.RegistryError):
        registry.assignments(copy_registry(tmp_path, edit))


def test_without_a_name_only_a_single_assignment_is_chosen(tmp_path):
    root = copy_registry(tmp_path, lambda text: text + SECOND)
    assert [a.name for a in registry.assignments(root)][-1] == "decoder"  # release order: appended, so last
    assert registry.assignment("decoder", root).points == {1: 10}
    with pytest.raises(registry.RegistryError, match="several assignments"):
        registry.assignment(None, root)
    with pytest.raises(registry.RegistryError, match="no assignment 'encoder'"):
        registry.assignment("encoder", root)


def test_nbgrader_config_limits_are_the_registry_s(tmp_path):
    """nbgrader_config.py's per-cell limits come from course.toml beside it (here, and in a copy with others)."""
    changed = copy_registry(tmp_path, lambda text: text.replace("\ncell_seconds = 60", "\ncell_seconds = 7")
                            .replace("training_cell_seconds = 300", "training_cell_seconds = 70"))
    shutil.copy(ROOT / "nbgrader_config.py", changed)
    assert registry.limits(changed) == registry.Limits(7, 70)
    for root in (ROOT, changed):
        limits, execute = registry.limits(root), load_config(root).Execute
        assert execute.timeout == limits.cell_seconds
        assert execute.timeout_func(new_code_cell("x = 1")) == limits.cell_seconds
        assert execute.timeout_func(new_code_cell("history = train(model, loader)")) == limits.training_cell_seconds


def test_every_trained_task_needs_a_definition_task():
    """A trained task's points need the definition task whose class its model is (its check runs that check); which
    task that is, each assignment's own tests say (course/<a>/tests/test_registry_entry.py)."""
    for assignment in registry.assignments():
        for number in assignment.training_tasks:
            needed = assignment.needs.get(number, ())
            assert needed and set(needed) <= set(assignment.definition_tasks), (assignment.name, number, needed)


def imported_modules(path):
    """Top-level names of every module a Python file imports (absolute imports only; relative stay inside)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def imports_of(package, forbidden, pattern="**/*.py"):
    """{file: forbidden names it imports} for every .py file under ROOT/package that matches pattern."""
    found = {}
    for path in sorted((ROOT / package).glob(pattern)):
        bad = imported_modules(path) & set(forbidden)
        if bad:
            found[str(path.relative_to(ROOT))] = sorted(bad)
    return found


def test_grading_imports_nothing_from_tools():
    assert imports_of("grading", ["tools"]) == {}


def test_the_course_packages_shared_modules_import_neither_grading_nor_tools():
    """course/*.py (registry, slices, reference) is read by grading and tools; the assignments' own folders under
    course/ hold their grading cases and bench, which use grading and tools."""
    assert imports_of("course", ["grading", "tools"], pattern="*.py") == {}


@pytest.mark.parametrize("package", STUDENT_PACKAGES)
def test_student_packages_import_nothing_instructor_side(package):
    assert imports_of(package, INSTRUCTOR_PACKAGES) == {}


def test_the_import_scan_sees_a_forbidden_import(tmp_path):
    """The scan catches `import tools.x`, `from tools import x` and `from grading.y import z`, not relative ones."""
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nimport tools.bench\nfrom grading.score import Verdict\nfrom . import tools\n"
                      "def f():\n    from course import registry\n")
    assert imported_modules(sample) == {"os", "tools", "grading", "course"}


def test_collect_files_notebooks_under_the_named_assignment(tmp_path):
    """With two assignments registered, collect needs a name, files under it and reads its file names."""
    root = copy_registry(tmp_path / "course", lambda text: text + SECOND)
    with zipfile.ZipFile(tmp_path / "download.zip", "w") as archive:
        for name in ("alice_decoder.ipynb", "decoder.ipynb", f"{FIRST.name}.ipynb"):  # the last: a student's name
            archive.writestr(name, "{}")
    with pytest.raises(registry.RegistryError, match="several assignments"):
        collect(tmp_path / "download.zip", root)
    collected, unknown, _ = collect(tmp_path / "download.zip", root, "decoder")
    assert sorted(collected) == sorted(["alice", FIRST.name]) and unknown == ["decoder.ipynb"]
    assert (root / "submitted" / "alice" / "decoder" / "decoder.ipynb").is_file()


@pytest.mark.parametrize("name", [assignment.name for assignment in registry.assignments()])
def test_every_assignment_has_its_whole_slice(name):
    """docs/maintainers.md, "Add an assignment": notebook, checks, fixtures, known mistakes, hidden cases, tests
    (course/slices.py)."""
    assert missing_parts(registry.assignment(name)) == []


def test_a_missing_part_of_a_slice_is_named(tmp_path):
    """A registered assignment with nothing but its entry lacks every part, each named with where it goes."""
    shutil.copy(ROOT / "course.toml", tmp_path)
    with open(tmp_path / "course.toml", "a") as file:
        file.write('\n[[assignments]]\nname = "decoder"\ntitle = "t"\n\n[assignments.tasks]\n'
                   '1 = { points = 10, check = "checkers:check_task_1", trains = false }\n')
    (tmp_path / "checkers" / "decoder").mkdir(parents=True)
    (tmp_path / "checkers" / "decoder" / "__init__.py").write_text("def check_task_2(x):\n    pass\n")
    missing = missing_parts(registry.assignment("decoder", tmp_path))
    for _, pattern, _ in PARTS:
        if pattern != "checkers/{name}/__init__.py":
            assert any(pattern.format(name="decoder") in line for line in missing), (pattern, missing)
    assert any("checkers/decoder/__init__.py defines no check_task_1" in line for line in missing), missing
    assert any("checks outside checkers.decoder" in line for line in missing), missing
