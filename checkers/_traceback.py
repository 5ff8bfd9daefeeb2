"""How a failed check reads in a notebook: the student's line that called the check, the lines of their code that
raised during the check (if any), then one sentence.

IPython (so JupyterLab, classic Notebook, Colab, nbconvert/nbclient and nbval) shows an exception that has a
`_render_traceback_()` method with the lines it returns instead of the traceback: the frames of checkers/,
course_lib/ and torch never appear. Plain Python (and pytest) prints the usual traceback, with the student's frames
added as a note.
"""
from course_lib.frames import error_line, frame_lines, plain_lines, student_frames


def render_traceback(failure):
    """IPython's lines for a CheckFailure: where the student called the check, where their code raised, the sentence."""
    return frame_lines(student_frames(failure.__traceback__) + raised_frames(failure)) + [error_line(failure)]


def raised_frames(failure):
    """The student's frames of the exception their code raised inside the check (none if it raised nothing)."""
    raised = getattr(failure, "student_error", None)
    return student_frames(raised.__traceback__) if raised is not None else []


def attach_student_error(failure, error):
    """Remember the exception the student's code raised, to show its frames; plain Python gets them as a note."""
    failure.student_error = error
    frames = student_frames(error.__traceback__)
    if frames and hasattr(failure, "add_note"):  # Python 3.11+
        failure.add_note("\n".join([f"Your code raised {type(error).__name__} here (most recent call last):",
                                    *plain_lines(frames)]))
    return failure
