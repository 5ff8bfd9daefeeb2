"""What must never reach students, and a search for it in a student tree and its wheels (tools/student_dist.py).

Looked for: instructor paths, reference answers (lines of the solutions notebooks' answer regions), grading code
and hidden cases, the known mistakes' edits, and install cells that do not name the registry's student repository.
Every needle is derived from the checkout, so it follows the notebooks and the grader as they change.
"""
import ast
import json
import re
import zipfile
from pathlib import Path

from course import registry
from course.slices import slice_of
from course.reference import solution_regions

INSTRUCTOR_TOP = {"solutions", "grading", "tools", "course", "tests", "course.toml", "nbgrader_config.py"}
MIN_CHARS = 25  # shorter lines (`return x`, `super().__init__()`) are common to any PyTorch code
INSTALL = re.compile(r'^COURSE_REPO = "([^"]+)"$', re.M)


def squeeze(line):
    return "".join(line.split())


DICTATED = re.compile(r"`(\w+)`: `([^`]+)`")  # a bullet "`dropout`: `nn.Dropout(dropout)`" dictates self.dropout = ...


def distinctive(text, common=""):
    """{squeezed line: line} of text's lines with >= MIN_CHARS non-blank characters, each not within common.

    A line quoted inside common (a task's bullet naming a layer) is given too, and so is the attribute assignment a
    bullet of the form "`name`: `expression`" dictates (`self.name = expression`, or the start of it).
    """
    dictated = [f"self.{name}={squeeze(expression)}" for name, expression in DICTATED.findall(common)]
    given = "\0".join([squeeze(common), *dictated])
    return {squeeze(line): line.strip() for line in text.splitlines()
            if len(squeeze(line)) >= MIN_CHARS and squeeze(line) not in given}


