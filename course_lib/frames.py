"""Which frames of a traceback are the student's, and how IPython shows them: the course's frames stay hidden.

A frame is the student's when its file is a notebook cell or any file outside the course's packages (checkers/,
course_lib/), torch, the standard library and site-packages. IPython (JupyterLab, Notebook, Colab, nbclient, nbval)
shows an exception that has a `_render_traceback_()` method with the lines it returns instead of its traceback;
the functions here build those lines.
"""
import linecache
import os
import site
import sysconfig

MAX_FRAMES = 8  # frames of the student's code shown at most: the first HEAD_FRAMES and the last ones
HEAD_FRAMES = 2
SOURCE_LIMIT = 200  # characters of a source line shown
CYAN, GREEN, RED, RESET = "\x1b[36m", "\x1b[32m", "\x1b[31m", "\x1b[39m"  # IPython's colours for a frame
STUDENT_PSEUDO_FILES = ("<ipython-input", "<python-input", "<stdin>")  # old IPython cells, Python 3.13's REPL


def _library_folders():
    """The folders whose code is never the student's: the course's packages, torch, the standard library and
    every site-packages."""
    import torch

    here = os.path.dirname(os.path.abspath(__file__))
    folders = [here, os.path.join(os.path.dirname(here), "checkers"), os.path.dirname(os.path.abspath(torch.__file__))]
    folders += [path for key, path in sysconfig.get_paths().items() if key in ("stdlib", "platstdlib", "purelib",
                                                                               "platlib")]
    try:
        folders += getattr(site, "getsitepackages", lambda: [])() + [site.getusersitepackages()]
    except Exception:  # noqa: BLE001 -- an odd site module (a sandbox without a home): sysconfig's paths remain
        pass
    folders += [os.path.dirname(os.__file__)]
    return tuple(os.path.abspath(folder) + os.sep for folder in folders if folder)


LIBRARY_FOLDERS = _library_folders()


def is_students(filename):
    """True when code in filename is the student's: a notebook cell or their own file, not ours nor a library's."""
    if filename.startswith("<"):
        return filename.startswith(STUDENT_PSEUDO_FILES)
    return not os.path.abspath(filename).startswith(LIBRARY_FOLDERS)


def entries(traceback):
    """The entries of a traceback, outermost first."""
    found = []
    while traceback is not None:
        found.append(traceback)
        traceback = traceback.tb_next
    return found


def student_frames(traceback):
    """(filename, lineno, name, globals) of each entry of traceback in the student's code, outermost first."""
    return [(entry.tb_frame.f_code.co_filename, entry.tb_lineno, _name(entry.tb_frame.f_code), entry.tb_frame.f_globals)
            for entry in entries(traceback) if is_students(entry.tb_frame.f_code.co_filename)]


def frame_lines(frames):
    """IPython's lines for frames: per frame its cell (or file) and line, then the source line; repeats collapsed
    and at most MAX_FRAMES shown, so a deep recursion stays short."""
    lines = []
    for run in _shown(frames):
        if isinstance(run, int):
            lines += [f"{CYAN}[... {run} more frames of your code not shown]{RESET}", ""]
            continue
        (filename, lineno, name, namespace), count = run
        where = f", in {CYAN}{name}{RESET}" if name != "<module>" else ""
        lines += [location(filename, lineno) + where,
                  f"{GREEN}----> {lineno}{RESET} {source(filename, lineno, namespace)}"]
        if count > 1:
            lines.append(f"{CYAN}[... skipping similar frames: {name} at line {lineno} ({count - 1} times)]{RESET}")
        lines.append("")
    return lines


def plain_lines(frames):
    """The same frames as Python prints them (for plain Python and pytest, which do not call _render_traceback_)."""
    lines = []
    for run in _shown(frames):
        if isinstance(run, int):
            lines.append(f"  [... {run} more frames of your code not shown]")
            continue
        (filename, lineno, name, namespace), count = run
        lines += [f'  File "{filename}", line {lineno}, in {name}', f"    {source(filename, lineno, namespace)}"]
        if count > 1:
            lines.append(f"  [Previous line repeated {count - 1} more times]")
    return lines


def error_line(error):
    """The last line IPython shows: the exception's type in red, then its message."""
    return f"{RED}{type(error).__name__}{RESET}: {error}"


def source(filename, lineno, namespace):
    """The stripped source line, shortened (a cell's line can be very long)."""
    text = linecache.getline(filename, lineno, namespace).strip()
    return text if len(text) <= SOURCE_LIMIT else text[: SOURCE_LIMIT - 1] + "…"


def location(filename, lineno):
    """'Cell In[3], line 2' for a notebook cell (as IPython names it), else 'File path, line 2'."""
    try:
        from IPython import get_ipython
        shell = get_ipython()
        label = shell.compile.format_code_name(filename) if shell is not None else None
    except Exception:  # noqa: BLE001 -- older IPython (Colab's) without format_code_name, or none at all
        label = None
    if label:
        return f"{CYAN}{label[0]}{RESET} {GREEN}{label[1]}, line {lineno}{RESET}"
    return f"{GREEN}File {filename}, line {lineno}{RESET}"


def _name(code):
    return getattr(code, "co_qualname", code.co_name)  # Model.forward rather than forward, from Python 3.11


def _shown(frames):
    """[(frame, count)] of the runs shown, outermost first, with the number of runs left out (an int) between the
    first HEAD_FRAMES and the last ones when there are more than MAX_FRAMES."""
    runs = _runs(frames)
    if len(runs) <= MAX_FRAMES:
        return runs
    tail = MAX_FRAMES - HEAD_FRAMES
    return runs[:HEAD_FRAMES] + [len(runs) - MAX_FRAMES] + runs[-tail:]


def _runs(frames):
    """[(frame, count)]: consecutive frames at the same line merged (a recursion), outermost first."""
    runs = []
    for frame in frames:
        if runs and runs[-1][0][:3] == frame[:3]:
            runs[-1][1] += 1
        else:
            runs.append([frame, 1])
    return [tuple(run) for run in runs]
