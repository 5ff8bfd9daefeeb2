"""Instructor-side grading of the course's assignments: `make collect` and `make grade`.

Never shipped to students (not part of the installed package). One folder per stage a submission passes,
each with its entry point in its __init__.py; grade.py calls them in order:

    collect/    LMS zip -> submitted/<student>/<assignment>/<assignment>.ipynb (unpack.py, naming.py);
                the submissions to grade (submissions.py)                         entry: collect, discover
    match/      a notebook cut to the bounds of an honest one (bound.py), its cells matched to the release
                (notebook.py, cells.py): the program the probe runs (program.py)  entry: bounded, match_submission
    sandbox/    the program run in bubblewrap (sandbox.py) under cgroups (cgroups.py) on a clock of CPU time
                (cpuclock.py), from a read-only runtime folder (runtime.py), watched by a supervisor that survives
                hangs and crashes (supervise.py)                                  entry: run_submission
    probe/      the code that runs inside the sandbox (probe.py, provenance.py), copied with recipes.py into the
                runtime and run as plain modules with `python -I`; it imports no stage
    judge/      records -> verdicts: the reference's records (expected.py), comparison (compare.py, trained_models.py),
                one verdict per task (score.py), what needs attention (analysis.py)   entry: judge
    publish/    verdicts -> the graded notebook (render.py), nbgrader's gradebook and feedback (gradebook.py),
                grades_by_task.csv and the report (report.py), the LMS exports (exports.py)
                                                                                  entry: write_graded, publish
    cases/      finds each assignment's test cases in course/<assignment>/cases/, with the builders they share
                (parts.py)                                                        entry: build_cases

A stage imports only earlier stages and the shared modules, never a later stage nor the probe. Shared:
records.py (what one stage hands the next: SubmissionRecord, ProbeRun), recipes.py (runs a case on given objects:
the probe on the student's, judge on the reference's), folders.py (a course folder's paths and limits), text.py
(escaping). grade.py is `python -m grading.grade`, the pipeline; jobs.py runs its submissions several at once;
shards.py splits a run into shards whose saved results a last run merges and publishes.
"""
import sys

# nbformat, which every stage reads notebooks with, imports jsonschema, which builds a Lark grammar for the "iri" string
# formats when rfc3987_syntax is installed (jupyter-events pulls it in): 0.8 s of CPU time in every grader process, for
# formats no notebook schema uses. Declared absent for the grader, jsonschema leaves those two formats unchecked.
sys.modules.setdefault("rfc3987_syntax", None)
