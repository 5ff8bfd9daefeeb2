"""What students receive (`make student-dist`): no instructor module, no leak, and notebooks that work installed.

The untouched student notebooks run against the installed wheel, in an empty folder, and fail only where their TODOs
are (the rule: tests/notebook_runs.py); answered with the reference answers a student notebook is the reference
notebook, which nbval runs (every cell, training too), so it is not run twice; the leak
scan (`build` finds no problem) also finds any file of the package, a fixture say, that the wheel lacks.

The student package is installed from its wheel into a virtual environment outside the checkout. Third-party
packages come from this project's .venv through a path line, which adds their folder without running its .pth
files, so the editable install of this checkout (a .pth there) stays out; the tests check that it does.
"""
import importlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from course.registry import assignments, student_repo
from submissions import reference_answers, with_answers
from notebook_runs import errors, not_implemented_tasks, todo_failures
from tools.student_dist import build
from course.reference import reference_source
from course.slices import slice_of
from course_paths import ROOT
from tools.student_leaks import problems

INSTRUCTOR = ("course", "grading", "tools", "solutions", "tests")
THIRD_PARTY = Path(sys.prefix) / "lib"  # the packages of the Python running the tests: the project's .venv
# Run in the clean environment: import every module of the student package, report where they came from.
IMPORT_ALL = """
import importlib, importlib.util, json, pkgutil, sys
import checkers, course_lib
names = [info.name for package in (checkers, course_lib)
         for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
for name in names:
    importlib.import_module(name)
print(json.dumps(dict(
    modules=sorted(sys.modules), imported=names, prefix=sys.prefix, sys_path=sys.path,
    files={name: getattr(sys.modules[name], "__file__", None) for name in ("checkers", "course_lib")},
    importable=[name for name in INSTRUCTOR if importlib.util.find_spec(name) is not None],
    finders=[type(finder).__module__ for finder in sys.meta_path])))
"""


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    dest = tmp_path_factory.mktemp("student") / "repository"
    assert build(dest) == []
    return dest


@pytest.fixture(scope="module")
def clean_python(dist, tmp_path_factory):
    """The python of a new virtual environment holding the student wheel and nothing of the checkout."""
    venv = tmp_path_factory.mktemp("clean") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    (site,) = venv.glob("lib/python*/site-packages")
    (third_party,) = THIRD_PARTY.glob("python*/site-packages")
    (site / "third_party.pth").write_text(f"{third_party}\n")  # a path line: its .pth files are not run
    (wheel,) = (dist / "dist").glob("*.whl")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True)
    return python


