"""Known student mistakes of the vit assignment, each a few edits of the reference source (the solutions notebook).
See course/mistakes/transformer.py for how they are used. Instructor-side only: never shipped.
"""
from course.mistakes import Mutant

# ---- Task 1: patchify ----
PATCHES_MUTANTS = []

# ---- Task 2: PatchEmbedding ----
EMBEDDING_MUTANTS = []

MUTANTS = [
    # ---- Tasks 1-2 ----
    *PATCHES_MUTANTS,
    *EMBEDDING_MUTANTS,

    # ---- Tasks 3, 5 (the vit-model helper appends theirs) ----
]
