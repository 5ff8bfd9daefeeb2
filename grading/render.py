"""The graded notebook handed to nbgrader: the release with the student's code and the probe's outputs.

Its check cells carry the grader's verdicts (a passing line, or an error output), so nbgrader's
own scoring (`autograde --no-execute`) agrees with the authoritative scores, and its feedback shows
the student their code, what it printed, and why each task passed or failed. It holds no hidden
test source and no reference code: only release cells, the student's cells and text.
"""
import copy

from .text import clean_tree, markdown, shorten

STREAM_LIMIT = 4000  # characters kept of a cell's stdout or stderr (the end, where errors and results are)
SOURCE_LIMIT = 20_000  # characters shown of one cell's code
TEXT_LIMIT = 2000  # characters of a display, an error's name or message, a traceback line
DISPLAYS, FRAMES, NOTES = 5, 5, 40  # shown per cell, per error, per notebook
RENDER_LIMIT = 2_000_000  # characters of student code and output in one rendered notebook; later cells are left out


def stream(name, text):
    text = text if isinstance(text, str) else str(text)
    if len(text) > STREAM_LIMIT:
        text = f"... ({len(text) - STREAM_LIMIT} characters cut)\n" + text[-STREAM_LIMIT:]
    return {"output_type": "stream", "name": name, "text": text}


def error(ename, evalue, frames=()):
    ename, evalue = shorten(ename, 100), shorten(evalue, TEXT_LIMIT)
    frames = [shorten(frame, TEXT_LIMIT) for frame in list(frames)[-FRAMES:]] if isinstance(frames, list) else []
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": frames + [f"{ename}: {evalue}"]}


def cell_outputs(output):
    """nbformat outputs of one probe cell output (text only: figures are not kept)."""
    if not isinstance(output, dict):
        return []
    outputs = [stream(name, output.get(name) or "") for name in ("stdout", "stderr") if output.get(name)]
    displays = output.get("displays") if isinstance(output.get("displays"), list) else []
    outputs += [{"output_type": "display_data", "data": {"text/plain": shorten(text, TEXT_LIMIT)}, "metadata": {}}
                for text in displays[:DISPLAYS] if text]
    failure = output.get("error")
    if isinstance(failure, dict):
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
    return {"cell_type": "code", "id": cell_id, "metadata": metadata or {}, "source": shorten(source, SOURCE_LIMIT),
            "outputs": outputs, "execution_count": None}


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
            cells.append(dict(copy.deepcopy(release_cell), source=shorten(cell.source, SOURCE_LIMIT), outputs=body,
                              execution_count=None))
        else:
            cells.append(code_cell(cell.source, body, f"student-{position}-{count}"))
    return cells


def notes_cell(notes):
    """The grader's notes as Markdown; each note is escaped, as it may quote the student's text."""
    shown = [f"- {markdown(note)}" for note in notes[:NOTES]]
    more = [f"- … and {len(notes) - NOTES} more notes"] if len(notes) > NOTES else []
    text = "**Grader notes**\n\n" + "\n".join(shown + more)
    return {"cell_type": "markdown", "id": "grader-notes", "metadata": {}, "source": text}


def size(cell):
    """Characters of a rendered cell's code and outputs, roughly."""
    return len(cell.get("source", "")) + sum(len(str(output)) for output in cell.get("outputs", []))


def within_budget(cells):
    """The cells, leaving out the student's own added cells once RENDER_LIMIT is spent (graded cells always stay)."""
    kept, used, left_out = [], 0, 0
    for cell in cells:
        own = str(cell.get("id", "")).startswith("student-")
        used += size(cell)
        if own and used > RENDER_LIMIT:
            left_out += 1
            continue
        kept.append(cell)
    if left_out:
        note = (f"**{left_out} cell(s) you added are not shown here**: this notebook's code and outputs exceed "
                f"{RENDER_LIMIT // 1_000_000} million characters. They were run and graded all the same.")
        kept.append({"cell_type": "markdown", "id": "grader-left-out", "metadata": {}, "source": note})
    return kept


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
    metadata = copy.deepcopy({key: value for key, value in release.items() if key != "cells"})
    return clean_tree(dict(metadata, cells=within_budget(cells)))
