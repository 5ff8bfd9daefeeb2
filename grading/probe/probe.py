"""Run one submission inside the sandbox and record what the student's objects produce.

Usage (by grading/sandbox/supervise.py, never by hand): python -I probe.py SCRATCH

Runs as an unprivileged user without network, in SCRATCH/work, on the student's code, with the
given and check cells of the pristine release. It never sees an expected value: it reads
cases.pt and checks.json beside this file and SCRATCH/input/{program.json, resume.json}, writes the start and end of
each cell to the pipe the grader passes as file descriptor GRADING_PROGRESS_FD, and writes SCRATCH/out/:
cell_<i>.json (each cell's output) and task_<n>.pt (records of the task's cases, written at its check
cell). The grader trusts none of it except as data to compare, and keeps the time itself; the probe's own alarm
(ITIMER_PROF: this process's CPU time, as the grader counts a cell's limit) only stops a cell more gently.
"""
import importlib
import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # checkers, course_lib and recipes.py are copied beside this file (the runtime)

import provenance  # noqa: E402 -- copied beside this file: importable once HERE is on sys.path
import recipes  # noqa: E402 -- copied beside this file: importable once HERE is on sys.path
import torch  # noqa: E402 -- with the imports that need HERE on sys.path, so all of them stay in one place

_save, _replace, _dumps, _open = torch.save, os.replace, json.dumps, os.open  # captured before student code runs
THREADS = int(os.environ.get("GRADING_THREADS", "1"))  # read before student code runs
TEXT_LIMIT = 20_000
LINE_LIMIT = 2000  # characters of a source line in a traceback: a cell's output stays far below the grader's 1 MB
WATCHED = {"torch": ("allclose", "equal", "isclose", "save", "load"), "torch.testing": ("assert_close",),
           "torch.Tensor": ("clone", "detach", "__eq__"), "torch.nn.Module": ("__call__",),
           "checkers._compare": ("expect_close", "matches", "expect_tensor", "expect_finite"),
           "checkers._core": ("check_function", "load_fixture"), "checkers._core.Task": ("call",),
           "checkers._calls._Recorder": ("__torch_function__",),
           "recipes": ("run", "call", "snapshot", "gradients"),  # what records a case: a forged record starts there
           "provenance.Ledger": ("after_step", "hooked", "provenance", "norms_by_size"),  # the optimizer steps
           "provenance.Sightings": ("before_forward", "after_step", "report")}  # stand-ins in training batches


class CellTimeout(BaseException):
    """The cell ran past its time limit (a BaseException, so `except Exception` cannot swallow it)."""


def on_alarm(signum, frame):
    raise CellTimeout("the cell ran past its time limit and was stopped")


def alarm(seconds):
    """Raise CellTimeout once this process has used `seconds` of CPU time per thread it may use (0: no alarm)."""
    signal.setitimer(signal.ITIMER_PROF, seconds * THREADS)


def one_line(error):
    """'Type: first line of the message', robust to a student exception whose __str__ raises."""
    try:
        text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    except Exception:  # noqa: BLE001 -- a student exception's __str__ may raise anything
        text = ""
    if type(error).__name__ in ("CheckFailure", "NotImplementedYet"):
        return text[:300]
    return f"{type(error).__name__}: {text}"[:300]


def resolve(dotted):
    """The module or class a dotted name stands for ('torch.testing', 'torch.Tensor')."""
    try:
        return importlib.import_module(dotted)
    except ImportError:
        module, _, name = dotted.rpartition(".")
        return getattr(importlib.import_module(module), name, None)


def check_functions():
    """{'checkers.check_task_1': 'check_task_1', ...}: the assignment's check functions, from checks.json beside this
    file (the registry's "module:function" strings, written by grading/sandbox/runtime.py)."""
    with open(os.path.join(HERE, "checks.json")) as file:
        return {check.replace(":", "."): check.split(":", 1)[1] for check in json.load(file)}


