"""Set-up files agree with each other: the repository URLs, one pinned dependency list."""
import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest
from course_paths import NAME, SOURCE
from course.slices import slice_of
from course.registry import assignments, student_repo
from tools.student_leaks import install_problem
from same_values import differences, figure_difference

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parent.parent


def project_url():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]


def pins(text):
    return sorted(re.findall(r"^\s*-?\s*([A-Za-z0-9_.\-]+==[^\s#]+)", text, flags=re.M))


def test_environment_yml_mirrors_requirements():
    requirements = pins((ROOT / "requirements.txt").read_text())
    assert "torch==2.13.0" in requirements
    assert pins((ROOT / "environment.yml").read_text()) == requirements


def test_package_keeps_a_loose_torch_range_for_colab():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_requirement = next(d for d in project["dependencies"] if d.startswith("torch"))
    assert "==" not in torch_requirement


def third_party_imports(folders):
    """Top-level modules imported by the student package's source that are neither its own nor the standard library."""
    names = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"course_lib", "checkers", "IPython"}


def test_the_student_package_declares_and_pins_what_it_imports():
    # IPython is Jupyter's own (every notebook runs in it); the others must install with the package in Colab
    distributions = importlib.metadata.packages_distributions()
    imported = {distributions[name][0].lower() for name in third_party_imports(("course_lib", "checkers"))}
    declared = {re.split(r"[<>=! ]", d)[0].lower() for d in
                tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    pinned = {pin.split("==")[0].lower() for pin in pins((ROOT / "requirements.txt").read_text())}
    assert imported <= declared, f"imported but not in pyproject's dependencies: {sorted(imported - declared)}"
    assert declared <= pinned, f"declared but not pinned in requirements.txt: {sorted(declared - pinned)}"


def test_every_notebook_installs_from_the_student_repository():
    """Colab installs the course package from course.toml's student repository, which holds no answers."""
    url = student_repo()
    assert url != project_url(), "the student repository must not be this one: it holds solutions/ and grading/"
    for assignment in assignments():
        for notebook in (assignment.source_notebook, assignment.release_notebook):
            assert not install_problem(notebook, url), (notebook, install_problem(notebook, url))


def test_install_check_rejects_another_repository(tmp_path):
    """The check above can fail: a notebook installing from this (instructor) repository is caught."""
    text = SOURCE.read_text().replace(student_repo(), project_url())
    (tmp_path / "moved.ipynb").write_text(text)
    assert "not to the student repository" in install_problem(tmp_path / "moved.ipynb", student_repo())


def test_readme_badge_names_the_student_repository():
    slug = student_repo().removeprefix("https://github.com/")
    readme = (ROOT / "README.md").read_text()
    assert f"colab.research.google.com/github/{slug}/blob/main/notebooks/{NAME}/{NAME}.ipynb" in readme


@pytest.mark.parametrize("name", [assignment.name for assignment in assignments()])
def test_fixtures_are_current(tmp_path, name):
    """Regenerated fixtures hold the committed values to RTOL/ATOL (far below the checkers' 1e-6), on any CPU."""
    import subprocess
    import sys
    import torch
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_fixtures.py"), "--assignment", name,
                    "--out", str(tmp_path)], check=True, capture_output=True)
    committed = sorted((ROOT / "checkers" / name / "fixtures").glob("*.pt"))
    assert committed and [p.name for p in committed] == sorted(p.name for p in tmp_path.glob("*.pt"))
    for path in committed:
        stale = differences(torch.load(path, weights_only=True), torch.load(tmp_path / path.name, weights_only=True))
        assert not stale, \
            f"{name}/{path.name} is stale: run `make fixtures` and commit ({len(stale)} differ: {stale[:3]})"


def serialized(value):
    import io
    import torch
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def leaves(tree, where=""):
    """(container, key, path, value) of every leaf of a fixture, in order, with differences()'s path notation."""
    items = tree.items() if isinstance(tree, dict) else enumerate(tree)
    for key, value in items:
        if isinstance(value, (dict, list)):
            yield from leaves(value, f"{where}/{key}")
        else:
            yield tree, key, f"{where}/{key}", value


def float64_leaves(tree):
    import torch
    return [leaf for leaf in leaves(tree) if isinstance(leaf[3], torch.Tensor) and leaf[3].dtype == torch.float64
            and leaf[3].numel() >= 4]


