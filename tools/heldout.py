"""A held-out list of mistakes (course/<name>/tests/heldout_round<N>.py, one per round of writing): each mistake, as
edits of the reference answer source, planted, built, and run through its task's check, in one place for every list,
the test that holds the lists (tests/test_heldout_round2.py) and the tool that prints what the checks said
(tools/heldout_messages.py)."""
import contextlib
import functools
import importlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

from course.mutant import Mutant
from course.reference import load_reference, reference_source
from course.registry import assignment, assignments
from grading.match import check_cells, release_layout
from grading.match.notebook import read

COURSE = Path(__file__).resolve().parent.parent / "course"  # course/<name>/tests/heldout_round<N>.py
ROUND = re.compile(r"heldout_round(\d+)\.py")


def held_out_lists(round_=None):
    """{(assignment, round): the list's module} of every registered assignment, in registry and round order; round_:
    that round only."""
    found = {}
    for registered in assignments():
        folder = COURSE / registered.name / "tests"
        numbers = sorted(int(match.group(1)) for path in folder.glob("heldout_round*.py")
                         if (match := ROUND.fullmatch(path.name)))
        for number in numbers:
            if round_ in (None, number):
                module = f"course.{registered.name}.tests.heldout_round{number}"
                found[registered.name, number] = importlib.import_module(module)
    return found


@functools.lru_cache(maxsize=None)
def checked_names(name):
    """{task: the names its check cell passes, in order}, read from the assignment's release notebook as the grader
    reads it (grading.match)."""
    cells = check_cells(release_layout(read(assignment(name).release_notebook)))
    return {task: tuple(cell.names) for task, cell in cells.items()}


@dataclass(frozen=True)
class HeldOut:
    """The assignment called name's list; for a check cell that also passes what no answer defines (a trained model),
    extra(namespace, task) -> those objects, in the order the cell passes them."""

    name: str
    extra: object = None

    def source(self, item):
        """The reference answer source with the mistake's edits applied in order (as a planted Mutant applies them)."""
        return Mutant(item["task"], item["name"], item["edits"]).apply(reference_source(assignment(self.name)))

    def arguments(self, item):
        """Every object the task's check cell passes, in order, built from the edited source run as a student's notebook
        cell (so that a check shows its lines, as in the notebook)."""
        namespace = load_reference(self.source(item), cell=f"<ipython-input-{self.name}-{item['name']}>")
        names = checked_names(self.name)[item["task"]]
        extras = iter(self.extra(namespace, item["task"]) if self.extra else ())
        return tuple(namespace[name] if name in namespace else next(extras) for name in names)


def check_said(name, held_out, item):
    """(passed, the check's sentence) of the mistake's task check on the objects held_out builds for it."""
    checks = importlib.import_module(f"checkers.{name}")
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            getattr(checks, f"check_task_{item['task']}")(*held_out.arguments(item))
    except checks.CheckFailure as failure:
        return False, str(failure)
    return True, printed.getvalue().strip()
