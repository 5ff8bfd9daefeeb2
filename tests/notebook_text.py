"""Reading a course notebook's text and code for the notebook-text tests of every assignment.

Each `*_problems` function returns a list of problems, one line each naming the cell (its index in the notebook and,
for an nbgrader cell, its grade_id): an empty list means the rule holds. The tests of an assignment call them on its
notebooks (course/<name>/tests/test_notebook_text.py).
"""
import ast
import json
import re
from pathlib import Path

from course.registry import ROOT, assignment as registered

MEASURED = "**Measured:**"  # marks the one sentence per training task that states a measured time
GIVEN_CELL_LINES = 20  # DEVELOPERS.md: notebook code cells under ~20 lines (answers and provided code aside)
SHAPE_COMMENT = re.compile(r"#\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)")  # `# (B, H, T, head_dim)`, nested calls allowed


def cells(path):
    """The notebook's cells, each with its source joined into one string."""
    return [dict(cell, source="".join(cell["source"])) for cell in json.loads(path.read_text())["cells"]]


def markdown(path):
    return [cell["source"] for cell in cells(path) if cell["cell_type"] == "markdown"]


def section(path, heading):
    """Markdown of the cells from the one that starts with heading up to the next `## ` heading."""
    texts, inside = [], False
    for text in markdown(path):
        if text.startswith("## "):
            inside = text.startswith(heading)
        if inside:
            texts.append(text)
    assert texts, f"no section {heading!r}"
    return "\n\n".join(texts)


def code_cell(path, needle):
    (source,) = [cell["source"] for cell in cells(path) if cell["cell_type"] == "code" and needle in cell["source"]]
    return source


def grade_id(cell):
    return cell["metadata"].get("nbgrader", {}).get("grade_id", "")


def where(index, cell):
    """How a problem names a cell: `cell 12 (<its grade_id>)`, or `cell 12` when it has none."""
    name = grade_id(cell)
    return f"cell {index}" + (f" ({name})" if name else "")


def is_answer(cell):
    return bool(cell["metadata"].get("nbgrader", {}).get("solution"))


def is_provided(cell):
    return grade_id(cell).startswith("provided_")


# ----------------------------------------------------------------------------- rules


def text_macro_problems(path):
    r"""`\text{head\_dim}` shows its backslash in MathJax 2 (nbconvert's HTML) and in MathJax 3 without textmacros;
    `\text{head_dim}` is an error in KaTeX (Colab) and in MathJax 3 with textmacros. `\mathrm{head\_dim}` renders
    as head_dim in all four (checked with mathjax-node 2.7.9, mathjax-full 3.2.2 and katex)."""
    return [f"{where(index, cell)}: underscore inside \\text{{}}: {found}"
            for index, cell in enumerate(cells(path)) if cell["cell_type"] == "markdown"
            for found in re.findall(r"\\text\{[^{}]*_[^{}]*\}", cell["source"])]


def staff_note_problems(path):
    """A student notebook names none of the course staff's tools or folders."""
    return [f"{where(index, cell)}: says {word!r}" for index, cell in enumerate(cells(path))
            for word in ("Course staff", "make release", "generate_assignment", "solutions/") if word in cell["source"]]


def time_claim_problems(path):
    """Times (`60 s`, `minutes`) are stated only in the marked `**Measured:**` sentences, never elsewhere."""
    problems = []
    for index, cell in enumerate(cells(path)):
        if cell["cell_type"] == "markdown":
            text = re.sub(re.escape(MEASURED) + r"[^\n]*", "", cell["source"])
            found = re.search(r"\bminutes?\b|\d\s?s\b", text)
        else:
            text = cell["source"]
            found = re.search(r"\bminutes?\b", text)
        if found:
            problems.append(f"{where(index, cell)}: a time outside a {MEASURED} sentence: "
                            f"...{text[max(0, found.start() - 60):found.end() + 20]}...")
    return problems


def task_cells(path, task):
    """(index of the task's `## N.` heading cell, the cells from it up to the next `## ` heading, as (index, cell))."""
    all_cells = cells(path)
    (start,) = [index for index, cell in enumerate(all_cells)
                if cell["cell_type"] == "markdown" and cell["source"].startswith(f"## {task}.")]
    end = next((index for index in range(start + 1, len(all_cells)) if all_cells[index]["cell_type"] == "markdown"
                and all_cells[index]["source"].startswith("## ")), len(all_cells))
    return start, list(enumerate(all_cells))[start:end]


