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
    if sum(assignment.points.values()) != 10:
        found.append(f"points sum to {sum(assignment.points.values())}, not 10")
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


@pytest.mark.parametrize("edit, problem", [
    (lambda text: text.replace("5 = { points = 2", "5 = { points = 3"), "check_task_5 is not locked with 3"),
    (lambda text: text.replace('"checkers.transformer:check_task_7"', '"checkers.transformer:check_task_9"'),
     "cannot be imported"),
    (lambda text: text.replace('"checkers.transformer:check_task_7"', '"grading.judge.score:score_submission"'),
     "not in the student package"),
    (lambda text: text.replace('name = "transformer"', 'name = "decoder"'), "is missing"),
    (lambda text: text.replace('8 = { points = 1, check = "checkers.transformer:check_task_8", trains = true, '
                               'needs = [7] }\n', ""),
     "grade cells"),
    (lambda text: text.replace('8 = { points = 1, check = "checkers.transformer:check_task_8"',
                               '8 = { points = 1, check = "checkers.transformer:check_task_6"'),
     "does not call check_task_6"),
])
def test_a_broken_registry_is_caught(tmp_path, edit, problem):
    """Each way the registry can disagree with the course is reported (the test above cannot pass vacuously)."""
    broken = registry.assignments(copy_registry(tmp_path, edit))[0]  # the edits break the first, the transformer
    assert any(problem in line for line in problems(broken)), problems(broken)


@pytest.mark.parametrize("edit", [
    lambda text: text.replace("trains = false", "trains = 0", 1),
    lambda text: text.replace('check = "checkers.transformer:check_task_1"', 'check = "check_task_1"'),
    lambda text: text.replace("[limits]", "[limitz]"),
    lambda text: text.replace("needs = [7]", "needs = [8]"),  # itself, not an earlier task
    lambda text: text.replace("needs = [7]", "needs = [6]"),  # a trained task
    lambda text: text.replace("needs = [7]", 'needs = "7"'),
    lambda text: text.replace("trains = false }", "trains = false, needs = [] }", 1).replace(
        "2 = { points = 1, check = \"checkers.transformer:check_task_2\", trains = false }",
        "2 = { points = 1, check = \"checkers.transformer:check_task_2\", trains = false, needs = [1] }"),
    lambda text: text.replace('name = "transformer"', 'name = "my assignment"'),
    lambda text: text + '\n[[assignments]]\nname = "transformer"\n[assignments.tasks]\n'
                        '1 = { points = 10, check = "checkers.transformer:check_task_1", trains = false }\n',
])
def test_the_loader_refuses_an_impossible_registry(tmp_path, edit):
    with pytest.raises(registry.RegistryError):
        registry.assignments(copy_registry(tmp_path, edit))


def test_without_a_name_only_a_single_assignment_is_chosen(tmp_path):
    second = ('\n[[assignments]]\nname = "decoder"\ntitle = "x"\n[assignments.tasks]\n'
              '1 = { points = 10, check = "checkers.transformer:check_task_1", trains = false }\n')
    root = copy_registry(tmp_path, lambda text: text + second)
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


def test_every_trained_task_needs_the_task_of_its_model_s_class():
    """A trained task's points need the definition task whose class its model is (its check runs that check)."""
    classes = {"transformer": {6: [5], 8: [7]}, "seq2seq": {7: [5]}, "gpt": {7: [5]}, "vit": {4: [3]}}
    for assignment in registry.assignments():
        assert {task: list(needed) for task, needed in assignment.needs.items()} == classes[assignment.name]


def test_training_tasks_are_the_ones_the_grader_judges_by_weights():
    """grading/cases/trained.py judges a trained model for exactly the tasks the registry says train."""
    from course.transformer.cases.trained import TRAINED

    assert set(TRAINED) == set(registry.assignment("transformer").training_tasks)


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
    second = ('\n[[assignments]]\nname = "decoder"\ntitle = "x"\n[assignments.tasks]\n'
              '1 = { points = 10, check = "checkers.transformer:check_task_1", trains = false }\n')
    root = copy_registry(tmp_path / "course", lambda text: text + second)
    with zipfile.ZipFile(tmp_path / "download.zip", "w") as archive:
        for name in ("alice_decoder.ipynb", "decoder.ipynb", "transformer.ipynb"):
            archive.writestr(name, "{}")
    with pytest.raises(registry.RegistryError, match="several assignments"):
        collect(tmp_path / "download.zip", root)
    collected, unknown, _ = collect(tmp_path / "download.zip", root, "decoder")
    assert sorted(collected) == ["alice", "transformer"] and unknown == ["decoder.ipynb"]
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
