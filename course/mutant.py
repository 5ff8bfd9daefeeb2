"""A known student mistake, written as edits of the reference (each assignment's course/<name>/mistakes.py).

Each module defines MUTANTS, a tuple of Mutant (a mistake written as edits of the reference source); `make
fixtures` stores their outputs beside the correct ones, and the tests plant each one and require its check to fail.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    """One known mistake: the task it belongs to, its name, and the edits that plant it in the reference source."""

    task: int
    name: str
    edits: tuple  # ((old, new), ...) applied to the reference source in order
    diagnosis: str = ""  # what a checker says when a student's output matches this mistake

    def apply(self, source):
        for old, new in self.edits:
            assert old in source, f"mutant {self.name!r}: {old!r} is no longer in the reference"
            source = source.replace(old, new)
        return source

