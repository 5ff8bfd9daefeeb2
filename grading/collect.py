"""Unpack an LMS download into nbgrader's layout: `make collect ZIP=path/to/submissions.zip`.

Every student's notebook lands in submitted/<student_id>/transformer/transformer.ipynb, whatever its
file name was, with timestamp.txt (the zip entry's time, i.e. the LMS's clock) and collected.json
(where it came from, and anything odd, for the grading report). See grading/naming.py for how
student ids are read from the names. Notebooks inside a student's own zip are found too.
"""
import argparse
import io
import json
import shutil
import sys
import zipfile
from datetime import datetime
from pathlib import Path

from .course import ASSIGNMENT
from .naming import file_name, is_notebook, pick, student_of

MAX_NOTEBOOK = 100 << 20  # bytes; a larger "notebook" is skipped, not unpacked


def members(archive, prefix=""):
    """(name, timestamp, bytes reader) of every notebook in the zip, and of zips inside it (one level)."""
    found = []
    for info in archive.infolist():
        if info.is_dir() or info.file_size > MAX_NOTEBOOK:
            continue
        stamp = datetime(*info.date_time)
        if is_notebook(info.filename):
            found.append((prefix + info.filename, stamp, lambda info=info: archive.read(info)))
        elif info.filename.lower().endswith(".zip") and not prefix:
            inner = zipfile.ZipFile(io.BytesIO(archive.read(info)))
            owner = student_of(info.filename[:-4] + ".ipynb")  # a student's own zip is named like a notebook
            found += members(inner, prefix=owner + "/") if owner else []
    return found


def by_student(found):
    """{student id: [(name, timestamp, reader)]} and the names no student could be read from."""
    students, unknown = {}, []
    for entry in found:
        student = student_of(entry[0])
        if student:
            students.setdefault(student, []).append(entry)
        else:
            unknown.append(entry[0])
    return students, unknown


def place(submitted, student, entries, assignment):
    """Write one student's chosen notebook into submitted/; return the notes about it."""
    name, stamp, reader = pick(entries, assignment)
    folder = submitted / student / assignment
    notes = ["replaced an earlier submission"] if folder.exists() else []
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / f"{assignment}.ipynb").write_bytes(reader())
    (folder / "timestamp.txt").write_text(stamp.strftime("%Y-%m-%d %H:%M:%S"))
    if file_name(name) != f"{assignment}.ipynb":
        notes.append(f"notebook `{Path(name).name}` graded as {assignment}.ipynb")
    notes += [f"also sent `{other[0]}`: not graded" for other in entries if other[0] != name]
    (folder / "collected.json").write_text(json.dumps({"source": name, "notes": notes}, indent=1))
    return notes


def collect(zip_path, course_root=".", assignment=ASSIGNMENT):
    """Unpack every student's notebook; returns {student: notes} and the member names left out."""
    with zipfile.ZipFile(zip_path) as archive:
        students, unknown = by_student(members(archive))
        submitted = Path(course_root) / "submitted"
        return {student: place(submitted, student, entries, assignment)
                for student, entries in sorted(students.items())}, unknown


def main(argv=None):
    """Command line: unpack the zip, print where each student's notebook went and what was left out."""
    parser = argparse.ArgumentParser(description="Unpack an LMS download of notebooks into submitted/.")
    parser.add_argument("zip", help="the zip downloaded from the LMS")
    parser.add_argument("--course", default=".", help="course folder (default: here)")
    args = parser.parse_args(argv)
    if not args.zip or not Path(args.zip).is_file() or not zipfile.is_zipfile(args.zip):
        sys.exit(f"collect: {args.zip or '(none)'} is not a zip file; usage: make collect ZIP=path/to/submissions.zip")
    collected, unknown = collect(args.zip, args.course)
    for student, notes in collected.items():
        print(f"{student}: submitted/{student}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb" + "".join(f"; {n}" for n in notes))
    for name in unknown:
        print(f"skipped {name}: its name does not say which student sent it (see grading/naming.py)")
    print(f"collected {len(collected)} submission(s); next: make grade")


if __name__ == "__main__":
    main()
