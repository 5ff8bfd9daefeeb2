"""python -m grading.similarity [--assignment A] [--course DIR]: reports/<a>/similarity.html and similarity.csv."""
import argparse
from pathlib import Path

from ..folders import Course
from . import compare


def main(argv=None):
    parser = argparse.ArgumentParser(description="Rank the pairs of students whose answers look alike.")
    parser.add_argument("--assignment", help="assignment of course.toml (default: the only one registered)")
    parser.add_argument("--course", default=".", help="course folder (default: here)")
    args = parser.parse_args(argv)
    course = Course(Path(args.course), args.assignment)
    out = course.root / "reports" / course.assignment
    rows, skipped = compare(course, out)
    for line in skipped:
        print(f"left out: {line}")
    print(f"{len(rows)} pair(s) of {course.assignment} compared: {out / 'similarity.csv'}, {out / 'similarity.html'}")
    for row in rows[:5]:
        print(f"  {row['similarity']:.2f}  {row['student_a']} / {row['student_b']}")


if __name__ == "__main__":
    main()
