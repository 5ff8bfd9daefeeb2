"""Build what students receive (`make student-dist DEST=folder`): the student repository's tree and its wheel.

DEST gets the released notebooks of the assignments released so far (THROUGH=name: that one and those before it in
course.toml; default: every registered one), checkers/, course_lib/, the assets the notebooks
show, a README, a pyproject.toml and dist/<wheel>; then tools/student_leaks.py searches all of it for answers,
grading code, hidden cases and known mistakes, and the command fails naming every offending file.
Publish DEST as the repository named by course.toml's [course] student_repo (its .git, if any, is kept).
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from course import registry
from tools.student_leaks import problems, released

PACKAGES = ("checkers", "course_lib")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")
ASSET = re.compile(r"assets/[\w./-]+\.(?:png|svg|jpg|gif)")


def clear(dest, root):
    """Empty dest but its .git (the student repository's history); refuse a dest holding the checkout."""
    if dest == root or root.is_relative_to(dest):
        sys.exit(f"student-dist: DEST {dest} holds the checkout; choose a folder of its own")
    dest.mkdir(parents=True, exist_ok=True)
    for path in dest.iterdir():
        if path.name == ".git":
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def copy_tree(dest, root, assignments):
    """The released notebooks, the student package and the assets the notebooks show."""
    shown = set()
    for assignment in assignments:
        target = dest / assignment.release_notebook.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(assignment.release_notebook, target)
        shown |= set(ASSET.findall(assignment.release_notebook.read_text()))
    for package in PACKAGES:
        shutil.copytree(root / package, dest / package, ignore=IGNORED)
    for asset in sorted(shown):
        (dest / asset).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / asset, dest / asset)


def readme(url, assignments):
    """The student repository's README: what it is, a Colab badge per notebook, how to work locally."""
    slug = url.removeprefix("https://github.com/")
    badge = "https://colab.research.google.com/assets/colab-badge.svg"
    rows = [f"| {a.title or a.name} | [![Open In Colab]({badge})](https://colab.research.google.com/github/{slug}"
            f"/blob/main/notebooks/{a.name}/{a.name}.ipynb) | `notebooks/{a.name}/{a.name}.ipynb` |"
            for a in assignments]
    return "\n".join([
        "# Transformer workbook: assignments", "",
        "Notebooks to fill in, one per assignment, with an instant check after every task: run the check cell "
        "below your code and it says what is wrong, or that the task passes.", "",
        "| assignment | open in Colab | notebook |", "|---|---|---|", *rows, "",
        "**In Colab** click the badge: the notebook's first cell installs this repository's package "
        "(`checkers` and `course_lib`). Fill in the cells marked `# YOUR CODE HERE` and run every cell in order.", "",
        "**Locally** (Python >= 3.9):", "", "```bash",
        f"git clone {url}.git && cd {slug.split('/')[-1]}",
        "python -m venv .venv && . .venv/bin/activate",
        "pip install torch --index-url https://download.pytorch.org/whl/cpu  # only on Linux without an NVIDIA GPU",
        'pip install -e ".[compare]" jupyterlab', "jupyter lab notebooks/", "```", "",
        "On Linux, pip's default torch comes with CUDA's libraries (several GB); the CPU-only build, installed first "
        "as above, is enough when there is no NVIDIA GPU, and the course package keeps the torch it finds. The "
        "`compare` extra adds Hugging Face's `tokenizers`, which a notebook compares your tokenizer with "
        "(`pip install -e .` leaves it out, and that cell skips the comparison).", ""])


def pyproject(root, url):
    """The student package's pyproject.toml: the project's name, version and loose dependency ranges."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    keep = {key: project[key] for key in ("name", "version", "description", "requires-python", "dependencies")}
    extras = project.get("optional-dependencies", {})  # e.g. compare: what an optional notebook cell needs
    lines = ["[build-system]", 'requires = ["setuptools>=68"]', 'build-backend = "setuptools.build_meta"', "",
             "[project]", *(f"{key} = {json.dumps(value)}" for key, value in keep.items()), 'readme = "README.md"', "",
             *(["[project.optional-dependencies]", *(f"{name} = {json.dumps(needs)}" for name, needs in extras.items()),
                ""] if extras else []),
             "[project.urls]", f"Repository = {json.dumps(url)}", "",
             # Subpackages and their data (fixtures) whatever the layout: one per assignment, or one for all.
             "[tool.setuptools.packages.find]", f"include = {json.dumps([f'{p}*' for p in PACKAGES])}", "",
             "[tool.setuptools.package-data]", '"*" = ["*.pt", "fixtures/*.pt"]', ""]
    return "\n".join(lines)


def build_wheel(dest):
    """Build the student package's wheel into dest/dist from a scratch copy (the build's leftovers stay there)."""
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "source"
        shutil.copytree(dest, source, ignore=shutil.ignore_patterns(".git", "dist"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                        "--wheel-dir", str(dest / "dist"), str(source)], check=True)


def build(dest, root=registry.ROOT, through=None):
    """Fill dest with the student repository and its wheel; return the problems found in them (none: safe).

    through: the last assignment released (default: every registered one); an earlier one's answers may appear in
    a later notebook's provided cells, since its deadline has passed (course.toml: release order).
    """
    dest, assignments = Path(dest).resolve(), released(root, through)
    clear(dest, root)
    copy_tree(dest, root, assignments)
    url = registry.student_repo(root)
    (dest / "README.md").write_text(readme(url, assignments))
    (dest / "pyproject.toml").write_text(pyproject(root, url))
    (dest / ".gitignore").write_text("dist/\nbuild/\n*.egg-info/\n__pycache__/\n.venv/\n.ipynb_checkpoints/\n")
    build_wheel(dest)
    return problems(dest, root, through)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dest", default="build/student", help="folder to fill (its .git is kept)")
    parser.add_argument("--through", default=None,
                        help="the last assignment to release (default: every registered one)")
    args = parser.parse_args(argv)
    dest = Path(args.dest)
    found = build(dest, through=args.through)
    if found:
        sys.exit("student-dist: NOT SAFE TO PUBLISH, " + f"{len(found)} problem(s):\n  " + "\n  ".join(found))
    print(f"student-dist: {dest} holds the student repository and dist/ its wheel; no leak found")


if __name__ == "__main__":
    main()
