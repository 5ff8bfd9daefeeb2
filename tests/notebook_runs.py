"""Reading an executed notebook's errors: check cells that say their task is not implemented yet, TODOs reached."""
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


def todo_failures(executed):
    """Indices of the other code cells that failed, each with NotImplementedError only (a TODO reached)."""
    failing = []
    for index, cell in enumerate(executed.cells):
        if cell.cell_type != "code" or cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        for error in errors(cell):
            assert error["ename"] == "NotImplementedError", (index, cell.source[:80], error["ename"], error["evalue"])
            failing.append(index)
    return failing
