"""The answers tests/test_check_grade_agreement.py runs through a check and the grader, and the ways an assignment's
own tests list them (course/<a>/tests/agreement.py: SOURCES, WRITTEN_HERE and, if a check cell passes objects no
definition task defines, stand_ins)."""
from dataclasses import dataclass, field


@dataclass
class Case:
    """One answer to one task: its objects by the check cell's names, or edits of the reference source."""

    task: int
    name: str
    right: bool  # a correct answer (full points expected) or a mistake (0 expected)
    objects: dict = field(default_factory=dict)  # {check-cell name: student object}
    edits: tuple = ()  # Mutant edits of the reference source, when the answer is written that way


def mutants(right):
    """Cases from a list of Mutant (edits of the reference source)."""
    return lambda listed: [Case(m.task, m.name, right, edits=m.edits) for m in listed]


def by_names(task_objects, right):
    """Cases from (task, objects in the check cell's order) pairs."""
    return [Case(task, "-".join(getattr(o, "__name__", type(o).__name__) for o in objects), right,
                 objects=tuple(objects)) for task, objects in task_objects]


def dict_entries(entries, right):
    """Cases from dict(task=, name=, objects={name: obj} or edits=((old, new), ...), what=) entries
    (course/<a>/tests/unnamed_mistakes.py): the objects by the check cell's names, or edits of the reference source."""
    return [Case(e["task"], e["name"], right, objects=dict(e.get("objects", {})), edits=tuple(e.get("edits", ())))
            for e in entries]