def shape_tuples(text):
    """The identifiers of every parenthesised tuple in text (LaTeX commands and spacing removed), e.g. {B, T, D}."""
    plain = re.sub(r"\\[A-Za-z]+|\\[,;!: ]", " ", text)
    return [set(re.findall(r"[A-Za-z_]\w*", group)) for group in re.findall(r"\(([^()]*,[^()]*)\)", plain)]


def task_text_problems(path, task, trains, glossary):
    """The task's text: motivation, then (for a task answered by definitions) a formula with shapes, then what to
    implement as bullets, in that order."""
    start, section_cells = task_cells(path, task)
    text = section_cells[0][1]["source"]
    name, problems = where(start, section_cells[0][1]), []
    implement = text.find("**Implement")
    if implement < 0 or not re.search(r"\n- ", text[implement:]):
        problems.append(f"{name}: Task {task} has no '**Implement**' paragraph followed by bullets")
        implement = len(text)
    motivation = re.sub(r"^## [^\n]*\n", "", text[:implement]).strip()
    if not re.search(r"^\*\*(Why|What happens)\.\*\*", motivation):
        problems.append(f"{name}: Task {task}'s text does not open with its motivation ('**Why.**')")
    if not trains:
        formula = re.search(r"\*\*(Formula|Shapes)\.\*\*(.*)", text[:implement], re.S)
        shaped = formula and "$" in formula.group(2) and any(
            names & glossary for names in shape_tuples(formula.group(2)))
        if not shaped:
            problems.append(f"{name}: Task {task} has no '**Formula.**' (or '**Shapes.**') paragraph with math and "
                            "the shapes of its tensors, before what to implement")
    return problems


def task_cell_order_problems(path, task, release):
    """After the task's text: its answer cell (a TODO in the student notebook), at once its check cell, then an
    example (a markdown cell and a code cell) before the next heading."""
    start, section_cells = task_cells(path, task)
    later = section_cells[1:]
    answers = [position for position, (_, cell) in enumerate(later) if grade_id(cell).startswith(f"task_{task}_")]
    if len(answers) != 1:
        return [f"{where(start, section_cells[0][1])}: Task {task}'s section holds {len(answers)} answer cells"]
    (position,) = answers
    index, answer = later[position]
    problems = []
    if any(cell["cell_type"] == "markdown" for _, cell in later[:position]):
        problems.append(f"{where(index, answer)}: text between Task {task}'s instructions and its answer cell")
    if release and not ("# YOUR CODE HERE" in answer["source"] and "raise NotImplementedError()" in answer["source"]):
        problems.append(f"{where(index, answer)}: the student's cell has no '# YOUR CODE HERE' TODO")
    after = later[position + 1:]
    if not after or not re.fullmatch(rf"check_task_{task}\(.*\)", after[0][1]["source"].strip()):
        problems.append(f"{where(index, answer)}: Task {task}'s answer cell is not followed at once by its check cell")
    kinds = [cell["cell_type"] for _, cell in after[1:]]
    if "markdown" not in kinds or "code" not in kinds[kinds.index("markdown"):]:
        problems.append(f"{where(index, answer)}: no example (text, then code) after Task {task}'s check cell")
    return problems


def check_cell_problems(path, tasks):
    """Each check cell is one call, check_task_N(...), of a registered task, and every task has one."""
    found, problems = [], []
    for index, cell in enumerate(cells(path)):
        if grade_id(cell).startswith("check_task_"):
            call = re.fullmatch(r"check_task_(\d+)\([^\n]*\)", cell["source"].strip())
            if not call or int(call.group(1)) not in tasks:
                problems.append(f"{where(index, cell)}: not one call of a registered check: {cell['source']!r}")
            else:
                found.append(int(call.group(1)))
    if sorted(found) != sorted(tasks):
        problems.append(f"check cells call tasks {sorted(found)}, the registry has {sorted(tasks)}")
    return problems


def import_cell(path):
    """(index, cell) of the code cell that imports the checks."""
    (found,) = [(index, cell) for index, cell in enumerate(cells(path))
                if cell["cell_type"] == "code" and re.search(r"^from checkers\.", cell["source"], re.M)]
    return found


