"""Unpack an LMS download into nbgrader's layout: `make collect ZIP=path/to/submissions.zip [ASSIGNMENT=name]`.

Every student's notebook lands in submitted/<student_id>/<assignment>/<assignment>.ipynb, whatever its
file name was, with timestamp.txt (the zip entry's time, i.e. the LMS's clock) and collected.json
(where it came from, the LMS's id of the student for the grade exports, and anything odd, for the grading
report). See grading/collect/naming.py for how student ids are read from the names. Notebooks inside a
student's own zip are found too.

Each entry is handled on its own: an encrypted, oversized (declared or actual size), corrupt (bad
CRC, a damaged inner zip) or undated entry is skipped or noted with the reason, and the collection
goes on. A student whose every entry was skipped still gets a folder (without a notebook), so they
appear in the grades with the reason. collect_report.md lists everything skipped.
"""
import argparse
import io
import json
import shutil
import sys
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from course import registry

from ..text import encodable, markdown
from .naming import is_assignment_file, is_notebook, late_mark, lms_id, pick, source_of, unique_ids

MAX_NOTEBOOK = 100 << 20  # bytes; a larger "notebook" is skipped, not unpacked
MAX_INNER_ZIP = 200 << 20  # bytes of a student's own zip, read into memory to look inside
CHUNK = 1 << 20


@dataclass
class Entry:
    """One notebook found in the download: its name, who sent it, when, and its bytes (None: skipped)."""

    name: str
    source: str  # the part of the name that says who sent it (see naming.source_of)
    stamp: datetime = None  # None: the zip's date for it is not a valid date
    data: bytes = None
    problem: str = ""  # why it was skipped


@dataclass
class Collection:
    """What collect found: entries by source, names of nobody's, entries skipped with the reason."""

    entries: list = field(default_factory=list)
    unknown: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # (name, reason)
    assignment: str = ""  # a top-level file named just like it says no student


def fixed_name(info):
    """The entry's name; one stored without the UTF-8 flag is read as UTF-8 if it is, else as Windows-1252."""
    if info.flag_bits & 0x800:
        return info.filename
    raw = info.filename.encode("cp437")  # zipfile's own reading, undone
    for encoding in ("utf-8", "cp1252"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return info.filename


def stamp_of(info):
    try:
        return datetime(*info.date_time)
    except (ValueError, TypeError):
        return None


def read_entry(archive, info, limit):
    """The entry's bytes, checking its declared size, its actual size while reading, and its CRC; raises ValueError."""
    if info.flag_bits & 0x1:
        raise ValueError("it is encrypted")
    if info.file_size > limit:
        raise ValueError(f"it is too large ({info.file_size} bytes unpacked; at most {limit})")
    chunks, total = [], 0
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(CHUNK):
                total += len(chunk)
                if total > limit:
                    raise ValueError(f"it unpacks to more than {limit} bytes (its declared size is {info.file_size})")
                chunks.append(chunk)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError, RuntimeError) as error:
        raise ValueError(f"it cannot be unpacked ({type(error).__name__}: {error})") from None
    return b"".join(chunks)


def scan(archive, found, owner=None, prefix=""):
    """Add every notebook of the archive to found, and of zips inside it (one level), each entry on its own."""
    for info in archive.infolist():
        name = prefix + fixed_name(info)
        if info.is_dir():
            continue
        try:
            if is_notebook(name):
                source = owner if owner is not None else source_of(name, found.assignment)
                if not source:
                    found.unknown.append(name)
                    continue
                entry = Entry(name, source, stamp_of(info))
                found.entries.append(entry)
                entry.data = read_entry(archive, info, MAX_NOTEBOOK)
            elif name.lower().endswith(".zip") and owner is None:
                scan_inner(archive, info, name, found)
        except ValueError as error:
            skip(found, name, str(error))


def skip(found, name, reason):
    """List the entry as skipped; its sender (if the name says) keeps an entry without data, so they are not lost."""
    found.skipped.append((name, reason))
    if found.entries and found.entries[-1].name == name:
        found.entries[-1].problem = reason
    elif name.lower().endswith(".zip") and (sender := source_of(name[:-4] + ".ipynb", found.assignment)):
        found.entries.append(Entry(name, sender, problem=reason))


def scan_inner(archive, info, name, found):
    """A student's own zip (named like a notebook, e.g. alice_lab.zip): its notebooks are theirs."""
    owner = source_of(name[:-4] + ".ipynb", found.assignment)
    if not owner:
        found.unknown.append(name)
        return
    data = read_entry(archive, info, MAX_INNER_ZIP)
    try:
        inner = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, UnicodeDecodeError, ValueError, OSError, EOFError) as error:
        raise ValueError(f"it is not a readable zip ({type(error).__name__})") from None
    with inner:
        before = len(found.entries)
        scan(inner, found, owner, prefix=name[:-4] + "/")
        if len(found.entries) == before:
            raise ValueError("it holds no notebook")


def place(folder, entries, assignment, due=None):
    """Write one student's chosen notebook (if any survived) into folder, replacing it whole.

    Returns (notes: what needs the instructor, info: what was done that needs no one); collected.json keeps both.
    """
    readable = [entry for entry in entries if entry.data is not None]
    notes = [f"`{entry.name}` was skipped: {entry.problem}" for entry in entries if entry.data is None]
    chosen = pick([(entry.name, entry.stamp, entry) for entry in readable], assignment)[2] if readable else None
    staging = folder.parent / f".{folder.name}.collecting"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    info = ["replaced an earlier submission"] if folder.exists() else []
    if chosen is not None:
        (staging / f"{assignment}.ipynb").write_bytes(chosen.data)
        if chosen.stamp is not None:
            (staging / "timestamp.txt").write_text(chosen.stamp.strftime("%Y-%m-%d %H:%M:%S"))
        notes += lateness(chosen, due)
        if not is_assignment_file(chosen.name, assignment):
            info.append(f"notebook `{Path(chosen.name).name}` graded as {assignment}.ipynb")
        info += [f"also sent `{entry.name}`: not graded" for entry in readable if entry is not chosen]
    write_record(staging, chosen.name if chosen else None, notes, info,
                 next((lms_id(entry.name) for entry in entries if lms_id(entry.name)), ""))
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return notes, info


