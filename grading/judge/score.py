"""Turn the probe's records into one verdict per task: all of the task's cases match, or the first that does not.

Runs in the grader's own process, which never executes student code: it only compares the
records (data read with torch.load(weights_only=True)) with the reference's.
"""
from dataclasses import dataclass

from .compare import compare_case
from .trained_models import trained_problem


@dataclass
class Verdict:
    """The grade of one task and the sentence that explains it."""

    task: int
    points: float
    score: float
    message: str
    visible_failed: bool = False  # a case the notebook's own check runs failed too
    note: str = ""  # for the instructor's report only
    flag: str = ""  # why the grader could not judge it: set, nbgrader marks the task for manual grading
    trained: bool = False  # judged as a trained model (its case has a "trained" spec)
    diagnosis: str = ""  # the named mistake the notebook's own check gave, when the task failed (the class report's)


def strip_task(message, task):
    """'Task N: X' -> 'X': the verdict adds its own prefix."""
    prefix = f"Task {task}: "
    return message[len(prefix):] if message.startswith(prefix) else message


SUBCLASS = ("returned a tensor subclass ({names}) rather than a torch.Tensor; the grader compares only plain "
            "tensors")


def case_problem(task, recipe, got, expected, context):
    """(problem or None, note for the report, flag: why it needs a person) of one case."""
    if not isinstance(got, dict):
        return "not run", "", ""
    if "error" in got:
        return str(got["error"]), "", ""
    if got.get("subclasses"):
        names = ", ".join(str(name) for name in got["subclasses"][:3])
        return SUBCLASS.format(names=names), "", f"a tensor subclass ({names}) was returned: possible tampering"
    if "trained" in recipe:  # settings beyond the task's defaults are flagged (trained.within_defaults)
        problem, flag, note = trained_problem(task, got, expected, context["reference"])
        return problem, note, flag
    return compare_case(recipe, got, expected), "", ""


def score_task(task, points, recipes, expected, records, context):
    """The verdict of one task from its records (None: the probe never reached the check cell)."""
    trained = any("trained" in recipe for recipe in recipes)
    if records is None:
        return Verdict(task, points, 0.0, f"Task {task} was not graded: the notebook never reached its check cell.",
                       True, trained=trained)
    flags, notes = [], []  # of passed cases: the points stand, a person checks them (a trained model no step made)
    for index, recipe in enumerate(recipes):
        got = records[index] if index < len(records) else None
        try:
            problem, note, flag = case_problem(task, recipe, got, expected[index], context)
        except Exception as error:  # noqa: BLE001 -- a record of an unexpected form (forged by the notebook?)
            problem, note = f"the probe's record of this test is malformed ({type(error).__name__})", ""
            flag = "a record the grader could not read: possible tampering"
        if problem:
            message = problem if problem.startswith(f"Task {task} ") else \
                f"Task {task}: {recipe['name']}: {strip_task(problem, task)}"
            return Verdict(task, points, 0.0, message, recipe["visible"], note, flag, trained)
        flags += [flag] if flag else []
        notes += [note] if note else []
    hidden = sum(not recipe["visible"] for recipe in recipes)
    return Verdict(task, points, points, f"✓ Task {task} passed the grader: {len(recipes)} tests, {hidden} of them "
                   "hidden.", note="; ".join(notes), flag=(flags or [""])[0], trained=trained)


NEEDS = ("Task {task}: the trained model's classes do not pass Task {needed}, so its weights were trained for another "
         "function than the one graded (the reference classes): fix Task {needed} first, then train again.")


def apply_needs(verdicts, needs):
    """A trained task scores 0, saying which task to fix first, unless every task it needs (course.toml's `needs`: the
    classes of its model) earned its points, as its check runs those tasks' checks on the model's class first; a
    needed task not scored here is not judged."""
    for task, needed in needs.items():
        verdict = verdicts.get(task)
        failed = [number for number in needed
                  if number in verdicts and verdicts[number].score < verdicts[number].points]
        if verdict is not None and failed:  # the first thing to fix, whatever else the model's record shows
            verdict.score, verdict.message = 0.0, NEEDS.format(task=task, needed=failed[0])


def score_submission(cases, expected, records, points, reference, needs=None):
    """{task: Verdict} for every task, in order; needs: {trained task: the definition tasks it needs}."""
    verdicts, context = {}, {"reference": reference}
    for task in sorted(cases):
        verdicts[task] = score_task(task, points[task], cases[task], expected[task], records.get(task), context)
    apply_needs(verdicts, needs or {})
    return verdicts
