"""How a failed check reads in a notebook: the student's line that called the check, then one sentence.

IPython (so JupyterLab, classic Notebook, Colab, nbconvert/nbclient and nbval) shows an exception that has a
`_render_traceback_()` method with the lines it returns instead of the traceback: the checkers' own frames
never appear. Plain Python keeps its usual traceback.
"""
import linecache
import os

CHECKERS = os.path.dirname(os.path.abspath(__file__))
RED, GREEN, BOLD_GREEN, RESET = "\x1b[31m", "\x1b[32m", "\x1b[1;32m", "\x1b[0m"  # IPython's error colours


def render_traceback(error):
    """IPython's lines for error: where the student called the check, the source line, the message."""
    lines = []
    caller = calling_frame(error.__traceback__)
    if caller is not None:
        filename, lineno = caller.tb_frame.f_code.co_filename, caller.tb_lineno
        source = linecache.getline(filename, lineno, caller.tb_frame.f_globals).strip()
        lines += [f"{GREEN}{location(filename, lineno)}{RESET}", f"{BOLD_GREEN}----> {lineno}{RESET} {source}", ""]
    return lines + [f"{RED}{type(error).__name__}{RESET}: {error}"]


def calling_frame(traceback):
    """The traceback entry just before the first one inside the checkers package: the line that called the check."""
    entries = []
    while traceback is not None:
        entries.append(traceback)
        traceback = traceback.tb_next
    inside = [os.path.abspath(entry.tb_frame.f_code.co_filename).startswith(CHECKERS + os.sep) for entry in entries]
    first = inside.index(True) if True in inside else len(entries)
    return entries[first - 1] if first > 0 else None


def location(filename, lineno):
    """'Cell In[3], line 2' for a notebook cell (as IPython names it), else 'File path, line 2'."""
    try:
        from IPython import get_ipython
        shell = get_ipython()
        label = shell.compile.format_code_name(filename) if shell is not None else None
    except Exception:  # noqa: BLE001 -- older IPython (Colab's) without format_code_name, or none at all
        label = None
    return f"{label[0]} {label[1]}, line {lineno}" if label else f"File {filename}, line {lineno}"