def watched_objects(checks):
    """{'torch.allclose': object, ...} for the functions a tampering notebook would replace, the checks included."""
    found = {f"{owner}.{name}": getattr(resolve(owner), name, None)
             for owner, names in WATCHED.items() for name in names}
    for qualified in checks:
        owner, _, name = qualified.rpartition(".")
        found[qualified] = getattr(resolve(owner), name, None)
    return found


def tampered(originals, namespace, checks):
    """Watched functions replaced since start, and check functions rebound in the notebook."""
    current = watched_objects(checks)
    changed = [name for name, value in originals.items() if current.get(name) is not value]
    changed += [f"{local} (in the notebook)" for qualified, local in checks.items()
                if local in namespace and namespace[local] is not originals[qualified]]
    return changed


class Probe:
    """The state of one probe run: the IPython shell, the cases and the output folder."""

    def __init__(self, scratch):
        self.scratch = scratch
        self.out = os.path.join(scratch, "out")
        read = lambda name: json.load(open(os.path.join(scratch, "input", name)))
        self.program, self.resume = read("program.json"), read("resume.json")
        self.cases = torch.load(os.path.join(HERE, "cases.pt"), weights_only=True)
        self.progress = os.fdopen(int(os.environ["GRADING_PROGRESS_FD"]), "w", buffering=1)
        self.shell = make_shell()
        rows = os.path.join(HERE, "stand_in_rows.pt")  # the scored data's stand-ins as a model receives them
        sightings = provenance.Sightings(**torch.load(rows, weights_only=True)) if os.path.exists(rows) else None
        self.ledger = provenance.Ledger(sightings)  # its hooks installed before any student code runs
        self.checks = check_functions()
        self.originals = watched_objects(self.checks)

    def event(self, kind, index=-1, limit=0):
        self.progress.write(_dumps({"event": kind, "cell": index, "limit": limit, "time": time.time()}) + "\n")

    def run(self):
        """Every cell of the program in order (but those to skip), logging its start and end."""
        for index, cell in enumerate(self.program):
            if index in self.resume["skip"]:
                continue
            self.event("start", index, cell["limit"])
            started = time.perf_counter()
            output = self.check(cell) if cell["kind"] == "check" else execute(self.shell, cell["source"], cell["limit"])
            output["seconds"] = round(time.perf_counter() - started, 3)
            output["tampered"] = tampered(self.originals, self.shell.user_ns, self.checks)
            write_json(os.path.join(self.out, f"cell_{index}.json"), output)
            self.event("end", index)
        self.event("done")

    def check(self, cell):
        """Record every case of the task, then run the notebook's own check cell (for the feedback only)."""
        task, namespace = cell["task"], self.shell.user_ns
        missing = [name for name in cell["names"] if name not in namespace]
        if missing:
            error = f"`{missing[0]}` is not defined: did its cell run without errors?"
            records = [{"error": error} for _ in self.cases[task]]
        else:
            records = record_cases(self.cases[task], [namespace[name] for name in cell["names"]], namespace,
                                   cell["names"], cell["limit"] * 0.6, self.ledger)
        path = os.path.join(self.out, f"task_{task}.pt")
        with fresh_file(path + ".part") as file:
            _save(records, file)
        _replace(path + ".part", path)
        return execute(self.shell, cell["source"], cell["limit"] * 0.3)


def record_cases(recipes_of_task, objects, namespace, names, seconds, ledger):
    """One record per case, within `seconds` in all; after a case runs out of time the rest are not run."""
    records = []
    alarm(seconds)
    try:
        for recipe in recipes_of_task:
            try:
                record = recipes.run(dict(recipe, what=describe_call(recipe, names)), objects, namespace)
                records.append(with_steps(ledger, recipe, objects, record))
            except CellTimeout:
                records.append({"error": "ran past the time limit"})
                break
            except BaseException as error:  # noqa: BLE001 -- student code may raise anything, SystemExit included
                records.append({"error": one_line(error)})
    except CellTimeout:
        pass  # fired between two cases: the rest count as not run
    finally:
        alarm(0)
    stopped = "not run: an earlier test of this task ran past the time limit"
    return records + [{"error": stopped}] * (len(recipes_of_task) - len(records))


