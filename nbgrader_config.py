"""nbgrader configuration for the course (read by every `nbgrader` command run from this folder)."""
import re

from nbgrader.preprocessors import ClearSolutions, NbGraderPreprocessor
from nbgrader.converters.generate_assignment import GenerateAssignment

c = get_config()  # noqa: F821 -- injected by traitlets when it loads this file

c.CourseDirectory.course_id = "transformer-workbook"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"


class ClearConstructorSolutions(NbGraderPreprocessor):
    """Clear `### BEGIN SOLUTION (constructor)` regions with a stub that does not raise.

    An untouched model class must still construct, so that later cells which build,
    train and check it fail in its forward with NotImplementedError instead of a
    NameError. Plain BEGIN SOLUTION regions are left to ClearSolutions.
    """

    begin = re.compile(r"^(\s*)### BEGIN SOLUTION \(constructor\)\s*$")
    stub = "# YOUR CODE HERE: create the layers and parameters listed in the task above"

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        lines, kept, inside = cell.source.split("\n"), [], False
        for line in lines:
            opening = self.begin.match(line)
            if opening:
                kept.append(opening.group(1) + self.stub)
                inside = True
            elif inside and "### END SOLUTION" in line:
                inside = False
            elif not inside:
                kept.append(line)
        cell.source = "\n".join(kept)
        return cell, resources


_default = GenerateAssignment.class_traits()["preprocessors"].default()
c.GenerateAssignment.preprocessors = (
    _default[: _default.index(ClearSolutions)] + [ClearConstructorSolutions] + _default[_default.index(ClearSolutions):]
)