def cell_text(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def mistake_text(assignment):
    """Every known mistake's replacement text for the assignment, one string."""
    mutants = slice_of(assignment.name).mistakes.MUTANTS
    return "\n".join(new for mutant in mutants for _, new in mutant.edits)


def hidden_name(node):
    """A regular expression for a hidden case's name ("hidden: {heads} heads"), or None for other strings."""
    parts = node.values if isinstance(node, ast.JoinedStr) else [node]
    if not (isinstance(parts[0], ast.Constant) and str(parts[0].value).startswith("hidden:")):
        return None
    if sum(len(squeeze(part.value)) for part in parts if isinstance(part, ast.Constant)) < 12:
        return None  # a bare "hidden: " (also met alone, as a part of an f-string) says nothing
    return "".join(re.escape(squeeze(part.value)) if isinstance(part, ast.Constant) else ".{1,40}?" for part in parts)


def grading_needles(root):
    """{pattern: text} of grading's module docstrings' summary lines and of its hidden cases' names (the shared
    grading code and every assignment's cases, course/<name>/cases/)."""
    needles = {}
    for path in sorted([*(root / "grading").rglob("*.py"), *(root / "course").glob("*/cases/*.py")]):
        tree = ast.parse(path.read_text())
        summary = distinctive((ast.get_docstring(tree) or "").split("\n")[0])
        needles |= {re.escape(needle): line for needle, line in summary.items()}
        names = {node: hidden_name(node) for node in ast.walk(tree) if isinstance(node, (ast.Constant, ast.JoinedStr))}
        needles |= {pattern: ast.unparse(node) for node, pattern in names.items() if pattern}
    return needles


def needles(root, through=None):
    """{pattern of squeezed text: what it is, and the text} for everything whose presence in a student file is a leak.

    through: the last assignment released (default: the registry's last). The answers of it and of every later
    assignment are leaks; an earlier assignment's, whose deadline has passed, may be handed out as provided code.
    """
    found = {needle: f"grading code or a hidden case: {text}" for needle, text in grading_needles(root).items()}
    names = [assignment.name for assignment in registry.assignments(root)]
    current = names.index(through) if through else len(names) - 1
    code = {assignment.name: ["\n".join(lines) for lines in solution_regions(assignment.source_notebook)]
            for assignment in registry.assignments(root)}
    course_code = "\n".join(text for texts in code.values() for text in texts)
    for index, assignment in enumerate(registry.assignments(root)):
        answers, given = code[assignment.name]
        found |= {re.escape(needle): f"a known mistake of {assignment.name}: {line}"
                  for needle, line in secret_mistakes(mistake_text(assignment), course_code).items()}
        if index >= current:
            found |= {re.escape(needle): f"a reference answer of {assignment.name}: {line}"
                      for needle, line in distinctive(answers, given).items()}
    return found


def secret_mistakes(mistakes, course_code):
    """{squeezed line: line} of an assignment's mistake text that is no line of any notebook of the course.

    One assignment's planted mistake may be what another teaches: a post-norm block planted as a mistake in one may
    be another's given encoder block, and a "pre-norm" mistake of one another's given block. Such a line is in a
    notebook for good reasons and says nothing of the catalogue; the mistakes no notebook holds stay secret.
    """
    return distinctive(mistakes, course_code)


def readable(name, data):
    """The text of a file as a student would read it (a notebook's cells), or None for a binary file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if name.endswith(".ipynb"):  # sources and any stored output (text, text/plain, html...), unescaped
        cells = json.loads(text)["cells"]
        outputs = [output for cell in cells for output in cell.get("outputs", [])]
        shown = [part for output in outputs for part in [output.get("text", ""), *output.get("data", {}).values()]]
        return "\n".join([cell_text(cell) for cell in cells] +
                         ["".join(part) for part in shown if isinstance(part, (str, list))])
    return text


def shipped_files(dest):
    """{label: bytes} of every file of dest (but .git) and of every wheel's members (label "wheel!member")."""
    files = {}
    for path in sorted(p for p in dest.rglob("*") if p.is_file() and ".git" not in p.relative_to(dest).parts):
        files[str(path.relative_to(dest))] = path.read_bytes()
        if path.suffix == ".whl":
            with zipfile.ZipFile(path) as wheel:
                files |= {f"{path.name}!{name}": wheel.read(name) for name in wheel.namelist()}
    return files


def install_problem(notebook, url):
    """What is wrong with the notebook's first code cell as Colab's install of the course package from url, or ""."""
    cells = [cell for cell in json.loads(Path(notebook).read_text())["cells"] if cell["cell_type"] == "code"]
    source = cell_text(cells[0]) if cells else ""
    named = INSTALL.findall(source)
    if named != [url]:
        return f"its first code cell sets COURSE_REPO to {named or 'nothing'}, not to the student repository {url}"
    if "%pip install" not in source or "git+{COURSE_REPO}" not in source:
        return "its first code cell does not `%pip install git+{COURSE_REPO}`"
    return ""


def released(root, through=None):
    """The assignments released up to and including through (default: every registered one), in release order."""
    assignments = registry.assignments(root)
    names = [assignment.name for assignment in assignments]
    if through is not None and through not in names:
        raise ValueError(f"{through!r} is not a registered assignment ({', '.join(names)})")
    return assignments[: names.index(through) + 1] if through else assignments


def tree_problems(dest, root, files, through=None):
    """Every released notebook present and installing from the student repository; one wheel with the package."""
    url = registry.student_repo(root)
    for assignment in released(root, through):
        label = f"notebooks/{assignment.name}/{assignment.name}.ipynb"
        if label not in files:
            yield f"{label}: missing, though {assignment.name} is released"
        elif problem := install_problem(dest / label, url):
            yield f"{label}: {problem}"
    wheels = [label for label in files if label.startswith("dist/") and label.endswith(".whl")]
    members = {label.split("!", 1)[1] for label in files if "!" in label}
    if len(wheels) != 1:
        yield f"dist/: {len(wheels)} wheels, not one"
    for label in files:
        if label.split("/")[0] in ("checkers", "course_lib") and "__pycache__" not in label and label not in members:
            yield f"{label}: not in the wheel, so a student who installs the package lacks it"


def problems(dest, root=registry.ROOT, through=None):
    """Every leak and defect found in the student tree dest (and its wheel), as "file: what" lines.

    through: the last assignment released (default: every registered one), as for needles and released.
    """
    dest, files = Path(dest), shipped_files(Path(dest))
    # compiled once: hundreds of needles overflow the re module's cache, which then compiled each one for every file
    wanted = [(re.compile(pattern), what) for pattern, what in needles(root, through).items()]
    found = list(tree_problems(dest, root, files, through))
    for label, data in files.items():
        if INSTRUCTOR_TOP & set(Path(label.split("!")[-1]).parts):
            found.append(f"{label}: an instructor file")
        text = readable(label, data)
        squeezed = squeeze(text) if text is not None else ""
        found += [f"{label}: holds {what}" for pattern, what in wanted if pattern.search(squeezed)]
    return found
