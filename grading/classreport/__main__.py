"""python -m grading.classreport [--assignment A] [--course DIR]: reports/<a>/class_report.html and diagnoses.csv."""
import argparse
import sys
from pathlib import Path

from ..folders import Course
from ..judge import known_diagnoses
from ..publish.class_record import record_path
from .page import html, write_diagnoses
from .tables import count, load_record


def main(argv=None):
    parser = argparse.ArgumentParser(description="What the class got wrong: scores, pass rates, named mistakes.")
    parser.add_argument("--assignment", help="assignment of course.toml (default: the only one registered)")
    parser.add_argument("--course", default=".", help="course folder (default: here)")
    args = parser.parse_args(argv)
    course = Course(Path(args.course), args.assignment)
    source = record_path(course.root, course.assignment)
    if not source.is_file():
        sys.exit(f"report: {source} does not exist: grade {course.assignment} first (make grade)")
    sentences = {ident: text for known in known_diagnoses(course.registered).values() for ident, text in known.items()}
    tables = count(load_record(source), sentences)
    out = source.parent
    (out / "class_report.html").write_text(html(course.registered.title, tables), encoding="utf-8")
    write_diagnoses(out / "diagnoses.csv", course.assignment, tables)
    print(f"{tables.students} submission(s) of {course.assignment}: {out / 'class_report.html'}, "
          f"{out / 'diagnoses.csv'}")
    for _, ident, _, n in tables.mistakes[:5]:
        print(f"  {n:4d}  {ident}")


if __name__ == "__main__":
    main()