def in_clean(python, code, tmp_path):
    """Run code with the clean python, isolated (-I: no PYTHONPATH, no script folder), outside the checkout."""
    done = subprocess.run([python, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.fast
def test_installed_package_imports_no_instructor_module(clean_python, tmp_path):
    report = json.loads(in_clean(clean_python, f"INSTRUCTOR = {INSTRUCTOR!r}\n" + IMPORT_ALL, tmp_path))
    assert len(report["imported"]) > 20  # every module of checkers and course_lib, subpackages included
    assert {name.split(".")[0] for name in report["modules"]} & set(INSTRUCTOR) == set()
    assert report["importable"] == []
    for file in report["files"].values():  # the wheel's copy, not the checkout's
        assert Path(file).is_relative_to(report["prefix"]), file
    assert not [entry for entry in report["sys_path"] if Path(entry) == Path(__file__).resolve().parent.parent]
    assert not [name for name in report["modules"] + report["finders"] if "__editable__" in name]


@pytest.mark.fast
def test_dist_holds_the_student_repository_only(dist):
    files = {str(path.relative_to(dist)) for path in dist.rglob("*") if path.is_file()}
    assert {f"notebooks/{a.name}/{a.name}.ipynb" for a in assignments()} <= files
    assert {"README.md", "pyproject.toml", "checkers/__init__.py", "course_lib/__init__.py"} <= files
    assert {path.split("/")[0] for path in files} <= {"README.md", "pyproject.toml", ".gitignore", "notebooks",
                                                      "checkers", "course_lib", "assets", "dist"}
    readme = (dist / "README.md").read_text()
    assert f"colab.research.google.com/github/{student_repo().removeprefix('https://github.com/')}/blob/main/" in readme
    assert not any(word in readme for word in ("solutions", "grading", "nbgrader", "tools/", "instructor"))


# ----- Planted leaks: the search must find each, naming the file -----------------------------------------------

SAMPLE = assignments()[0]  # the assignment whose answers, mistakes and notebook the leaks below come from


def squeezed(text):
    return "".join(text.split())


def notebook_code(path):
    return "\n".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"])


def answer_line():
    """The longest code line of SAMPLE's reference answers that its student notebook does not hold."""
    given = squeezed(notebook_code(SAMPLE.release_notebook))
    lines = [line.strip() for line in reference_source(SAMPLE).splitlines()
             if not line.strip().startswith("#") and squeezed(line) not in given]
    return max(lines, key=lambda line: len(squeezed(line)))


def mistake():
    """(the planted mistake of SAMPLE, a line of its replacement text that no notebook of the course holds)."""
    course = squeezed("\n".join(notebook_code(path) for folder in ("solutions", "notebooks")
                                 for path in sorted((ROOT / folder).glob("*/*.ipynb"))))
    for mutant in slice_of(SAMPLE.name).mistakes.MUTANTS:
        for _, new in mutant.edits:
            for line in new.splitlines():
                if len(squeezed(line)) >= 30 and squeezed(line) not in course:
                    return mutant, line.strip()
    raise AssertionError(f"no planted mistake of {SAMPLE.name} has a line no notebook holds")


ANSWER_LINE = answer_line()


def append(path, text):
    path.write_text(path.read_text() + text)


def plant_answer(dest, root):
    append(dest / "checkers" / "_core.py", f"\n# {ANSWER_LINE}\n")
    return "checkers/_core.py: holds a reference answer"


def plant_hidden_cases(dest, root):
    shutil.copy(root / "course" / SAMPLE.name / "cases" / "hidden.py", dest / "checkers" / "cases.py")
    return "checkers/cases.py: holds grading code or a hidden case"


def plant_hidden_case_name(dest, root):
    append(dest / "course_lib" / "metrics.py", '\nEXAMPLE = "hidden: 5-D batch"\n')
    return "course_lib/metrics.py: holds grading code or a hidden case"


def plant_mistake(dest, root):
    mutant, line = mistake()
    assert any(line in new for _, new in mutant.edits)
    append(dest / "checkers" / SAMPLE.name / "__init__.py", f"\nHINT = {line!r}\n")
    return f"checkers/{SAMPLE.name}/__init__.py: holds a known mistake"


def plant_grading_folder(dest, root):
    shutil.copytree(root / "grading", dest / "grading", ignore=shutil.ignore_patterns("__pycache__"))
    return "grading/__init__.py: an instructor file"


def plant_instructor_url(dest, root):
    notebook = dest / "notebooks" / SAMPLE.name / f"{SAMPLE.name}.ipynb"
    notebook.write_text(notebook.read_text().replace(student_repo(), "https://github.com/someone/instructor-repo"))
    return f"notebooks/{SAMPLE.name}/{SAMPLE.name}.ipynb: its first code cell sets COURSE_REPO"


def plant_in_wheel(dest, root):
    (wheel,) = (dest / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("checkers/extra.py", f"# {ANSWER_LINE}\n")
    return f"{wheel.name}!checkers/extra.py: holds a reference answer"


def plant_file_missing_from_wheel(dest, root):
    (dest / "checkers" / "later.py").write_text('"""Added after the wheel was built."""\n')
    return "checkers/later.py: not in the wheel"


@pytest.mark.fast
@pytest.mark.parametrize("plant", [plant_answer, plant_hidden_cases, plant_hidden_case_name, plant_mistake,
                                   plant_grading_folder, plant_instructor_url, plant_in_wheel,
                                   plant_file_missing_from_wheel], ids=lambda plant: plant.__name__)
def test_a_planted_leak_is_found(dist, tmp_path, plant):
    root = ROOT
    solutions = SAMPLE.source_notebook.read_text()
    assert json.dumps(ANSWER_LINE)[1:-1] in solutions  # the planted line is the reference's own
    copy = tmp_path / "copy"
    shutil.copytree(dist, copy)
    expected = plant(copy, root)
    found = problems(copy, through=SAMPLE.name)  # the stage at which the planted answer is still secret
    assert [line for line in found if line.startswith(expected)], (expected, found)


# ----- Release stages: an assignment's answers stay secret until the next one is released ---------------------

@pytest.mark.fast
@pytest.mark.parametrize("assignment", assignments(), ids=lambda assignment: assignment.name)
def test_every_release_stage_is_safe(tmp_path, assignment):
    """Released through each assignment in turn, the repository holds its notebooks and no leak."""
    dest = tmp_path / "repository"
    assert build(dest, through=assignment.name) == []
    released = {path.parent.name for path in (dest / "notebooks").glob("*/*.ipynb")}
    names = [a.name for a in assignments()]
    assert released == set(names[: names.index(assignment.name) + 1])


@pytest.mark.fast
@pytest.mark.skipif(len(assignments()) < 2, reason="needs an assignment released after another")
def test_a_later_notebook_may_hand_out_earlier_answers_only_after_their_stage(dist):
    """The full release is safe, yet read at the first stage its later notebooks give the first one's answers away."""
    first, later = assignments()[0].name, assignments()[1].name
    assert problems(dist) == []
    early = problems(dist, through=first)
    assert any(line.startswith(f"notebooks/{later}/{later}.ipynb: holds a reference answer of {first}")
               for line in early), early


# ----- The released notebooks, run against the installed wheel ------------------------------------------------

PROBE = """import importlib.util, sys
import checkers, course_lib
assert all(module.__file__.startswith(sys.prefix) for module in (checkers, course_lib)), checkers.__file__
assert not [name for name in ("course", "grading", "tools", "solutions", "tests") if importlib.util.find_spec(name)]
"""


def run_in_clean(notebook, python, workdir):
    """Execute notebook (nbformat) in a kernel of the clean environment, cwd workdir, plus a last cell that checks
    the package came from that environment; return the executed notebook."""
    kernels = workdir / "kernels"
    (kernels / "student").mkdir(parents=True)
    (kernels / "student" / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-I", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "student wheel", "language": "python"}))
    manager = KernelManager(kernel_name="student", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))
    notebook.cells.append(nbformat.v4.new_code_cell(PROBE))
    NotebookClient(notebook, km=manager, timeout=300, allow_errors=True,
                   resources={"metadata": {"path": str(workdir)}}).execute()
    assert not errors(notebook.cells[-1]), errors(notebook.cells[-1])
    return notebook


@pytest.fixture(scope="module", params=assignments(), ids=lambda assignment: assignment.name)
def untouched(request, dist, clean_python, tmp_path_factory):
    """(assignment, its untouched student notebook executed against the installed wheel in an empty folder)."""
    notebook = nbformat.read(dist / "notebooks" / request.param.name / f"{request.param.name}.ipynb", as_version=4)
    return request.param, run_in_clean(notebook, clean_python, tmp_path_factory.mktemp("student"))


@pytest.mark.full
@pytest.mark.grading
def test_every_check_cell_says_its_task_is_not_implemented(untouched):
    assignment, executed = untouched
    assert not_implemented_tasks(executed) == list(assignment.tasks)


@pytest.mark.full
@pytest.mark.grading
def test_other_cells_fail_only_with_not_implemented_error(untouched):
    assert todo_failures(untouched[1]), "the untouched notebook should fail where the TODOs are"


@pytest.mark.full
@pytest.mark.grading
def test_cells_without_todos_run(untouched):
    """Set-up, data and plotting cells that use no student code must succeed: the ones the assignment's own tests name
    (course/<a>/tests/student_notebook.py, GIVEN_CELLS), each found in the notebook."""
    assignment, executed = untouched
    given = importlib.import_module(f"course.{assignment.name}.tests.student_notebook").GIVEN_CELLS
    for needle in given:
        found = [cell for cell in executed.cells if cell.cell_type == "code" and needle in cell.source]
        assert found, f"no code cell of the student notebook holds {needle!r}"
        for cell in found:
            assert not errors(cell), cell.source[:80]


@pytest.mark.fast
@pytest.mark.parametrize("assignment", assignments(), ids=lambda assignment: assignment.name)
def test_the_student_notebook_with_the_reference_answers_is_the_reference(dist, assignment):
    """The solutions' answer cells pasted into the student notebook (by grade_id) give the reference notebook's code,
    cell for cell: so nbval's run of the reference (every cell, training too) is the run of a student notebook
    answered as the reference answers it, and it is not run a second time here."""
    notebook = nbformat.read(dist / "notebooks" / assignment.name / f"{assignment.name}.ipynb", as_version=4)
    answered = with_answers(notebook, reference_answers(assignment.source_notebook))
    reference = nbformat.read(assignment.source_notebook, as_version=4)
    unmarked = with_answers(reference, reference_answers(assignment.source_notebook))  # solution markers dropped
    assert [cell["source"] for cell in answered["cells"] if cell["cell_type"] == "code"] == \
        [cell["source"] for cell in unmarked["cells"] if cell["cell_type"] == "code"]
    checks = [cell for cell in answered["cells"] if cell["metadata"].get("nbgrader", {}).get("grade")]
    assert len(checks) == len(assignment.tasks)


@pytest.mark.fast
def test_student_repo_must_be_named_once_as_a_github_url(tmp_path):
    from course.registry import RegistryError
    registry_text = (Path(__file__).resolve().parent.parent / "course.toml").read_text()
    (tmp_path / "course.toml").write_text(registry_text.replace(student_repo(), "git@example.org:course.git"))
    with pytest.raises(RegistryError, match="student_repo must be a https://github.com/ URL"):
        student_repo(tmp_path)
    (tmp_path / "course.toml").write_text(registry_text.replace("[course]", "[elsewhere]"))
    with pytest.raises(RegistryError, match="KeyError"):
        student_repo(tmp_path)
