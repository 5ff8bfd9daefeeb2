"""The graded notebook handed to nbgrader: the release with the student's code and the probe's outputs.

Its check cells carry the grader's verdicts (a passing line, or an error output), so nbgrader's
own scoring (`autograde --no-execute`) agrees with the authoritative scores, and its feedback shows
the student their code, what it printed, and why each task passed or failed. It holds no hidden
test source and no reference code: only release cells, the student's cells and text.
"""
import copy

STREAM_LIMIT = 4000  # characters kept of a cell's stdout or stderr (the end, where errors and results are)


def stream(name, text):
    if len(text) > STREAM_LIMIT:
        text = f"... ({len(text) - STREAM_LIMIT} characters cut)\n" + text[-STREAM_LIMIT:]
    return {"output_type": "stream", "name": name, "text": text}


def error(ename, evalue, frames=()):
    return {"output_type": "error", "ename": ename, "evalue": evalue,
            "traceback": list(frames) + [f"{ename}: {evalue}"]}


def cell_outputs(output):
    """nbformat outputs of one probe cell output (text only: figures are not kept)."""
    if not output:
        return []
    outputs = [stream(name, output.get(name) or "") for name in ("stdout", "stderr") if output.get(name)]
    outputs += [{"output_type": "display_data", "data": {"text/plain": text}, "metadata": {}}
                for text in output.get("displays", []) if text]
    failure = output.get("error")
    if failure:
        outputs.append(error(str(failure.get("ename", "Error")), str(failure.get("evalue", "")),
                             failure.get("frames", [])))
    return outputs


def verdict_outputs(verdict, own_check):
    """A check cell's outputs: the grader's verdict, after what the notebook's own check said when it failed."""
    if verdict.score:
        return [stream("stdout", verdict.message + "\n")]
    said = (own_check or {}).get("error") or {}
    outputs = []
    if said.get("evalue") and said["evalue"] not in verdict.message:
        outputs.append(stream("stdout", f"The check in your notebook said: {said['evalue']}\n"))
    return outputs + [error("TaskFailed", verdict.message)]


def code_cell(source, outputs, cell_id, metadata=None):
    return {"cell_type": "code", "id": cell_id, "metadata": metadata or {}, "source": source, "outputs": outputs,
            "execution_count": None}


def blocks(program):
    """{release index: [program indices]}: each release cell's program cells, then the cells added after it."""
    grouped, key = {-1: []}, -1
    for index, cell in enumerate(program):
        if cell.release_index >= 0:
            key = cell.release_index
        grouped.setdefault(key, []).append(index)
    return grouped


def rendered_cells(release_cell, position, program, indices, outputs, verdicts):
    """The cells that stand for one release cell: its own (with the student's code) and those added after it."""
    cells, own = [], [i for i in indices if program[i].release_index == position]
    if not own:  # a missing answer cell: shown as released, without outputs
        cells.append(dict(copy.deepcopy(release_cell), outputs=[], execution_count=None))
    for count, index in enumerate(indices):
        cell = program[index]
        if cell.kind == "check":
            body = verdict_outputs(verdicts[cell.task], outputs.get(index))
        else:
            body = cell_outputs(outputs.get(index))
        if index in own and count == 0:
            cells.append(dict(copy.deepcopy(release_cell), source=cell.source, outputs=body, execution_count=None))
        else:
            cells.append(code_cell(cell.source, body, f"student-{position}-{count}"))
    return cells


def notes_cell(notes):
    text = "**Grader notes**\n\n" + "\n".join(f"- {note}" for note in notes)
    return {"cell_type": "markdown", "id": "grader-notes", "metadata": {}, "source": text}


def render(release, program, outputs, verdicts, notes):
    """The graded notebook as a dict (nbformat 4), based on a deep copy of the release notebook."""
    grouped, cells = blocks(program), []
    for position, release_cell in enumerate(release["cells"]):
        if release_cell.get("cell_type") != "code":
            cells.append(copy.deepcopy(release_cell))
        else:
            cells += rendered_cells(release_cell, position, program, grouped.get(position, []), outputs, verdicts)
        if position == 0:
            cells += [code_cell(program[i].source, cell_outputs(outputs.get(i)), f"student-start-{i}")
                      for i in grouped[-1]] + ([notes_cell(notes)] if notes else [])
    return dict(copy.deepcopy({key: value for key, value in release.items() if key != "cells"}), cells=cells)
