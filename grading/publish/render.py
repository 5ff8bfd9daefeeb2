"""The graded notebook handed to nbgrader: the release with the student's code and the probe's outputs.

Its check cells carry the grader's verdicts (a passing line, or an error output), so nbgrader's
own scoring (`autograde --no-execute`) agrees with the authoritative scores, and its feedback shows
the student their code, what it printed, and why each task passed or failed. It holds no hidden
test source and no reference code: only release cells, the student's cells and text.
"""
import copy

from ..text import clean_tree, markdown, shorten

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


class Budget:
    """Characters of student code and output left for the rendered notebook; added cells past it are left out."""

    def __init__(self, limit=RENDER_LIMIT):
        self.left, self.left_out = limit, 0

    def spend(self, cell):
        self.left -= size(cell)
        return cell

    def added(self, source, output, cell_id):
        """A cell the student added, or None once the budget is spent (counted, not built)."""
        if self.left <= 0:
            self.left_out += 1
            return None
        return self.spend(code_cell(source, cell_outputs(output), cell_id))

    def note(self):
        text = (f"**{self.left_out} cell(s) you added are not shown here**: this notebook's code and outputs exceed "
                f"{RENDER_LIMIT // 1_000_000} million characters. They were run and graded all the same.")
        return [{"cell_type": "markdown", "id": "grader-left-out", "metadata": {}, "source": text}] \
            if self.left_out else []


def rendered_cells(release_cell, position, program, indices, outputs, verdicts, budget):
    """The cells that stand for one release cell: its own (with the student's code) and those added after it."""
    cells, own = [], [i for i in indices if program[i].release_index == position]
    if not own:  # a missing answer cell: shown as released, without outputs
        cells.append(dict(copy.deepcopy(release_cell), outputs=[], execution_count=None))
    for count, index in enumerate(indices):
        cell = program[index]
        if index in own and count == 0:
            body = verdict_outputs(verdicts[cell.task], outputs.get(index)) if cell.kind == "check" else \
                cell_outputs(outputs.get(index))
            cells.append(budget.spend(dict(copy.deepcopy(release_cell), source=shorten(cell.source, SOURCE_LIMIT),
                                           outputs=body, execution_count=None)))
        elif cell.kind == "check":  # graded cells always stay
            cells.append(budget.spend(code_cell(cell.source, verdict_outputs(verdicts[cell.task], outputs.get(index)),
                                                f"student-{position}-{count}")))
        else:
            cells.append(budget.added(cell.source, outputs.get(index), f"student-{position}-{count}"))
    return [cell for cell in cells if cell is not None]


def notes_cell(notes):
    """The grader's notes as Markdown; each note is escaped, as it may quote the student's text."""
    shown = [f"- {markdown(note)}" for note in notes[:NOTES]]
    more = [f"- … and {len(notes) - NOTES} more notes"] if len(notes) > NOTES else []
    text = "**Grader notes**\n\n" + "\n".join(shown + more)
    return {"cell_type": "markdown", "id": "grader-notes", "metadata": {}, "source": text}


def size(cell):
    """Characters of a rendered cell's code and outputs, roughly."""
    return len(cell.get("source", "")) + sum(len(str(output)) for output in cell.get("outputs", []))


def render(release, program, outputs, verdicts, notes):
    """The graded notebook as a dict (nbformat 4), based on a deep copy of the release notebook."""
    grouped, cells, budget = blocks(program), [], Budget()
    for position, release_cell in enumerate(release["cells"]):
        if release_cell.get("cell_type") != "code":
            cells.append(copy.deepcopy(release_cell))
        else:
            cells += rendered_cells(release_cell, position, program, grouped.get(position, []), outputs, verdicts,
                                    budget)
        if position == 0:
            added = [budget.added(program[i].source, outputs.get(i), f"student-start-{i}") for i in grouped[-1]]
            cells += [cell for cell in added if cell is not None] + ([notes_cell(notes)] if notes else [])
    metadata = copy.deepcopy({key: value for key, value in release.items() if key != "cells"})
    return clean_tree(dict(metadata, cells=cells + budget.note()))
