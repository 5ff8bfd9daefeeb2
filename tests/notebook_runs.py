"""Reading an executed notebook's errors: check cells that say their task is not implemented yet, TODOs reached."""
import ast
import re


def errors(cell):
    return [output for output in cell.get("outputs", []) if output["output_type"] == "error"]


def not_implemented_tasks(executed):
    """The tasks whose check cells failed, each with its "Task N is not implemented yet" and nothing else."""
    checked = []
    for cell in executed.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            task = int(re.search(r"\d+", meta["grade_id"]).group())
            (error,) = errors(cell)
            assert error["ename"] == "NotImplementedYet", (task, error["ename"], error["evalue"])
            assert error["evalue"].startswith(f"Task {task} is not implemented yet"), error["evalue"]
            checked.append(task)
    return checked


def assigned_names(source):
    """The names a cell binds at its top level (assignments, definitions, imports); IPython lines are skipped."""
    try:
        tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    except SyntaxError:
        return set()
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        else:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            found |= {name.id for target in targets if target is not None
                      for name in ast.walk(target) if isinstance(name, ast.Name)}
    return found


def todo_failures(executed):
    """Indices of the other code cells that failed, each with NotImplementedError (a TODO reached) or with a
    NameError of a name that an earlier failed cell binds (data a TODO was to produce: the cell never bound it)."""
    failing, unbound = [], set()
    for index, cell in enumerate(executed.cells):
        if cell.cell_type != "code" or cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        for error in errors(cell):
            missing = re.fullmatch(r"name '(\w+)' is not defined", error["evalue"]) if error["ename"] == "NameError" \
                else None
            assert error["ename"] == "NotImplementedError" or (missing and missing.group(1) in unbound), \
                (index, cell.source[:80], error["ename"], error["evalue"])
            failing.append(index)
            unbound |= assigned_names(cell.source)
    return failing
