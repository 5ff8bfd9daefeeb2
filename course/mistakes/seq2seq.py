"""Known student mistakes of the seq2seq assignment, each a few edits of the reference source (the solutions
notebook). See course/mistakes/transformer.py for how they are used. Instructor-side only: never shipped.
"""
from course.mistakes import Mutant

MUTANTS = [
    # ---- Tasks 1-4 ----

    # ---- Tasks 5-7 ----
]
