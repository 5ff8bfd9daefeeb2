"""Instructor-side grading of the Transformer workbook: `make collect` and `make grade`.

Never shipped to students (not part of the installed package). The pipeline, one module per step:

    collect.py, naming.py    LMS zip -> submitted/<student>/<assignment>/<assignment>.ipynb
    submissions.py           which notebook of each submission folder to grade
    notebook.py, match.py    what each cell is: answer, check, provided, or the student's own
    program.py               the cells to run: pristine provided and check cells, the student's answers
    cases/                   visible and hidden test cases (inputs and weights only)
    expected.py              what each case must produce, from the reference in solutions/
    runtime.py               the read-only folder a probe runs from
    sandbox.py, cgroups.py   bubblewrap: allow-list root, namespaces, unprivileged uid, memory, disk and CPU caps
    supervise.py, probe.py   run the student's code and record outputs; survive hangs and crashes
    recipes.py               one case, run the same way on student and reference objects
    compare.py, trained.py   compare records with the reference's
    score.py                 one verdict per task
    render.py                the graded notebook nbgrader stores and turns into feedback
    gradebook.py             nbgrader: register, autograde --no-execute, set scores, feedback, export
    analysis.py, report.py   what needed attention, grades_by_task.csv, grading_report.md
    grade.py                 the command that runs all of it
"""