def lateness(entry, due):
    """Notes on when the graded notebook came: marked late by the LMS, else after course.toml's `due`, or undated."""
    mark = late_mark(entry.name)
    if mark:
        return [f"late: the LMS marks `{entry.name}` as submitted after the due date"]
    if entry.stamp is None:  # Canvas's unmarked name still says it was on time
        return [f"`{entry.name}` has no valid date in the zip: no timestamp recorded"
                + (", lateness unknown" if mark is None else "")]
    return after_due(f"`{entry.name}`", entry.stamp, due) if mark is None else []


def after_due(what, stamp, due):
    """["late: ..."] when stamp (a local time) is after due (None: no due date), else []."""
    if due is not None and stamp > due:
        return [f"late: {what} is dated {stamp:%Y-%m-%d %H:%M}, after the due date {due:%Y-%m-%d %H:%M}"]
    return []


def write_record(folder, source, notes, info, number=""):
    """collected.json: where the submission came from, what needs the instructor (notes), what was done (info), and
    the LMS's number for the student (for the grade exports)."""
    record = {"source": source, "notes": notes, "info": info, "lms_id": number}
    (folder / "collected.json").write_text(json.dumps(record, indent=1))


def collect(zip_path, course_root=".", assignment=None):
    """Unpack every student's notebook; returns ({student: notes and info}, nobody's names, [(name, reason) skipped]).

    assignment: a name in course_root's course.toml (default: the only one registered there).
    """
    registered = registry.assignment(assignment, course_root)
    assignment, due = registered.name, registered.due
    found = Collection(assignment=assignment)
    with zipfile.ZipFile(zip_path) as archive:
        scan(archive, found)
    ids, renamed = unique_ids({entry.source for entry in found.entries})
    by_student = {}
    for entry in found.entries:
        if entry.source in ids:
            by_student.setdefault(ids[entry.source], []).append(entry)
        else:
            found.unknown.append(entry.name)
    submitted, collected = Path(course_root) / "submitted", {}
    for student, entries in sorted(by_student.items()):
        try:
            notes, info = place(submitted / student / assignment, entries, assignment, due)
            collected[student] = notes + info
        except OSError as error:
            found.skipped += [(entry.name, f"it could not be written ({error.strerror})") for entry in entries]
    for student, note in renamed:
        if student in collected:
            collected[student].append(note)
            add_note(submitted / student / assignment, note)
    return collected, found.unknown, found.skipped


def add_note(folder, note):
    path = folder / "collected.json"
    record = json.loads(path.read_text())
    record["notes"].append(note)
    path.write_text(json.dumps(record, indent=1))


def write_collect_report(path, collected, unknown, skipped):
    """collect_report.md: what was collected, and every entry left out with the reason (names escaped)."""
    lines = ["# Collection report", "", f"{len(collected)} student(s) collected.", ""]
    lines += ["## Skipped", ""] + [f"- `{markdown(name, 300)}`: {markdown(reason)}" for name, reason in skipped]
    lines += [""] + ["## Names that say no student", ""] + [f"- {markdown(name, 300)}" for name in unknown]
    lines += ["", "## Notes", ""] + [f"- **{markdown(student, 100)}**: {markdown(note)}"
                                     for student, notes in collected.items() for note in notes]
    path.write_text(encodable("\n".join(lines)) + "\n", encoding="utf-8")


def main(argv=None):
    """Command line: unpack the zip, print where each student's notebook went and what was left out."""
    parser = argparse.ArgumentParser(description="Unpack an LMS download of notebooks into submitted/.")
    parser.add_argument("zip", help="the zip downloaded from the LMS")
    parser.add_argument("--course", default=".", help="course folder (default: here)")
    parser.add_argument("--assignment", help="assignment of course.toml the zip holds (default: the only one "
                                             "registered; with several, name one)")
    args = parser.parse_args(argv)
    try:
        assignment = registry.assignment(args.assignment, args.course).name
    except registry.RegistryError as error:
        sys.exit(f"collect: {error}")
    if not args.zip or not Path(args.zip).is_file() or not zipfile.is_zipfile(args.zip):
        sys.exit(f"collect: {args.zip or '(none)'} is not a zip file; usage: make collect ZIP=path/to/submissions.zip")
    try:
        collected, unknown, skipped = collect(args.zip, args.course, assignment)
    except (zipfile.BadZipFile, UnicodeDecodeError, OSError) as error:
        sys.exit(f"collect: {args.zip} cannot be read as a whole ({type(error).__name__}: {error}); nothing collected")
    sys.stdout.reconfigure(errors="replace")
    out = lambda text: print(encodable(text))
    for student, notes in collected.items():
        out(f"{student}: submitted/{student}/{assignment}/{assignment}.ipynb" + "".join(f"; {n}" for n in notes))
    for name in unknown:
        out(f"skipped {name}: its name does not say which student sent it (see grading/collect/naming.py)")
    for name, reason in skipped:
        out(f"skipped {name}: {reason}")
    write_collect_report(Path(args.course) / "collect_report.md", collected, unknown, skipped)
    print(f"collected {len(collected)} submission(s), skipped {len(skipped)} entries (see collect_report.md); "
          "next: make grade")


if __name__ == "__main__":
    main()
