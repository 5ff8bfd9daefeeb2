"""nbgrader configuration for the course (read by every `nbgrader` command run from this folder)."""
import re

from nbgrader.preprocessors import ClearSolutions
from nbgrader.converters.generate_assignment import GenerateAssignment

c = get_config()  # noqa: F821 -- injected by traitlets when it loads this file

c.CourseDirectory.course_id = "transformer-workbook"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"


class ClearSolutionsKeepingConstructors(ClearSolutions):
    """ClearSolutions that clears `### BEGIN SOLUTION (constructor)` regions with a stub that does not raise.

    An untouched model class must still construct, so that later cells which build, train
    and check it fail in its forward with NotImplementedError instead of a NameError.
    Plain BEGIN SOLUTION regions get the usual raising stub.
    """

    constructor_begin = re.compile(r"^(\s*)### BEGIN SOLUTION \(constructor\)\s*$")
    constructor_stub = "# YOUR CODE HERE: create the layers and parameters listed in the task above"

    def _replace_solution_region(self, cell, language):
        cleared_constructor = self._clear_constructor_regions(cell)
        return super()._replace_solution_region(cell, language) or cleared_constructor

    def _clear_constructor_regions(self, cell):
        kept, inside, cleared = [], False, False
        for line in cell.source.split("\n"):
            opening = self.constructor_begin.match(line)
            if opening:
                kept.append(opening.group(1) + self.constructor_stub)
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

# Every generated notebook opens with a line saying it is generated, and from what.
c.IncludeHeaderFooter.header = "solutions/header.ipynb"
