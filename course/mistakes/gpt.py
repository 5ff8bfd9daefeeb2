"""Known student mistakes of the gpt assignment, each a few edits of the reference source (the solutions notebook).
See course/mistakes/transformer.py for how they are used. Instructor-side only: never shipped.
"""
from course.mistakes import Mutant

MUTANTS = [
    # ---- Tasks 1-3 ----

    # ---- Tasks 4-6, 8 ----
]