def imported_names(source):
    """Module -> names imported with `from module import ...` in source (IPython magics removed)."""
    tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.setdefault(node.module, []).extend(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.setdefault(None, []).extend((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def import_problems(path, name, tasks):
    """The import cell brings in exactly the registered checks from checkers.<name>, and only names used later."""
    index, cell = import_cell(path)
    imported, problems = imported_names(cell["source"]), []
    checks = imported.get(f"checkers.{name}", [])
    if sorted(checks) != sorted(f"check_task_{task}" for task in tasks):
        problems.append(f"{where(index, cell)}: imports {sorted(checks)} from checkers.{name}, not every registered "
                        "check and nothing else")
    rest = "\n".join(other["source"] for position, other in enumerate(cells(path)) if position != index)
    unused = sorted(imported_name for names in imported.values() for imported_name in names
                    if not re.search(rf"\b{re.escape(imported_name)}\b", rest))
    if unused:
        problems.append(f"{where(index, cell)}: imports names no other cell uses: {', '.join(unused)}")
    return problems


def glossary(path):
    """The names the notebook's opening `**Shapes.**` paragraph defines (every `backticked` name in it)."""
    opening = next(text for text in markdown(path) if "**Shapes.**" in text)
    paragraph = opening.split("**Shapes.**", 1)[1].split("\n\n")[0]
    return {name for quoted in re.findall(r"`([^`]*)`", paragraph) for name in re.findall(r"[A-Za-z_]\w*", quoted)}


def parameter_names(path):
    """Every parameter name of a function defined in the notebook's code (self-explaining in a shape, e.g. max_len)."""
    names = set()
    for cell in cells(path):
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse("\n".join(line for line in cell["source"].splitlines() if not line.startswith("%")))
        except SyntaxError:
            continue
        names |= {arg.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                  for arg in node.args.args + node.args.kwonlyargs}
    return names


def shape_name_problems(path, allowed=()):
    """Every name in a shape comment `# (...)` of a code cell is a glossary name or a parameter of the code."""
    known = glossary(path) | parameter_names(path) | set(allowed)
    problems = []
    for index, cell in enumerate(cells(path)):
        if cell["cell_type"] != "code":
            continue
        comments = SHAPE_COMMENT.findall(cell["source"])
        used = {name for comment in comments for name in re.findall(r"[A-Za-z_]\w*", comment)}
        if used - known:
            problems.append(f"{where(index, cell)}: shape comments use {', '.join(sorted(used - known))}, "
                            "which the notebook's **Shapes.** glossary does not define")
    return problems


def cell_length_problems(path, lines=GIVEN_CELL_LINES):
    """Code cells the student runs as given (not answers, not provided code) stay under `lines` lines."""
    return [f"{where(index, cell)}: {len(cell['source'].splitlines())} lines (at most {lines})"
            for index, cell in enumerate(cells(path)) if cell["cell_type"] == "code" and not is_answer(cell)
            and not is_provided(cell) and len(cell["source"].splitlines()) > lines]


PLOTTING = re.compile(r"\bplt\.(subplots|figure|plot|imshow)\(|\bplot_\w+\(")
TITLE = re.compile(r"\btitle\s*=|set_title\(|suptitle\(|plt\.title\(")
PICTURES_ONLY = re.compile(r"\.axis\(\s*[\"']off[\"']\s*\)")  # every axis switched off: images, no scale to label
DATA_PLOT = re.compile(r"\.(plot|scatter|bar|barh|hist|errorbar|step|fill_between)\(|\bsns\.")


def plotters(path):
    """{name: function} of the plot_* functions the notebook's import cell brings in from the course's packages."""
    import importlib

    imported = imported_names(import_cell(path)[1]["source"])
    return {name: getattr(importlib.import_module(module), name) for module, names in imported.items()
            if module and module.split(".")[0] == "course_lib" for name in names if name.startswith("plot_")}


def titled_by_its_plotter(source, known):
    """Whether the cell calls plot_* functions, each of the course's own (known: plotters()) and setting its figure's
    title itself."""
    import inspect

    called = re.findall(r"\b(plot_\w+)\(", source)
    return bool(called) and all(name in known and TITLE.search(inspect.getsource(known[name])) for name in called)


def plot_problems(path):
    """A cell that draws a figure gives it a title (or calls course_lib plotters that title theirs); one that makes
    its own axes labels both of them, unless it switches its axes off to show pictures (digits, patches) and plots
    no values against them."""
    problems, known = [], plotters(path)
    for index, cell in enumerate(cells(path)):
        source = cell["source"]
        if cell["cell_type"] != "code" or is_answer(cell) or not PLOTTING.search(source):
            continue
        if not TITLE.search(source) and not titled_by_its_plotter(source, known):
            problems.append(f"{where(index, cell)}: a plot without a title")
        pictures = PICTURES_ONLY.search(source) and not DATA_PLOT.search(source)
        if re.search(r"plt\.(subplots|figure|plot)\(", source) and not pictures and not (
                re.search(r"xlabel", source) and re.search(r"ylabel", source)):
            problems.append(f"{where(index, cell)}: a plot whose axes are not both labelled")
    return problems


def seeded_model_problems(path, model_class):
    """Every cell that builds model_class from the default config seeds first, so no earlier cell's draws leak in."""
    problems = []
    for index, cell in enumerate(cells(path)):
        source = cell["source"]
        built = re.search(rf"\b{model_class}\(\*\*", source)
        if cell["cell_type"] == "code" and built:
            seeded = re.search(r"\bseed_everything\(\d+\)", source[:built.start()])
            if not seeded:
                problems.append(f"{where(index, cell)}: builds {model_class}(**...) without seed_everything before it")
    return problems


def tasks_of(name):
    """{task number: whether it trains} of the registered assignment called name."""
    return {number: task.trains for number, task in registered(name).tasks.items()}


def training_seed_problems(path, model_class, dataset_class):
    """The cell before the training cell seeds and then builds model_class(**model_config), and draws nothing random
    after that (the DataLoader's shuffle draws from the seed too). The training cell: the answer of the assignment's
    one training task (the notebook's name is the assignment's)."""
    all_cells = cells(path)
    (task,) = registered(Path(path).stem).training_tasks
    (training,) = [index for index, cell in enumerate(all_cells) if grade_id(cell).startswith(f"task_{task}_")]
    before = all_cells[training - 1]["source"]
    if not re.search(rf"seed_everything\(\d+\)\s*\nmodel = {model_class}\(\*\*model_config\)", before):
        return [f"cell {training - 1}: does not seed, then build {model_class}(**model_config)"]
    after_model = before.split(f"{model_class}(**model_config)", 1)[1]
    if re.search(rf"torch\.(rand|randn|randint|randperm|manual_seed)\b|{dataset_class}\(", after_model):
        return [f"cell {training - 1}: draws random numbers between the seed and the training cell"]
    return []


def checker_seeds(name):
    """Integer constants whose name holds SEED in checkers/<name>/ (the data its training task is judged on)."""
    seeds = {}
    for path in sorted((ROOT / "checkers" / name).glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            value = getattr(node, "value", None)
            if isinstance(node, ast.Assign) and isinstance(value, ast.Constant) and isinstance(value.value, int):
                seeds |= {target.id: node.value.value for target in node.targets
                          if isinstance(target, ast.Name) and "SEED" in target.id}
    return seeds


def notebook_seeds(path):
    """The seeds the notebook's code passes to seed_everything(...) or as seed=..."""
    text = "\n".join(cell["source"] for cell in cells(path) if cell["cell_type"] == "code")
    return {int(n) for n in re.findall(r"\bseed(?:_everything\(|=)(\d+)", text)}


def placeholders(path):
    """Words such as MEASURED_TRAINING left in the markdown (code and math aside)."""
    prose = [re.sub(r"`[^`]*`|\$[^$]*\$", "", cell["source"]) for cell in cells(path)
             if cell["cell_type"] == "markdown"]
    return [word for text in prose for word in re.findall(r"\b[A-Z]{2,}_[A-Z_]{2,}\b", text)]


def measured_sentences(path, heading):
    """The `**Measured:**` sentences of the section that starts with heading (each up to its line's end)."""
    return [part.split("\n")[0] for part in section(path, heading).split(MEASURED)[1:]]


def broken_copy(source, tmp_path, edit):
    """The notebook at source after edit(cells), written under tmp_path; returns its path."""
    notebook = json.loads(source.read_text())
    edit(notebook["cells"])
    path = tmp_path / "broken.ipynb"
    path.write_text(json.dumps(notebook))
    return path


def index_of(notebook_cells, name):
    """Index of the cell whose nbgrader grade_id is name."""
    return next(index for index, cell in enumerate(notebook_cells) if grade_id(cell) == name)


def axis_labels(source):
    """Every literal xlabel= / ylabel= / set_xlabel(...) / set_ylabel(...) string of a code cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # an IPython magic (the Colab install cell): no plot there
        return []
    labels = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in ("xlabel", "ylabel") and isinstance(node.value, ast.Constant):
            labels.append(node.value.value)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("set_xlabel", "set_ylabel"):
            labels += [arg.value for arg in node.args if isinstance(arg, ast.Constant)]
    return labels


def names_its_unit(label, unitless):
    """Whether an axis label ends with its unit in parentheses, or names what has none (unitless: a compiled regex
    of the assignment's labels that measure nothing with a unit, e.g. a token id)."""
    return bool(re.search(r"\([^()]+\)\s*$", label) or unitless.match(label))


def glossary_or_fail(path):
    """glossary(path), or the test fails saying the notebook has no Shapes paragraph."""
    import pytest
    try:
        return glossary(path)
    except StopIteration:
        pytest.fail("the notebook has no '**Shapes.**' paragraph defining the names its shapes use")
