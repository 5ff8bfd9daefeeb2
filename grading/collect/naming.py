"""Who sent a notebook, and which of a student's files is the assignment: the naming convention of `make collect`.

Convention (lenient on purpose; LMS downloads differ):
- a notebook inside a folder belongs to the student the top folder names ("alice/Copy of lab.ipynb",
  Moodle's "Alice Smith_123_assignsubmission_file_/lab.ipynb" -> "Alice-Smith_123");
- a notebook at the top of the zip belongs to the student its file name starts with, up to the first
  underscore ("alice_lab.ipynb" -> "alice", "bob-12345_lab (1).ipynb" -> "bob-12345");
  a name without an underscore is the id itself ("carol.ipynb" -> "carol");
- the LMSs' own layouts are read as such (see LmsName): Canvas's "lastfirst[_late]_<user id>_<submission id>_<the
  student's file name>" ("smithalice_late_1234_5678_lab-1.ipynb": smithalice, user 1234, late, the file
  lab-1.ipynb, Canvas's name for a re-uploaded lab.ipynb) and Moodle's without folders,
  "Full Name_<participant>_assignsubmission_file_<file name>" (the same id as Moodle's folder, "Alice-Smith_123");
- ids keep letters and digits of any script (NFC-normalised: "müllerjürgen", "张伟", "Αλέξανδρος"), ".", "-"
  and "_"; anything else becomes "-"; at most MAX_ID characters;
- two different source names never share an id: `collect` gives the second a suffix ("alice-smith-2")
  and says so (see unique_ids).
Of several notebooks from one student, the newest whose name mentions the assignment is graded.
The LMS's own number for the student, when the name carries one, is kept for the grade exports (lms_id).
"""
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath

LMS_SUFFIXES = re.compile(r"_(assignsubmission_file|assignsubmission_onlinetext|onlinetext|file)_?$")
IGNORED_PARTS = ("__MACOSX", ".ipynb_checkpoints")


MAX_ID = 64
CANVAS_NAME = re.compile(r"^(?P<who>[^_]+)_(?P<late>late_)?(?P<user>\d+)_\d+_(?P<file>.+)$")
MOODLE_NAME = re.compile(r"^(?P<who>.+?_(?P<user>\d+)_assignsubmission_file_)(?P<file>.+)$")  # without folders
MOODLE_FOLDER = re.compile(r"_(\d+)_(?:assignsubmission|onlinetext)")  # Full Name_<participant>_assignsubmission_…


@dataclass
class LmsName:
    """What an LMS's name for a submitted file says: who sent it, their LMS number, their own file name, lateness."""

    source: str  # the part naming the sender, read into an id by clean_id
    user: str  # the LMS's number for the sender
    file: str  # the file's name as the student uploaded it (Canvas may add "-1" to a re-uploaded name)
    late: bool = None  # Canvas's names say whether it came after the student's due date; None: the layout does not say


def lms_name(name):
    """The LmsName of a zip member named in Canvas's or Moodle's layout, or None for any other name."""
    path = PurePosixPath(unicodedata.normalize("NFC", name).replace("\\", "/"))
    if len(path.parts) > 1:  # Moodle's folder per student, or a student's own zip sent to Canvas (opened as one)
        if found := MOODLE_FOLDER.search(path.parts[0]):
            return LmsName(path.parts[0], found.group(1), path.name)
        found = CANVAS_NAME.match(path.parts[0])
        return LmsName(path.parts[0], found["user"], path.name, late=bool(found["late"])) if found else None
    if found := CANVAS_NAME.match(path.name):
        return LmsName(found["who"], found["user"], found["file"], late=bool(found["late"]))
    if found := MOODLE_NAME.match(path.name):
        return LmsName(found["who"], found["user"], found["file"])
    return None


def clean_id(text):
    """A student id safe as a folder name: letters and digits of any script, '.', '-', '_'; '' if nothing is left."""
    text = LMS_SUFFIXES.sub("", unicodedata.normalize("NFC", text).strip())
    return re.sub(r"[^\w.-]+", "-", text).strip(".-_")[:MAX_ID].strip(".-_")


def is_notebook(name):
    """Whether a zip member is a notebook worth looking at (not a folder, checkpoint or macOS shadow file)."""
    path = PurePosixPath(name)
    hidden = any(part in IGNORED_PARTS or part.startswith("._") for part in path.parts)
    return path.suffix.lower() == ".ipynb" and not hidden


def source_of(name, assignment):
    """The part of a zip member name that says who sent it (top folder, LMS name or file name prefix), or ''.

    A top-level file named just like the assignment ("lab.ipynb") says no student.
    """
    path = PurePosixPath(unicodedata.normalize("NFC", name).replace("\\", "/"))
    if len(path.parts) > 1:
        return path.parts[0]
    if lms := lms_name(name):
        return lms.source
    stem = path.stem
    return stem.split("_", 1)[0] if "_" in stem else (stem if stem.lower() != assignment.lower() else "")


def lms_id(name):
    """The LMS's number for the sender in a zip member's name ('' if none): Canvas's user id of a top-level file
    ('smithalice_late_1234_5678_lab.ipynb' -> '1234'), Moodle's participant number of a top folder
    ('Alice Smith_123_assignsubmission_file_/lab.ipynb' -> '123') or of a file without folders."""
    lms = lms_name(name)
    return lms.user if lms else ""


def unique_ids(sources):
    """{source: id} for distinct source names, never giving two of them one id; and notes on the suffixes given."""
    ids, taken, notes = {}, {}, []
    for source in sorted(sources):
        base = clean_id(source)
        if not base:
            continue
        student, number = base, 1
        while student.casefold() in taken:
            number += 1
            student = f"{base[:MAX_ID - 4]}-{number}"
        if number > 1:
            notes.append((student, f"`{source}` reads as the id `{base}` of `{taken[base.casefold()]}` too: "
                                   f"graded as `{student}`"))
        ids[source], taken[student.casefold()] = student, source
    return ids, notes


def file_name(name):
    """The notebook's own name without the LMS's or the student's prefix: 'alice_lab.ipynb' and
    'smithalice_1234_5678_lab.ipynb' -> 'lab.ipynb'."""
    if lms := lms_name(name):
        return lms.file
    path = PurePosixPath(name.replace("\\", "/"))
    return path.name.split("_", 1)[1] if len(path.parts) == 1 and "_" in path.name else path.name


def is_assignment_file(name, assignment):
    """Whether a zip member is simply the assignment's notebook under the LMS's naming ('<assignment>.ipynb', or
    Canvas's '<assignment>-1.ipynb' for a file uploaded again under the same name)."""
    own = file_name(name)
    canvas_copy = bool((lms := lms_name(name)) and re.fullmatch(rf"{re.escape(assignment)}-\d+\.ipynb", lms.file))
    return own == f"{assignment}.ipynb" or canvas_copy


def late_mark(name):
    """Whether the LMS's name says the file came late (Canvas: True or False, knowing each student's extensions), or
    None when its layout does not say (Moodle, other names)."""
    lms = lms_name(name)
    return lms.late if lms else None


def mentions(name, assignment):
    """Whether a file name is recognisably the assignment ('Copy of lab (2).ipynb' is)."""
    return assignment.lower() in PurePosixPath(name).stem.lower()


def pick(candidates, assignment):
    """The notebook to grade among a student's (name, timestamp) pairs: newest naming the assignment, else newest."""
    named = [candidate for candidate in candidates if mentions(candidate[0], assignment)]
    return max(named or candidates, key=lambda candidate: (candidate[1] or datetime.min, candidate[0]))
