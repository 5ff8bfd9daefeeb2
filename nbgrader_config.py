"""nbgrader configuration for the course (read by every `nbgrader` command run from this folder)."""
import ast
import re
import tomllib
from pathlib import Path

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.converters.autograde import Autograde
from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions, Execute, GetGrades, NbGraderPreprocessor

c = get_config()  # noqa: F821 -- injected by traitlets when it loads this file

# The course registry (course.toml beside this file), read with tomllib rather than course/registry.py so that
# nbgrader started from anywhere finds it.
with open(Path(__file__).resolve().with_name("course.toml"), "rb") as _registry:
    _course = tomllib.load(_registry)

c.CourseDirectory.course_id = _course["course"]["id"]
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"


class ClearSolutionsKeepingConstructors(ClearSolutions):
    """ClearSolutions that clears `### BEGIN SOLUTION (constructor)` regions with a stub that does not raise.

    An untouched model class must still construct, so that later cells which build, train
    and check it fail in its forward with NotImplementedError instead of a NameError.
    Plain BEGIN SOLUTION regions get the usual raising stub.
    A constructor that builds no layers says what it builds instead: `### BEGIN SOLUTION (constructor: <what>)`
    gives the stub `# YOUR CODE HERE: <what>`.
    """

    constructor_begin = re.compile(r"^(\s*)### BEGIN SOLUTION \(constructor(?:: (.+))?\)\s*$")
    constructor_stub = "# YOUR CODE HERE: create the layers and parameters listed in the task above"

    def _replace_solution_region(self, cell, language):
        cleared_constructor = self._clear_constructor_regions(cell)
        return super()._replace_solution_region(cell, language) or cleared_constructor

    def _clear_constructor_regions(self, cell):
        kept, inside, cleared = [], False, False
        for line in cell.source.split("\n"):
            opening = self.constructor_begin.match(line)
            if opening:
                stub = f"# YOUR CODE HERE: {opening.group(2)}" if opening.group(2) else self.constructor_stub
                kept.append(opening.group(1) + stub)
                inside = cleared = True
            elif inside and "### END SOLUTION" in line:
                inside = False
            elif not inside:
                kept.append(line)
        cell.source = "\n".join(kept)
        return cleared


_default = GenerateAssignment.class_traits()["preprocessors"].default()
c.GenerateAssignment.preprocessors = [
    ClearSolutionsKeepingConstructors if step is ClearSolutions else step for step in _default
]

# No header cell: what students receive holds nothing addressed to course staff. That notebooks/ is generated
# from solutions/ is said in docs/maintainers.md and enforced by tests/test_release.py.

# ---------------------------------------------------------------------------------------------
# Collecting and grading (`make collect`, `make grade`; see grading/ and
# docs/instructors.md). `make grade` runs student code only inside its own sandboxed probe and hands nbgrader
# finished notebooks (`autograde --no-execute`); the settings below make a plain `nbgrader autograde`
# behave sensibly too, and grading/ reads the time limits from here.
# ---------------------------------------------------------------------------------------------
c.CourseDirectory.submitted_directory = "submitted"  # submitted/<student_id>/<assignment>/<assignment>.ipynb
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
c.Execute.kernel_name = "python3"  # not whatever kernelspec a student's editor wrote into the notebook

# Per-cell time limits, from the course registry (`[limits]`). Every cell but the two
# training cells finishes in seconds; a training cell takes 11-107 s in the reference notebook on a 2-core CPU
# (torch on 1 thread, load average 1.8-42; see docs/bench.md), longer when several submissions share the machine,
# and a runaway loop anywhere must still stop. Execute.timeout is the per-cell limit nbgrader uses
# (ExecuteOptions.timeout is ignored).
_limits = _course["limits"]
CELL_TIMEOUT = _limits["cell_seconds"]
TRAINING_CELL_TIMEOUT = _limits["training_cell_seconds"]
c.Execute.timeout = CELL_TIMEOUT


def calls_train(source):
    """Whether the cell's code (not a comment or a string) calls the course's train(...).

    A call counts when it names `train` itself or `course_lib...train`; `model.train()` (a module's
    training mode) does not. Code that does not parse, even after IPython's magics are turned into
    Python, calls nothing.
    """
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        source = TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 -- without IPython, or a cell it cannot transform: parse it as it is
        pass
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "train":
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "train":
            owner = node.func.value
            while isinstance(owner, ast.Attribute):
                owner = owner.value
            if isinstance(owner, ast.Name) and owner.id == "course_lib":
                return True
    return False


def cell_timeout(cell):
    """Seconds a cell may run: training cells (their code calls train(...)) get longer than the rest."""
    return TRAINING_CELL_TIMEOUT if calls_train(cell.source) else CELL_TIMEOUT


c.Execute.timeout_func = cell_timeout
# A traceback must not echo source lines from outside the student's cells: minimal tracebacks, no history file.
c.Execute.extra_arguments = ["--InteractiveShell.xmode=Minimal", "--HistoryManager.hist_file=:memory:"]

# A check cell a student deleted comes back instead of the task turning into "needs manual grade".
c.OverwriteCells.add_missing_cells = True


class StderrIsNotAFailure(NbGraderPreprocessor):
    """Show what a check cell wrote to stderr (a warning, a progress bar) as ordinary output.

    nbgrader scores a grade cell 0 as soon as it has any stderr output, so a harmless UserWarning
    raised inside a correct solution would cost the task; only an error output should.
    """

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            for output in cell.outputs:
                if output.output_type == "stream" and output.name == "stderr":
                    output.name = "stdout"
        return cell, resources


_autograde = Autograde.class_traits()["autograde_preprocessors"].default()
c.Autograde.autograde_preprocessors = (
    _autograde[: _autograde.index(Execute) + 1] + [StderrIsNotAFailure] + _autograde[_autograde.index(Execute) + 1:])

# Feedback shows the student's notebook as graded; hidden test regions (should a check cell ever get one)
# are cut out of it, which nbgrader does not do by default.
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]