def test_fixture_comparison_ignores_rounding_and_catches_a_stale_value():
    """The comparison above is not vacuous: last-bit noise passes, a value off by 1e-6 (a checker's tolerance) fails,
    and so do a changed number and a tensor of another shape. The values: the first fixture of the first registered
    assignment that holds two float64 tensors and a number."""
    import torch
    fixtures = sorted((ROOT / "checkers" / assignments()[0].name / "fixtures").glob("*.pt"))
    loaded = [(path, torch.load(path, weights_only=True)) for path in fixtures]
    path = next(path for path, tree in loaded if len(float64_leaves(tree)) >= 2 and any(
        type(leaf[3]) is int for leaf in leaves(tree)))
    fixture = torch.load(path, weights_only=True)
    assert not differences(fixture, fixture)
    noisy = torch.load(path, weights_only=True)
    (_, _, where, outputs), (parent, key, _, _) = float64_leaves(noisy)[:2]
    assert outputs.abs().max() < 1e3  # 1e-6 stands out of its rounding, and last-bit noise stays below RTOL
    outputs.mul_(1 + 4e-15).add_(4e-15)  # the largest cross-CPU difference seen, relative and absolute
    assert not differences(fixture, noisy)
    assert serialized(noisy) != serialized(fixture)  # what the byte-for-byte test used to reject
    outputs.view(-1)[3] += 1e-6
    assert differences(fixture, noisy) == [
        f"{where}: differs by up to 1e-06 (tolerance 1e-12 + 1e-12·|committed|)"]
    number = next(leaf for leaf in leaves(noisy) if type(leaf[3]) is int)
    number[0][number[1]] += 1
    parent[key] = torch.ones(1)
    assert len(differences(fixture, noisy)) == 3


def trained_figures():
    """Figures drawn from a model trained when `make assets` runs (each slice's assets.TRAINED_FIGURES): training's
    float sums differ between CPUs, so these are compared by layout (the same height: the same rows of panels), not
    pixel for pixel; the figures computed without training still are."""
    modules = [slice_of(a.name).optional("assets") for a in assignments()]
    return set().union(*(getattr(module, "TRAINED_FIGURES", set()) for module in modules if module))


def test_readme_figures_are_current(tmp_path):
    """assets/ holds what `make assets` renders now, pixel for pixel to FIGURE_RMS (trained figures: their layout, drawn
    from untrained models: the layout is the same and training would cost this test most of its time)."""
    import subprocess
    import sys

    import matplotlib.image as plt_image
    subprocess.run([sys.executable, "-m", "tools.make_assets", "--out", str(tmp_path), "--untrained"], cwd=ROOT,
                   check=True, capture_output=True)
    rendered = sorted(path.name for path in tmp_path.glob("*.png") if not path.name.endswith("-failed-diff.png"))
    assert rendered and rendered == sorted(path.name for path in (ROOT / "assets").glob("*.png")), \
        "run `make assets` and commit assets/"
    for name in rendered:
        if name in trained_figures():
            committed, now = (plt_image.imread(folder / name) for folder in (ROOT / "assets", tmp_path))
            assert committed.shape[0] == now.shape[0], f"assets/{name} has another layout: run `make assets`"
            continue
        problem = figure_difference(ROOT / "assets" / name, tmp_path / name)
        assert problem is None, f"assets/{name} is stale: run `make assets` and commit ({problem})"


def test_figure_comparison_catches_a_changed_figure(tmp_path):
    """The comparison above is not vacuous: one cell of a positional table changed by 0.3 fails it."""
    import matplotlib
    matplotlib.use("Agg")
    from course_lib import plot_positional_encoding
    import torch
    # a table like a positional encoding's (any smooth one will do: the test is of the comparison)
    pe = torch.sin(torch.arange(128.0)[:, None] / 100 ** (torch.arange(64.0) / 64))  # (128, 64)
    for name, change in (("committed.png", 0.0), ("same.png", 0.0), ("changed.png", 0.3)):
        pe[5, 7] += change
        plot_positional_encoding(pe).savefig(tmp_path / name, dpi=100, metadata={"Software": None})
    assert figure_difference(tmp_path / "committed.png", tmp_path / "same.png") is None
    assert "RMS" in figure_difference(tmp_path / "committed.png", tmp_path / "changed.png")
