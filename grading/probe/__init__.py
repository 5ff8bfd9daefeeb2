"""The code that runs inside the sandbox: probe.py (runs a submission's program and records its objects) and
provenance.py (what trained a model), copied with grading/recipes.py into the runtime folder and run as plain
modules with `python -I` (grading/sandbox/runtime.py). It imports no stage of the grader: only what crosses the
sandbox wall is here, and nothing outside the sandbox imports it.
"""
