"""Recompute an assignment's checker fixtures from its reference notebook (run by `make fixtures`).

Executes only the answer cells of the definition tasks (registry: `trains = false`) of the assignment's solutions
notebook (course.toml; `--assignment NAME`, default: the only one registered), in float64, runs the assignment's
fixture builders (course/fixtures/<assignment>.py) on fixed random inputs and weights, and saves inputs, weights and
expected outputs to checkers/<assignment>/fixtures/task_N.pt, with the outputs of its known mistakes
(course/mistakes/<assignment>.py) beside them. The checkers ship these tensors, never the reference code. Running it
twice on one machine gives the same values; another CPU may differ in the last bits, which the staleness test
tolerates (1e-12).
"""
import argparse
import io
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this script runs from a checkout, before or without installation

from course import registry  # noqa: E402 -- importable once ROOT is on sys.path
from course.slices import slice_of  # noqa: E402 -- importable once ROOT is on sys.path
from course.reference import load_reference, reference_source  # noqa: E402 -- importable once ROOT is on sys.path


def fixtures_folder(assignment):
    """checkers/<assignment>/fixtures of the assignment's checkout."""
    return assignment.root / "checkers" / assignment.name / "fixtures"


def save(folder, name, fixture):
    """torch.save into a buffer first, then write the file whole."""
    buffer = io.BytesIO()
    torch.save(fixture, buffer)
    (folder / f"{name}.pt").write_bytes(buffer.getvalue())




def build_fixture(builder, task, namespace):
    """The fixture of one task from a namespace; fixed seeds make every run draw the same inputs."""
    generator = torch.Generator().manual_seed(1000 + task)
    torch.manual_seed(task)  # module constructors draw from the global generator
    with torch.no_grad():
        return builder(namespace, generator)


def same_weights(right, wrong):
    """Whether both runs used the same weights: a mistake that changes them (say, one block shared by all
    layers) draws other random values, and its outputs then describe weights no student module is loaded with."""
    mine, theirs = right.get("weights", {}), wrong.get("weights", {})
    return mine.keys() == theirs.keys() and all(torch.equal(mine[key], theirs[key]) for key in mine)


def graft_mistake(right, wrong, diagnosis, output_keys):
    """Store each output of the mistaken run that differs from the correct one, keyed by its diagnosis."""
    if not same_weights(right, wrong):
        return
    for key, value in list(right.items()):
        other = wrong.get(key) if isinstance(wrong, dict) else None
        if isinstance(value, dict) and key != "mistakes" and isinstance(other, dict):
            graft_mistake(value, other, diagnosis, output_keys)
        elif key in output_keys and isinstance(other, torch.Tensor) \
                and (other.shape, other.dtype) == (value.shape, value.dtype) \
                and torch.isfinite(other).all() and not torch.allclose(other, value, atol=1e-6):
            right.setdefault("mistakes", {}).setdefault(key, {})[diagnosis] = other


def add_mistakes(builder, task, fixture, source, assignment, output_keys):
    """Run every diagnosed mistake of this task on the same inputs and weights as the correct run."""
    for mutant in (m for m in slice_of(assignment.name).mistakes.MUTANTS if m.task == task and m.diagnosis):
        planted = mutant.apply(source)  # outside the try: an edit whose text left the reference must stop the build
        try:
            wrong = build_fixture(builder, task, load_reference(planted))
        except Exception:  # noqa: BLE001 -- a mistake that crashes here has no output to recognise
            continue
        graft_mistake(fixture, wrong, str(mutant.diagnosis), output_keys)  # plain text: fixtures load weights_only
    return fixture


def main(name=None, folder=None):
    """Write the fixtures of one assignment's definition tasks into folder (default: its checkers' fixtures/)."""
    assignment = registry.assignment(name)
    builders = slice_of(assignment.name).fixtures
    if set(builders.BUILDERS) != set(assignment.definition_tasks):
        sys.exit(f"make_fixtures: {assignment.name}'s definition tasks {assignment.definition_tasks} "
                 f"have fixture builders for {tuple(builders.BUILDERS)}")
    torch.set_default_dtype(torch.float64)  # expected values in float64, so tolerances measure the student
    torch.set_num_threads(1)  # seen: multi-threaded float64 sin differed in the last bits between runs
    source = reference_source(assignment)
    reference = load_reference(source)
    folder = Path(folder or fixtures_folder(assignment))
    folder.mkdir(exist_ok=True)
    for task, builder in builders.BUILDERS.items():
        fixture = add_mistakes(builder, task, build_fixture(builder, task, reference), source, assignment,
                               builders.OUTPUT_KEYS)
        save(folder, f"task_{task}", fixture)
        print(f"wrote {folder / f'task_{task}.pt'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Recompute an assignment's checker fixtures from its reference.")
    parser.add_argument("--assignment", help="assignment of course.toml (default: the only one registered)")
    parser.add_argument("--out", type=Path, help="folder for task_N.pt (default: checkers/<assignment>/fixtures)")
    arguments = parser.parse_args()
    main(arguments.assignment, arguments.out)
