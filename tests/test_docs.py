"""The front door and the docs: README.md stays short, every relative link resolves, and the Python versions the
docs state are the ones the student package and the instructor side really need."""
import ast
import re
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]
README_LIMIT = 10 * 1024  # bytes: a newcomer reads it in three minutes; the rest lives in docs/
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# What the student package may not use, since it must import on Python 3.9 (requires-python): modules and names
# that are newer. Syntax newer than 3.9 (match, except*) is caught by parsing with feature_version.
NEWER_MODULES = {"tomllib"}  # 3.11
NEWER_NAMES = {"pairwise", "ExceptionGroup", "TaskGroup", "get_annotations", "aiter", "anext"}  # 3.10+


def documents(root=ROOT):
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def slug(heading):
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    return {slug(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


def broken_links(path):
    """Relative links in path whose file, or whose #anchor in that file, does not exist."""
    broken = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:: not ours to check offline
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(target)
    return broken


def test_readme_is_short():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes: move detail into docs/ (limit {README_LIMIT})"


def test_readme_links_every_doc():
    linked = set(LINK.findall((ROOT / "README.md").read_text()))
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{doc.name}" in linked, f"README.md does not link docs/{doc.name}"


@pytest.mark.parametrize("path", documents(), ids=lambda path: path.name)
def test_relative_links_resolve(path):
    assert broken_links(path) == []


def test_a_broken_link_is_found(tmp_path):
    """The check above can fail: a missing file and a missing anchor are both named, good links are not."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Some heading, here\n")
    (tmp_path / "README.md").write_text("[ok](docs/a.md#some-heading-here) [gone](docs/b.md) "
                                        "[bad](docs/a.md#nowhere) ![img](assets/x.png) [web](https://x.org/y)\n")
    assert broken_links(tmp_path / "README.md") == ["docs/b.md", "docs/a.md#nowhere", "assets/x.png"]


def newer_than_39(source, name="<source>"):
    """What in source needs a Python newer than 3.9: newer syntax, modules, names, zip(strict=), runtime X | Y."""
    try:
        tree = ast.parse(source, name, feature_version=(3, 9))
    except SyntaxError as error:
        return [f"{name}:{error.lineno}: {error.msg}"]
    postponed = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                    and any(alias.name == "annotations" for alias in node.names) for node in tree.body)
    found = []
    for node in ast.walk(tree):
        modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                   else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found += [f"{name}:{node.lineno}: imports {m}" for m in modules if m.split(".")[0] in NEWER_MODULES]
        if isinstance(node, ast.ImportFrom):
            found += [f"{name}:{node.lineno}: imports {a.name}" for a in node.names if a.name in NEWER_NAMES]
        used = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if used in NEWER_NAMES:
            found.append(f"{name}:{node.lineno}: uses {used}")
        if isinstance(node, ast.Call) and any(keyword.arg == "strict" for keyword in node.keywords) \
                and getattr(node.func, "id", "") == "zip":
            found.append(f"{name}:{node.lineno}: zip(strict=)")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not postponed:
            arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            annotations = [a.annotation for a in arguments if a.annotation] + [node.returns]
            if any(isinstance(part, ast.BinOp) and isinstance(part.op, ast.BitOr)
                   for annotation in annotations if annotation for part in ast.walk(annotation)):
                found.append(f"{name}:{node.lineno}: X | Y annotation evaluated at definition")
    return found


def test_the_student_package_needs_no_python_newer_than_it_declares():
    """requires-python (the student package's) is >=3.9, and checkers/ and course_lib/ hold nothing newer."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.9", "requires-python changed: update newer_than_39 and docs/maintainers.md with it"
    sources = sorted((ROOT / "checkers").rglob("*.py")) + sorted((ROOT / "course_lib").rglob("*.py"))
    assert sources
    problems = [p for path in sources for p in newer_than_39(path.read_text(), str(path.relative_to(ROOT)))]
    assert problems == []


def test_newer_python_is_found():
    """The scan above can fail: each kind of 3.10+ use is named."""
    source = ("import tomllib\nfrom itertools import pairwise\n"
              "def f(x: int | None) -> None:\n    return list(zip(x, x, strict=True))\n")
    assert len(newer_than_39(source)) == 4
    assert newer_than_39("match x:\n    case 1:\n        pass\n")
    assert newer_than_39("from __future__ import annotations\ndef f(x: int | None):\n    pass\n") == []


def test_the_docs_state_the_python_versions():
    """README.md and docs/maintainers.md state the instructor side's Python (environment.yml's) and the student
    package's minimum (pyproject.toml's requires-python)."""
    instructor = re.search(r"python=(3\.\d+)", (ROOT / "environment.yml").read_text()).group(1)
    student = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"].lstrip(">=")
    for doc in ("README.md", "docs/maintainers.md"):
        text = (ROOT / doc).read_text()
        assert f"Python {instructor}" in text and f"Python {student}" in text, doc
