"""Each assignment's hidden grading cases, found through its slice in course/<assignment>/cases/ (parts.py here:
the builders they all share).

An assignment's cases package defines `build_cases(reference, assignment)` ({task: [recipe, ...]}) and, when
it has training tasks, what judge/trained_models.py needs for a trained task's spec: `evaluation_data(spec)` (the
grader's own data), `trained_config(weights, settings, spec)` (the reference constructor's keywords) and
`trained_accuracy(task, model, data, reference)` (the loaded reference model's accuracy on that data, or the measure
its spec bounds, e.g. bits per byte; reference: the reference namespace; a spec that names "notebook_data" adds the
keyword `notebook`: that plain data as the probe recorded it, to validate), and may define FACT_PROBLEMS ({(fact,
key): sentence}: what the judge says when a fact differs from the reference's, see fact_problem). A recipe names
the weight roles of a module it builds, and the facts it records of it, by the assignment's own functions of the
public checkers package as "module:function" (recipes.slots_of, recipes.facts_of). An argument that is an object
(a scripted model for a decoding loop) is a helper of the public checkers package built in the probe (parts.helper),
and what it saw during the call (its report) is compared like an output. Adding an assignment adds its
course/<name>/cases/ and nothing in grading/. `build_cases` is instructor-side: it needs the reference namespace,
which never reaches a student or a probe; the recipes it returns hold inputs and weights only.

An assignment whose trained task is scored on data the student has (files of the Python installation) declares it
there too: `stand_ins(folder)` writes stand-ins for those files in folder and returns [(installed path, stand-in
path)], which the sandbox mounts over the installed ones (grading/sandbox/covers.py); STAND_IN_NOTE says so in the
student's feedback; `stand_in_rows()` ({"rows": tensor (N, ...), "scale": their grid}, optional) gives the stand-ins
as a model receives them, for the probe to spot in training batches; and `stand_in_flag(model, reference,
notebook=None)` (optional) is a reason for a person to look ('' when none): the loaded reference model fits the
stand-ins it could have trained on far better than their unseen twins.
"""
import shutil
from dataclasses import dataclass, field

from course.slices import slice_of


class NoCases(LookupError):
    """The assignment has no cases package (course/<name>/cases/)."""


def cases_of(name):
    """The cases package of the assignment called name (course.<name>.cases); raises NoCases."""
    cases = slice_of(name).optional("cases")
    if cases is None:
        raise NoCases(f"assignment {name!r} has no test cases: add course/{name}/cases/ "
                      "(build_cases; see grading/cases/__init__.py)")
    return cases


def build_cases(reference, assignment):
    """{task: [recipe, ...]} for every task of the registry's assignment, from its own cases package."""
    return cases_of(assignment.name).build_cases(reference, assignment)


def evaluation_data(spec):
    """The grader's own data a trained task's model is judged on (never sent to a probe)."""
    return cases_of(spec["assignment"]).evaluation_data(spec)


def fact_problem(fact, key):
    """The judge's sentence for a fact's `key` that differs from the reference's: from the FACT_PROBLEMS of the cases
    package of the assignment whose checkers hold the fact ("checkers.<name>.<module>:<function>"), else
    "<function>: <key> is wrong"."""
    module, _, function = fact.partition(":")
    parts, problems = module.split("."), {}
    if len(parts) > 2 and parts[0] == "checkers":
        try:
            problems = getattr(cases_of(parts[1]), "FACT_PROBLEMS", {})
        except NoCases:
            pass
    return problems.get((fact, key), f"{function or fact}: {key} is wrong")



@dataclass(frozen=True)
class StandIns:
    """An assignment's scored data as the sandbox sees it: covers ([(installed path, stand-in path)]), the note for
    the student's feedback, and the stand-ins' rows as a model receives them ({"rows": tensor (N, ...), "scale":
    their grid}) for the probe to spot in training batches (grading/probe/provenance.py: Sightings), or None."""

    covers: list = field(default_factory=list)
    note: str = ""
    rows: dict = None


def stand_ins(name, folder):
    """The assignment's StandIns, their files written in folder (emptied first); empty for one that declares none."""
    cases = cases_of(name)
    if not hasattr(cases, "stand_ins"):
        return StandIns()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rows = cases.stand_in_rows() if hasattr(cases, "stand_in_rows") else None
    return StandIns(cases.stand_ins(folder), cases.STAND_IN_NOTE, rows)
