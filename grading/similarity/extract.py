"""The code to compare: each student's own cells, and the release's code as boilerplate."""
from ..collect import discover
from ..match import UnreadableNotebook, bounded, read
from ..match.cells import classify
from ..match.notebook import release_layout


def release_code(course):
    """Every code cell of the release notebook: what every student was given, never evidence of copying."""
    layout = release_layout(read(course.release_notebook))
    return "\n\n".join(cell.source for cell in layout)


def student_code(notebook, layout):
    """The submission's answer cells and the cells the student added, in notebook order."""
    return "\n\n".join(cell.source for cell in classify(notebook, layout) if cell.kind in ("answer", "extra"))


def answers_by_student(course):
    """{student: their code} for every submission with a readable notebook; [students left out, with why]."""
    release = read(course.release_notebook)
    layout, found, skipped = release_layout(release), {}, []
    for submission in discover(course.submitted, course.assignment):
        try:
            if submission.notebook is None:
                raise UnreadableNotebook("no notebook was submitted")
            notebook, _ = bounded(read(submission.notebook), release)  # a notebook of 100,000 cells: the release's
            found[submission.student] = student_code(notebook, layout)
        except UnreadableNotebook as error:
            skipped.append(f"{submission.student}: {error}")
    return found, skipped
