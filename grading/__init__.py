"""Instructor-side grading of the course's assignments: `make collect` and `make grade`.

Never shipped to students (not part of the installed package). One folder per stage a submission passes,
each with its entry point in its __init__.py; grade.py calls them in order:

    collect/    LMS zip -> submitted/<student>/<assignment>/<assignment>.ipynb (unpack.py, naming.py);
                the submissions to grade (submissions.py)                         entry: collect, discover
    run/        the sandbox run: cells matched to the release (notebook.py, match.py), the program to run
                (program.py), the probe's read-only runtime (runtime.py; probe.py and recipes.py are copied
                there and run as plain modules with `python -I`; recipes.py runs a case the same way on student
                and reference objects, so judge/ and cases/ use it too), bubblewrap and cgroups (sandbox.py,
                cgroups.py), the supervisor that survives hangs and crashes (supervise.py)
                                                                                  entry: run_submission
    judge/      records -> verdicts: the reference's records (expected.py), comparison (compare.py, trained.py),
                one verdict per task (score.py), what needs attention (analysis.py)   entry: judge
    publish/    verdicts -> the graded notebook (render.py), nbgrader's gradebook and feedback (gradebook.py),
                grades_by_task.csv and the report (report.py), the LMS exports (exports.py)
                                                                                  entry: write_graded, publish
    cases/      each assignment's test cases, cases/<assignment>/ (found by name), with the builders they
                share (parts.py)                                                  entry: build_cases

Shared by the stages: course.py (a course folder's paths and limits), text.py (escaping), schedule.py (jobs
at once, progress lines).
grade.py is `python -m grading.grade`, the pipeline.
"""
