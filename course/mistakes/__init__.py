"""Known student mistakes, one module per assignment (course/mistakes/<assignment>.py), instructor-side only.

Each module defines MUTANTS (edits of the reference source, see transformer.py's Mutant) and DIAGNOSES; `make
fixtures` stores their outputs beside the correct ones, and the tests plant each one and require its check to fail.
"""
import importlib


def known_mistakes(name):
    """The known-mistakes module of the assignment called name."""
    return importlib.import_module(f"{__name__}.{name}")
