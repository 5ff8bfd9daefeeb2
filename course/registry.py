"""The course registry: the assignments of course.toml, in release order, with their tasks and time limits.

Usage: `python -m course.registry names` prints the assignments' names, one per line, in release order (the
Makefile iterates over them). Needs only the standard library.
"""
import sys
import tomllib
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout: course.toml, solutions/, notebooks/
REGISTRY = "course.toml"


class RegistryError(ValueError):
    """course.toml is missing something or says something impossible."""


@dataclass(frozen=True)
class Limits:
    """Seconds a graded cell may run: any cell, and a cell that trains (calls train(...)); and the wall-clock seconds
    a graded notebook may spend asleep or blocked, without using the CPU, in all its cells together."""

    cell_seconds: int
    training_cell_seconds: int
    idle_seconds: int = 300


@dataclass(frozen=True)
class Task:
    """One task: its number, its points, the check function ("module:function"), whether it trains a model, and
    the tasks whose classes its trained model is built from (its points need theirs)."""

    number: int
    points: float
    check: str
    trains: bool
    needs: tuple = ()

    @property
    def check_module(self):
        return self.check.split(":", 1)[0]

    @property
    def check_function(self):
        return self.check.split(":", 1)[1]


@dataclass(frozen=True)
class Assignment:
    """One assignment of the registry; its notebooks' paths follow from its name under root."""

    name: str
    title: str
    tasks: dict  # {number: Task}, in task order
    limits: Limits
    root: Path
    due: datetime = None  # optional `due`: later files of a download are noted late (the LMS's clock, local time)

    @property
    def source_notebook(self):
        return self.root / "solutions" / self.name / f"{self.name}.ipynb"

    @property
    def release_notebook(self):
        return self.root / "notebooks" / self.name / f"{self.name}.ipynb"

    @property
    def points(self):
        """{task number: points}."""
        return {number: task.points for number, task in self.tasks.items()}

    @property
    def needs(self):
        """{task: the definition tasks its trained model's classes come from}, for the tasks that say so."""
        return {number: task.needs for number, task in self.tasks.items() if task.needs}

    @property
    def definition_tasks(self):
        """Numbers of the tasks answered by definitions (classes and functions), not by training."""
        return tuple(number for number, task in self.tasks.items() if not task.trains)

    @property
    def training_tasks(self):
        return tuple(number for number, task in self.tasks.items() if task.trains)


def _task(name, number, entry):
    if not str(number).isdigit():
        raise RegistryError(f"{name}: task {number!r} is not a number")
    if not {"points", "check", "trains"} <= set(entry) <= {"points", "check", "trains", "needs"}:
        raise RegistryError(f"{name}: task {number} needs points, check and trains, and may say needs "
                            f"(has {sorted(entry)})")
    if not isinstance(entry["check"], str) or entry["check"].count(":") != 1:
        raise RegistryError(f"{name}: task {number}'s check must read 'module:function'")
    if not isinstance(entry["points"], (int, float)) or entry["points"] <= 0:
        raise RegistryError(f"{name}: task {number}'s points must be a positive number")
    if not isinstance(entry["trains"], bool):
        raise RegistryError(f"{name}: task {number}'s trains must be true or false")
    needs = entry.get("needs", [])
    if not isinstance(needs, list) or any(type(n) is not int or not 0 < n < int(number) for n in needs):
        raise RegistryError(f"{name}: task {number}'s needs must list earlier tasks' numbers")
    return Task(int(number), entry["points"], entry["check"], entry["trains"], tuple(needs))


def _assignment(entry, limits, root):
    name = entry.get("name", "")
    if not name.isidentifier():
        raise RegistryError(f"assignment name {name!r} must be a Python identifier (it names folders and modules)")
    tasks = dict(sorted((task.number, task) for task in
                        (_task(name, number, task) for number, task in entry.get("tasks", {}).items())))
    if not tasks:
        raise RegistryError(f"{name}: no tasks")
    for task in tasks.values():
        if any(needed not in tasks or tasks[needed].trains or not task.trains for needed in task.needs):
            raise RegistryError(f"{name}: task {task.number} trains nothing or needs a task that is not a definition "
                                f"task ({list(task.needs)})")
    return Assignment(name, entry.get("title", ""), tasks, limits, root, _due(name, entry.get("due")))


def _due(name, value):
    """The due date as a naive datetime (a TOML date is due at its last second), or None when not given."""
    if value is None:
        return None
    if isinstance(value, datetime) and value.tzinfo is None:
        return value
    if isinstance(value, date) and not isinstance(value, datetime):
        return datetime.combine(value, time(23, 59, 59))
    raise RegistryError(f"{name}: due must be a local date-time as the LMS's download shows times, e.g. "
                        f"due = 2026-12-01T23:59:00 (got {value!r})")


def load(root=None):
    """Every assignment of root/course.toml (default: this checkout's), in release order."""
    root = Path(root).resolve() if root is not None else ROOT
    try:
        with open(root / REGISTRY, "rb") as file:
            data = tomllib.load(file)
        given = data["limits"]
        limits = Limits(int(given["cell_seconds"]), int(given["training_cell_seconds"]),
                        int(given.get("idle_seconds", Limits.idle_seconds)))
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as error:
        raise RegistryError(f"{root / REGISTRY}: {type(error).__name__}: {error}") from None
    found = [_assignment(entry, limits, root) for entry in data.get("assignments", [])]
    names = [assignment.name for assignment in found]
    if not found or len(set(names)) != len(names):
        raise RegistryError(f"{root / REGISTRY}: needs at least one assignment, each name once (has {names})")
    return found


def assignments(root=None):
    """Every assignment, in release order."""
    return load(root)


def assignment(name=None, root=None):
    """The assignment called name; without a name, the only one registered (several: RegistryError)."""
    found = load(root)
    if name is None:
        if len(found) > 1:
            raise RegistryError(f"several assignments are registered ({', '.join(a.name for a in found)}): name one")
        return found[0]
    for candidate in found:
        if candidate.name == name:
            return candidate
    raise RegistryError(f"no assignment {name!r} in {REGISTRY} (registered: {', '.join(a.name for a in found)})")


def limits(root=None):
    """The course's time limits (the same for every assignment)."""
    return load(root)[0].limits


def course_id(root=None):
    """nbgrader's id of the course (course.toml's [course] id): its folder in nbgrader's exchange."""
    path = (Path(root).resolve() if root is not None else ROOT) / REGISTRY
    try:
        with open(path, "rb") as file:
            return str(tomllib.load(file)["course"]["id"])
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as error:
        raise RegistryError(f"{path}: {type(error).__name__}: {error}") from None


def student_repo(root=None):
    """The URL of the student-facing repository (course.toml's [course] student_repo), which notebooks install from."""
    path = (Path(root).resolve() if root is not None else ROOT) / REGISTRY
    try:
        with open(path, "rb") as file:
            url = tomllib.load(file)["course"]["student_repo"]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as error:
        raise RegistryError(f"{path}: {type(error).__name__}: {error}") from None
    if not isinstance(url, str) or not url.startswith("https://github.com/"):
        raise RegistryError(f"{path}: [course] student_repo must be a https://github.com/ URL (has {url!r})")
    return url


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["names"]:
        sys.exit("usage: python -m course.registry names")
    try:
        print("\n".join(assignment.name for assignment in assignments()))
    except RegistryError as error:
        sys.exit(f"course registry: {error}")


if __name__ == "__main__":
    main()
