"""Stage 3, judging: the probe's records -> one verdict per task, and what needs the instructor's attention.

Entry point: `judge` (after `prepare_judging`, once per grading run). Runs in the grader's own process, which
never executes student code: the reference (from solutions/, expected.py) runs every case, the records are
compared with its (compare.py; trained models: trained_models.py), one verdict per task (score.py), and notes on
anything odd (analysis.py).
"""
from dataclasses import dataclass, field

from checkers._core import catalogue

from ..records import MAX_FILE, STOPPED_ERRORS
from .analysis import attention_notes, first_cells
from .expected import expected_records, reference_namespace
from .score import Verdict, score_submission

__all__ = ["Judging", "Result", "Verdict", "judge", "known_diagnoses", "not_graded", "prepare_judging",
           "reference_namespace"]


@dataclass
class Judging:
    """What every submission of an assignment is judged against, prepared once per run."""

    reference: dict
    cases: dict
    expected: dict
    points: dict  # {task: points}
    needs: dict = field(default_factory=dict)  # {trained task: the definition tasks it needs}, course.toml's
    known: dict = field(default_factory=dict)  # {task: {id: sentence} of the named mistakes its check can give}


@dataclass
class Result:
    """One submission's grade: its verdicts, the notes for the instructor, the seconds it took."""

    student: str
    verdicts: dict
    notes: list = field(default_factory=list)  # what needs the instructor's attention
    seconds: float = 0.0
    error: str = ""  # why it could not be run and judged ('' when it was)
    limits: list = field(default_factory=list)  # the time limits its probe reached (grading.records.ProbeRun.limits)
    info: list = field(default_factory=list)  # what was done that needs no one (collect's renamed or extra files)

    @property
    def score(self):
        return sum(verdict.score for verdict in self.verdicts.values())

    @property
    def max_score(self):
        return sum(verdict.points for verdict in self.verdicts.values())

    @property
    def flags(self):
        """{task: why a person must look at it} (nbgrader's needs_manual_grade is set for these)."""
        return {task: verdict.flag for task, verdict in self.verdicts.items() if verdict.flag}

    def flag_all(self, reason):
        for verdict in self.verdicts.values():
            verdict.flag = verdict.flag or reason


def prepare_judging(course, checks, reference, cases):
    """The expected records of every case, from the reference; checks: the release's {task: check cell}."""
    expected = expected_records(cases, reference, {task: cell.names for task, cell in checks.items()})
    return Judging(reference, cases, expected, {task: cell.points for task, cell in checks.items()},
                   course.registered.needs, known_diagnoses(course.registered))


def known_diagnoses(registered):
    """{task: {"<assignment>.<task>.<slug>": sentence}}: every named mistake the task's checkers package can give."""
    known = {}
    for number, task in registered.tasks.items():
        package = ".".join(task.check.split(":")[0].split(".")[:2])
        known[number] = {f"{registered.name}.{number}.{slug}": text for slug, text in catalogue(package).items()}
    return known


def not_graded(judging, reason, flag=""):
    """A zero verdict for every task, saying why (an unreadable notebook, a grader error)."""
    return {task: Verdict(task, points, 0.0, f"Task {task} was not graded: {reason}.", flag=flag)
            for task, points in judging.points.items()}


def judge(program, run, judging, layout):
    """(verdicts, notes for the instructor) of a submission's probe run.

    Args:
        program: the cells the probe ran (grading.match); run: its ProbeRun; layout: the release's layout.
    """
    verdicts = score_submission(judging.cases, judging.expected, run.records, judging.points, judging.reference,
                                judging.needs)
    unreadable_records(program, run, verdicts)
    tampering_flags(program, run, verdicts)
    probe_failures(run, verdicts)
    named_mistakes(program, run, verdicts, judging.known)
    return verdicts, attention_notes(program, layout, run.cells, verdicts)


UNREADABLE = ("Task {task} could not be judged: its check cell ran, but the records of its tests could not be "
              "read (a tensor subclass, or a file the notebook wrote over).")
OVERSIZED = ("Task {task} could not be judged: its check cell ran, but what it saved (the model's weights) is "
             "{size:,.0f} MiB, more than the {limit:.0f} MiB the grader reads (sizes far beyond the task's defaults).")


def unreadable_records(program, run, verdicts):
    """A task whose check cell ran but whose records did not load scores 0 and is flagged, not 'never reached'."""
    stopped = set(STOPPED_ERRORS.values())
    for index, cell in enumerate(program):
        output = run.cells.get(index)
        failure = (output or {}).get("error") if isinstance(output, dict) else None
        if cell.kind != "check" or output is None or cell.task in run.records:
            continue
        if isinstance(failure, dict) and failure.get("ename") in stopped:
            continue
        verdict = verdicts[cell.task]
        if cell.task in run.oversized:
            size, limit = run.oversized[cell.task] / 2 ** 20, MAX_FILE / 2 ** 20
            verdict.score, verdict.message = 0.0, OVERSIZED.format(task=cell.task, size=size, limit=limit)
            verdict.flag = f"the saved model ({size:,.0f} MiB) exceeds the {limit:.0f} MiB the grader reads: not judged"
            continue
        verdict.score, verdict.message = 0.0, UNREADABLE.format(task=cell.task)
        verdict.flag = "its records could not be read: possible tampering (a tensor subclass or a forged file)"


def tampering_flags(program, run, verdicts):
    """Every task checked after a cell that replaced torch's comparisons or the checkers is flagged."""
    replaced = first_cells(program, run.cells, "tampered")
    if not replaced:
        return
    first = min(replaced.values())
    names = ", ".join(sorted(replaced)[:3])
    for index, cell in enumerate(program):
        if cell.kind == "check" and index > first:
            verdicts[cell.task].flag = verdicts[cell.task].flag or f"tampering: the notebook replaced {names}"


def named_mistakes(program, run, verdicts, known):
    """A failed task's diagnosis: the named mistake its notebook check gave in the probe, if the task's catalogue has
    it. Informative only (the class report): the check ran beside the student's code, so it never scores."""
    for index, cell in enumerate(program):
        output = run.cells.get(index)
        error = output.get("error") if isinstance(output, dict) else None
        diagnosis = error.get("diagnosis") if isinstance(error, dict) else None
        verdict = verdicts.get(cell.task) if cell.kind == "check" else None
        if verdict and verdict.score < verdict.points and type(diagnosis) is str and \
                diagnosis in known.get(cell.task, ()):
            verdict.diagnosis = diagnosis


def probe_failures(run, verdicts):
    """Tasks never reached because the probe itself stopped outside any cell are flagged: nothing judged them."""
    if any(note.startswith("the probe stopped outside any cell") for note in run.notes):
        for task, verdict in verdicts.items():
            if task not in run.records:
                verdict.flag = verdict.flag or "the probe stopped outside any cell before this task: check by hand"
