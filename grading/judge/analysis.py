"""What in a probe's outputs deserves the instructor's attention (none of it changes a score)."""
import re

from ..match.program import cell_label

PASS_LINE = re.compile(r"✓ Task \d+ passed")
ANY_PASS = re.compile(r"✓.*passed")


def first_cells(program, outputs, key):
    """{item: first program index whose output lists it under key} for list-valued outputs."""
    first = {}
    for index in sorted(outputs):
        for item in outputs[index].get(key) or []:
            first.setdefault(item, index)
    return first


def tampering(program, outputs):
    """One note per cell that replaced watched functions (torch's comparisons, the checkers)."""
    by_cell = {}
    for name, index in first_cells(program, outputs, "tampered").items():
        by_cell.setdefault(index, []).append(name)
    return [f"{cell_label(program[index])} replaced {', '.join(names[:4])}"
            + (f" and {len(names) - 4} more" if len(names) > 4 else "") + ": tampering attempt (no effect on the score)"
            for index, names in sorted(by_cell.items())]


def own_pass_lines(program, outputs):
    """Student cells that print a check's success line themselves."""
    return [f"{cell_label(program[index])} prints a '✓ Task … passed' line itself (no effect on the score)"
            for index, output in sorted(outputs.items())
            if program[index].kind in ("answer", "extra") and PASS_LINE.search(output.get("stdout") or "")]


def syntax_errors(program, outputs):
    return [f"{cell_label(program[index])} does not parse: {output['error']['ename']}: {output['error']['evalue']}"
            for index, output in sorted(outputs.items())
            if (output.get("error") or {}).get("ename") in ("SyntaxError", "IndentationError", "TabError")]


def stderr_cells(program, outputs):
    noisy = [index for index, output in outputs.items() if output.get("stderr") and program[index].kind != "given"]
    return [f"{len(noisy)} cell(s) wrote to stderr (warnings?): no effect on the score"] if noisy else []


ACCURACY = re.compile(r"accuracy (\d+(?:\.\d+)?)% \(the reference")
BORDERLINE = 85.0  # below this, the weights are far from what the model's own check measured: not a borderline model


def disagreement_kind(task, verdict):
    """Why a task the notebook's own check passed failed in the grader: 'accuracy', 'forward', 'unjudged',
    'hidden' or 'tampered'."""
    if verdict.trained:
        measured = ACCURACY.search(verdict.message)
        if "cannot be judged" in verdict.message:
            return "unjudged"
        if measured:
            return "accuracy" if float(measured.group(1)) >= BORDERLINE else "forward"
    return "tampered" if verdict.visible_failed or verdict.trained else "hidden"


DISAGREEMENTS = {
    "tampered": "the notebook's own check printed success but the grader's run of the same checks failed "
                "(check functions or torch tampered with)",
    "hidden": "passed the notebook's own check but failed a hidden test (special-cased or fragile code)",
    "accuracy": "passed the notebook's own check but not on the grader's fresh sequences (a borderline model)",
    "forward": "passed the notebook's own check, but the reference architecture with the model's weights is far "
               "from the target: the model's forward() does not follow from its weights (hand-written?)",
    "unjudged": "passed the notebook's own check, but the model's settings or weights do not make a valid model of "
                "the reference architecture (a hand-written forward()?)",
}


def disagreements(program, outputs, verdicts):
    """Tasks whose own check cell ran through and printed success while the grader failed them, by reason."""
    kinds = {}
    for index, output in sorted(outputs.items()):
        cell = program[index]
        verdict = verdicts.get(cell.task) if cell.kind == "check" else None
        if verdict and not verdict.score and not output.get("error") and ANY_PASS.search(output.get("stdout") or ""):
            kinds.setdefault(disagreement_kind(cell.task, verdict), []).append(cell.task)
    notes = [f"task{'s' if len(tasks) > 1 else ''} {', '.join(map(str, tasks))}: {DISAGREEMENTS[kind]}"
             for kind, tasks in kinds.items()]
    return notes + [verdicts[task].message for task in kinds.get("hidden", [])]


def untouched(program, layout):
    answers = {release.index: release.source for release in layout if release.kind == "answer"}
    mine = [cell for cell in program if cell.kind == "answer"]
    if all(cell.source == answers.get(cell.release_index) for cell in mine):
        return ["no answer cell differs from the release notebook: an empty submission?"]
    return []


def attention_notes(program, layout, outputs, verdicts):
    """Every note about a graded submission's outputs, in reading order."""
    notes = untouched(program, layout) + syntax_errors(program, outputs) + tampering(program, outputs)
    notes += own_pass_lines(program, outputs) + disagreements(program, outputs, verdicts)
    notes += [f"task {task}: {verdict.note}" for task, verdict in verdicts.items() if verdict.note]
    return notes + stderr_cells(program, outputs)
