"""nbgrader's exchange, for a course on a JupyterHub (docs/instructors.md, "On a JupyterHub"): release an assignment to
the students' Assignment Lists, collect their submissions into submitted/ for `make grade`, and release the feedback
pages `make grade` wrote, each to its own student.

`python -m grading.exchange release|collect|feedback --assignment NAME [--course DIR] [--exchange DIR]`
(make hub-release, hub-collect, hub-feedback). Each step is nbgrader's own command; what is added here is what
nbgrader leaves to the instructor: the exchange folder made as nbgrader's documentation says, a submission in one
student's name written by another Unix user set aside and noted against its writer (nbgrader only warns, and collects
it), lateness noted as for an LMS download, and feedback released only to the students who submitted through the
exchange (nbgrader stops at the first without the exchange's secret).
"""
import argparse
import glob
import os
import pwd
import shutil
import subprocess
import sys
from datetime import timezone
from pathlib import Path

from nbgrader.utils import parse_utc

from ..collect.unpack import after_due, write_record
from ..folders import Course

DEFAULT_EXCHANGE = "/srv/nbgrader/exchange"  # nbgrader's own default (Exchange.root)
OPEN_TO_ALL = 0o777  # every student writes into the exchange: `chmod ugo+rw` in nbgrader's documentation


def nbgrader(course, exchange, *arguments):
    """Run `nbgrader ARGUMENTS` in the course folder (its nbgrader_config.py) with this exchange; its exit status."""
    scripts = Path(sys.executable).parent  # nbgrader runs `alembic` from PATH to make a new gradebook.db
    command = [str(scripts / "nbgrader"), *arguments, f"--Exchange.root={exchange}"]
    print("$", " ".join(command), flush=True)
    environment = dict(os.environ, PATH=os.pathsep.join([str(scripts), os.environ.get("PATH", "")]))
    return subprocess.run(command, cwd=course, env=environment).returncode


def prepare(exchange):
    """The exchange folder, made open to every user when missing; an existing one that is not is refused."""
    if not exchange.exists():
        exchange.mkdir(parents=True)
        os.chmod(exchange, OPEN_TO_ALL)
    if exchange.stat().st_mode & OPEN_TO_ALL != OPEN_TO_ALL:
        raise SystemExit(f"{exchange} must be readable and writable by every user for students to fetch and submit: "
                         f"chmod ugo+rwx {exchange}")


def inbound_entries(exchange, course_id, assignment):
    """[(student named, path, timestamp, owner)] of every submission of assignment in the exchange's inbound."""
    entries = []
    for path in glob.glob(os.path.join(exchange, course_id, "inbound", f"*+{assignment}+*")):
        student, _, timestamp = Path(path).name.split("+")[:3]
        try:
            owner = pwd.getpwuid(os.stat(path).st_uid).pw_name
        except KeyError:
            owner = f"uid {os.stat(path).st_uid}"
        entries.append((student, path, timestamp, owner))
    return entries


def is_user(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def spoofed(entries):
    """The entries written by another Unix user than the student they name, where that student is a Unix user (on a
    hub whose servers all run as one user, such as Zero to JupyterHub's, ownership says nothing and nothing is)."""
    return [entry for entry in entries if entry[3] != entry[0] and is_user(entry[0])]


def set_aside(entries, folder):
    """Move the spoofed entries out of the inbound into folder, so nbgrader collects each student's own newest
    submission; {writer: [notes for the writer's collected.json]}."""
    notes = {}
    for student, path, _, writer in entries:
        folder.mkdir(parents=True, exist_ok=True)
        moved = folder / Path(path).name
        shutil.move(path, moved)
        print(f"SET ASIDE: {path} names {student} but was written by {writer}: moved to {moved}", flush=True)
        notes.setdefault(writer, []).append(f"wrote a submission in {student}'s name into the exchange (set aside, "
                                            f"not graded: {moved})")
    return notes


def collect(course, exchange, course_id):
    """nbgrader collect (each student's newest submission, replacing an older one) after the spoofed are set aside;
    each collected submission's collected.json notes it late after course.toml's `due`, and notes its student's
    spoofing."""
    entries = inbound_entries(exchange, course_id, course.assignment)
    spoofs = spoofed(entries)
    notes = set_aside(spoofs, course.root / "build" / "exchange" / "set_aside" / course.assignment)
    status = nbgrader(course.root, exchange, "collect", course.assignment, "--update")
    for student in {entry[0] for entry in entries if entry not in spoofs}:
        record(course.submitted / student / course.assignment, course.registered.due, notes.get(student, []))
    for writer in set(notes) - {entry[0] for entry in entries if entry not in spoofs}:
        print(f"{writer} spoofed a submission but submitted none of their own: no record to note it in", flush=True)
    return status


def record(folder, due, notes):
    """collected.json for a submission nbgrader collected, as `make collect` writes one: notes, and late when its
    timestamp (UTC) is after due (local time)."""
    if not (folder / "timestamp.txt").is_file():
        return
    stamp = parse_utc((folder / "timestamp.txt").read_text().strip()).replace(tzinfo=timezone.utc).astimezone()
    late = after_due("the submission", stamp.replace(tzinfo=None), due)  # local time, as course.toml's `due`
    write_record(folder, "nbgrader's exchange", late + notes, [])


def release_feedback(course, exchange, feedback, assignment):
    """nbgrader release_feedback for the students whose feedback folder holds the exchange's secret."""
    pages = sorted(feedback.glob(f"*/{assignment}/{assignment}.html"))
    without = sorted(page.parent.parent.name for page in pages
                     if not (page.parent / "submission_secret.txt").is_file())
    for student in without:
        print(f"NOT RELEASED: {student} did not submit through the exchange (no submission_secret.txt): send their "
              f"feedback page {feedback / student / assignment} another way", flush=True)
    if len(without) == len(pages):
        print(f"No feedback of {assignment} to release: run make grade first", flush=True)
        return 1 if not pages else 0
    excluded = [f"--CourseDirectory.student_id_exclude={','.join(without)}"] if without else []
    return nbgrader(course, exchange, "release_feedback", assignment, *excluded)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["release", "collect", "feedback"])
    parser.add_argument("--assignment", required=True)
    parser.add_argument("--course", default=".", help="the course folder (default: here)")
    parser.add_argument("--exchange", default=DEFAULT_EXCHANGE, help=f"the exchange (default {DEFAULT_EXCHANGE})")
    args = parser.parse_args(argv)
    course, exchange = Course(args.course, args.assignment), Path(args.exchange).resolve()
    if args.step == "release":
        prepare(exchange)
        return nbgrader(course.root, exchange, "release_assignment", course.assignment, "--force")
    if args.step == "collect":
        return collect(course, exchange, course.config.CourseDirectory.course_id)
    return release_feedback(course.root, exchange, course.feedback, course.assignment)
