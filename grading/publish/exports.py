"""The gradebook in the CSV layouts LMSs import: exports/canvas.csv and exports/moodle.csv.

One row per student, one column per assignment of the gradebook (every assignment graded so far), students by
their LMS id as `make collect` read it from the download's names (collected.json's "lms_id"; the course's own
student id when the names carried none). docs/instructors.md ("Grades into the LMS") says how to import each.
"""
import csv
import json

from ..text import encodable

LAYOUTS = ("canvas", "moodle")
CANVAS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]  # Canvas's gradebook import columns
MOODLE = ["ID number", "Student"]  # Moodle: map "ID number" to the user field it holds when importing


def lms_ids(submitted):
    """{student: LMS id} from every collected.json under submitted/ (the first assignment that names one)."""
    found = {}
    for path in sorted(submitted.glob("*/*/collected.json")):
        try:
            lms_id = json.loads(path.read_text(encoding="utf-8")).get("lms_id")
        except (OSError, ValueError, AttributeError):
            continue
        if lms_id and path.parent.parent.name not in found:
            found[path.parent.parent.name] = str(lms_id)
    return found


def rows(scores, ids, layout, order=()):
    """(header, rows) of one layout from {student: {assignment: score}} and {student: LMS id}.

    order: assignment names in release order (the registry's); others in the gradebook follow, sorted.
    """
    graded = {name for by_assignment in scores.values() for name in by_assignment}
    assignments = [name for name in order if name in graded] + sorted(graded - set(order))
    header = (CANVAS if layout == "canvas" else MOODLE) + assignments
    table = []
    for student in sorted(scores):
        lms_id = ids.get(student, student)
        first = [student, lms_id, "", "", ""] if layout == "canvas" else [lms_id, student]
        table.append([encodable(value) for value in first] +
                     [f"{scores[student][name]:g}" if name in scores[student] else "" for name in assignments])
    return header, table


def write_exports(folder, scores, submitted, layouts=LAYOUTS, order=()):
    """Write folder/<layout>.csv for each layout (assignment columns in `order` first); returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    ids, written = lms_ids(submitted), []
    for layout in layouts:
        header, table = rows(scores, ids, layout, order)
        with open(folder / f"{layout}.csv", "w", newline="", encoding="utf-8") as file:
            csv.writer(file).writerows([header] + table)
        written.append(folder / f"{layout}.csv")
    return written