def with_steps(ledger, recipe, objects, record):
    """A trained case's record with the notebook's optimizer steps as evidence of where its weights came from (see
    provenance.py; the grader flags weights no step left): the graded tensors, found again by role."""
    if "trained" not in recipe or not isinstance(record.get("weights"), dict):
        return record
    try:
        model = objects[recipe["object"]]
        record["provenance"] = ledger.provenance(list(recipes.slots_of(recipe["trained"]["slots"])(model).values()))
    except Exception as error:  # noqa: BLE001 -- a model whose roles cannot be read again: no evidence, flagged
        record["provenance"] = {"error": one_line(error)}
    return record


def describe_call(recipe, names):
    method = recipe.get("call", {}).get("method")
    return f"{names[recipe['object']]}{'.' + method if method else ''}(...)"


def make_shell():
    """An IPython shell (magics, `display`) without history, with minimal tracebacks kept out of outputs."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.xmode = "Minimal"
    shell = InteractiveShell.instance(config=config)
    shell.showtraceback = lambda *args, **kwargs: None  # errors are recorded from the result instead
    shell.showsyntaxerror = lambda *args, **kwargs: None
    return shell


def execute(shell, source, limit):
    """Run one cell with a time limit; its stdout, stderr, displays and error as plain data."""
    from IPython.utils.capture import capture_output
    alarm(max(limit, 1))
    try:
        with capture_output(display=True) as captured:
            result = shell.run_cell(source, store_history=False)
    finally:
        alarm(0)
        close_figures()
    error = result.error_before_exec or result.error_in_exec
    displays = [out.data.get("text/plain", "") for out in captured.outputs if isinstance(out.data, dict)]
    return {"stdout": captured.stdout[-TEXT_LIMIT:], "stderr": captured.stderr[-TEXT_LIMIT:],
            "displays": [text[:2000] for text in displays[:5]], "error": describe_error(error)}


def describe_error(error):
    """ename, evalue and the student's own frames (line numbers of the cell) of an exception, or None."""
    if error is None:
        return None
    import traceback
    frames = [f"line {frame.lineno}: {(frame.line or '').strip()[:LINE_LIMIT]}"
              for frame in traceback.extract_tb(error.__traceback__) if frame.filename.startswith("<ipython-input")]
    if isinstance(error, SyntaxError):
        frames = [f"line {error.lineno}: {(error.text or '').strip()[:LINE_LIMIT]}"]
    return {"ename": type(error).__name__, "evalue": one_line(error).split(": ", 1)[-1], "frames": frames[-5:],
            "diagnosis": diagnosis_of(error)}


def diagnosis_of(error):
    """The named mistake's id a failed check gave ("<assignment>.<task>.<slug>"), or None; the grader keeps it only
    if its catalogue has it for that task, and it never changes a score."""
    try:
        diagnosis = getattr(error, "diagnosis", None)
    except Exception:  # noqa: BLE001 -- a student exception's attribute may raise anything
        return None
    return diagnosis[:200] if type(diagnosis) is str else None


def close_figures():
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def fresh_file(path):
    """A new regular file at path, whatever a cell left there (a FIFO would block, a link would redirect)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return os.fdopen(_open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), "wb")


def write_json(path, data):
    with fresh_file(path + ".part") as file:
        file.write(_dumps(data).encode())
    _replace(path + ".part", path)


def quiet_live_plots():
    """Training's live curves redraw a figure every 50 steps; the grader needs none of them."""
    import course_lib.plotting
    course_lib.plotting.LiveCurves.__call__ = lambda self, history: False


def main(scratch):
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGPROF, on_alarm)
    torch.set_num_threads(THREADS)
    quiet_live_plots()
    os.chdir(os.path.join(scratch, "work"))
    Probe(scratch).run()


if __name__ == "__main__":
    main(sys.argv[1])
