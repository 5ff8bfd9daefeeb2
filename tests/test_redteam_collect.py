"""Red team, the shared pieces: collect on hostile zips and names, a notebook bomb, the renderer's bounds and escaping,
and a notebook nbgrader cannot take, each attacked directly on the first registered assignment (course_paths).

The attacks that need an assignment's own classes and tasks live with it (course/<name>/tests/test_redteam_scoring.py).
"""
import json
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from course_paths import DEFINITION_TASKS, NAME, POINTS, RELEASE, ROOT, course_folder
from grading.collect import collect
from grading.judge.score import Verdict
from grading.publish.render import RENDER_LIMIT, render
from grading.match.notebook import UnreadableNotebook, read
from grading.text import encodable, markdown
from redteam_builders import XSS, inner_zip, latin1_placeholder, patch_central, write_latin1_names
from submissions import csv_rows, scratch_course


@pytest.mark.fast
def test_a_notebook_of_millions_of_empty_objects_is_refused_unparsed(tmp_path):
    """6 MB of `{},` parse to 2 million dicts (170 MB; 100 MB of it, 2.8 GB) in the grader's own process."""
    bomb = tmp_path / "bomb.ipynb"
    bomb.write_text('{"cells": [' + "{}," * 2_000_000 + "{}]}")
    with pytest.raises(UnreadableNotebook, match="not a readable notebook"):
        read(bomb)
    assert len(read(RELEASE)["cells"]) > 10


# ----- Shown text: encodable, escaped, bounded ------------------------------------------------------------------------

@pytest.mark.fast
def test_markdown_escaping_neutralises_tags_links_code_and_pipes():
    text = markdown(f"{XSS} `code` [link](javascript:x) ![i](y) | cell **b** \ud800\n# heading")
    assert "<" not in text and "\ud800" not in text and "\n" not in text
    for mark in ("`", "[", "]", "|", "*", "!"):
        assert re.search(r"(?<!\\)" + re.escape(mark), text) is None, mark
    encodable(text).encode("utf-8")


@pytest.mark.fast
def test_rendered_notebook_is_bounded_and_encodable():
    """100k added cells and a 95 MB cell: the rendered notebook stays small and says what it left out."""
    from grading.match.notebook import release_layout
    from grading.match.program import ProgramCell, build_program
    release = read(RELEASE)
    program, _ = build_program(release, release_layout(release), lambda source: 60.0)
    program += [ProgramCell("extra", "print(1)", 1.0, -1, 1000 + i) for i in range(100_000)]
    program.append(ProgramCell("extra", "#" + "x" * 95_000_000, 1.0, -1, 200_000))
    big, line = "z" * 10**6, "f" * 10**6  # one object each, shared by every output (memory stays small)
    output = {"stdout": "y" * 50_000 + "\ud800", "stderr": XSS, "displays": [big] * 50,
              "error": {"ename": big, "evalue": big, "frames": [line] * 100}}
    outputs = {i: output for i in range(len(program) - 100_001, len(program))}
    verdicts = {task: Verdict(task, 1, 0, "no") for task in POINTS}
    started = time.process_time()  # CPU time, not wall time: a busy machine does not change it
    notebook = render(release, program, outputs, verdicts, [XSS] * 1000)
    text = json.dumps(notebook, ensure_ascii=False)
    text.encode("utf-8")
    assert len(text) < 2 * RENDER_LIMIT + len(json.dumps(release)) and "not shown here" in text
    assert time.process_time() - started < 30  # a runaway bound (linear work takes about a second)
    notes = next(cell for cell in notebook["cells"] if cell.get("id") == "grader-notes")
    assert "<img" not in notes["source"] and "more notes" in notes["source"]


# ----- Collect: each entry on its own, Unicode ids, no merging ------------------------------------------------------

NAMES = [f"müllerjürgen_{NAME}.ipynb", f"möllerjärgen_{NAME}.ipynb"]  # stored in Latin-1, no UTF-8 flag


def hostile_zip(path):
    """Every kind of bad entry beside good ones; returns {student id expected: reason word or ''}."""
    notebook = json.dumps(read(RELEASE))
    with zipfile.ZipFile(path, "w") as archive:
        for index, name in enumerate(NAMES):
            archive.writestr(zipfile.ZipInfo(latin1_placeholder(name, index), (2026, 11, 20, 10, 0, 0)), notebook)
        for name in (f"张伟_{NAME}.ipynb", f"Αλέξανδρος_{NAME}.ipynb", f"Alice Smith/{NAME}.ipynb",
                     f"Alice-Smith/{NAME}.ipynb", f"crc/{NAME}.ipynb", f"crc/older {NAME}.ipynb",
                     f"bomb/{NAME}.ipynb", f"month0/{NAME}.ipynb", f"locked/{NAME}.ipynb",
                     f"xssname/{XSS}.ipynb"):
            archive.writestr(zipfile.ZipInfo(name, (2026, 11, 20, 10, 0, 0)), notebook)
        archive.writestr(f"encrypted_{NAME}.zip", inner_zip(f"{NAME}.ipynb", read(RELEASE), encrypted=True))
        archive.writestr(f"cut_{NAME}.zip", inner_zip(f"{NAME}.ipynb", read(RELEASE), corrupt=True))
        archive.writestr(f"ownzip_{NAME}.zip", inner_zip(f"{NAME}.ipynb", read(RELEASE)))
    write_latin1_names(path, NAMES)
    corrupt = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(f"crc/{NAME}.ipynb")
    name_length, extra_length = (int.from_bytes(corrupt[info.header_offset + at:info.header_offset + at + 2], "little")
                                 for at in (26, 28))
    corrupt[info.header_offset + 30 + name_length + extra_length + 5] ^= 0xFF
    path.write_bytes(bytes(corrupt))
    patch_central(path, f"bomb/{NAME}.ipynb", declared_size=2 << 30)
    patch_central(path, f"month0/{NAME}.ipynb", month0=True)
    patch_central(path, f"locked/{NAME}.ipynb", flag_bits=0x1)
    return {"müllerjürgen": "", "möllerjärgen": "", "张伟": "", "Αλέξανδρος": "", "Alice-Smith": "",
            "Alice-Smith-2": "", "crc": "Bad CRC", "bomb": "too large", "month0": "no valid date",
            "locked": "encrypted", "encrypted": "encrypted", "cut": "not a readable zip", "ownzip": "", "xssname": ""}


@pytest.mark.fast
def test_collect_skips_bad_entries_one_by_one_and_loses_no_one(tmp_path):
    expected = hostile_zip(tmp_path / "download.zip")
    collected, unknown, skipped = collect(tmp_path / "download.zip", course_folder(tmp_path), NAME)
    assert set(collected) == set(expected), sorted(collected)
    for student, word in expected.items():
        folder = tmp_path / "submitted" / student / NAME
        notes = " ".join(json.loads((folder / "collected.json").read_text())["notes"])
        assert word in notes, (student, notes)
        has_notebook = (folder / f"{NAME}.ipynb").is_file()
        assert has_notebook == (word not in ("too large", "encrypted", "not a readable zip")), student
    reasons = dict(skipped)
    assert "Bad CRC" in reasons[f"crc/{NAME}.ipynb"] and "too large" in reasons[f"bomb/{NAME}.ipynb"]
    assert "encrypted" in reasons[f"locked/{NAME}.ipynb"] and "not a readable zip" in reasons[f"cut_{NAME}.zip"]
    assert any("graded as `Alice-Smith-2`" in note for note in collected["Alice-Smith-2"])
    assert not list((tmp_path / "submitted").glob(".*collecting"))  # no partial state left behind


@pytest.mark.fast
def test_collect_command_reports_skipped_entries_escaped(tmp_path):
    hostile_zip(tmp_path / "download.zip")
    result = subprocess.run([sys.executable, "-m", "grading.collect", str(tmp_path / "download.zip"), "--course",
                             str(course_folder(tmp_path)), "--assignment", NAME],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = (tmp_path / "collect_report.md").read_text()
    assert "Bad CRC" in report and "encrypted" in report and "<img" not in report and "too large" in report


@pytest.mark.full
@pytest.mark.grading
def test_a_notebook_nbgrader_cannot_take_stays_with_its_student(tmp_path):
    """nbgrader fails on one rendered notebook: that student gets a minimal one, flagged; the other is untouched."""
    from grading.folders import Course
    from grading.grade import Grading
    from grading.judge import Result, not_graded
    from grading.publish import publish, write_rendered
    from grading.collect import Submission
    course = Course(scratch_course(tmp_path / "course"), NAME)
    grading = Grading(course, "none")
    results, submissions = [], []
    for student in ("steady", "broken"):
        folder = course.submitted / student / NAME
        folder.mkdir(parents=True)
        submissions.append(Submission(student, folder))
        verdicts = not_graded(grading.judging, "a test")
        verdicts[DEFINITION_TASKS[0]].score = 1.0
        results.append(Result(student, verdicts, []))
        write_rendered(course, submissions[-1], render(grading.release.notebook, [], {}, verdicts, []))
    (course.build / "rendered" / "broken" / NAME / f"{NAME}.ipynb").write_text("{not json")
    problems = publish(course, grading.release, submissions, results, {"jobs": 1, "sandbox": "none", "seconds": 0})
    assert not problems
    totals = {row["student_id"]: float(row["score"]) for row in csv_rows(course.root / "grades.csv")}
    assert totals == {"steady": 1.0, "broken": 1.0}
    assert results[1].flags and not results[0].flags
    assert any("minimal" in note for note in results[1].notes)
    assert (course.feedback / "broken" / NAME / f"{NAME}.html").is_file()


@pytest.mark.fast
def test_collect_writes_nothing_outside_submitted_whatever_the_names(tmp_path):
    """Names that climb out, are absolute, hold newlines or Markdown: no file outside submitted/, no id from them."""
    notebook = json.dumps(read(RELEASE))
    with zipfile.ZipFile(tmp_path / "download.zip", "w") as archive:
        for name in (f"../evil_{NAME}.ipynb", f"/etc/evil_{NAME}.ipynb", f"../../x/{NAME}.ipynb",
                     f"a\n## Flagged_{NAME}.ipynb", f"[x](javascript:y)_{NAME}.ipynb",
                     f"._dot_{NAME}.ipynb"):
            archive.writestr(zipfile.ZipInfo(name, (2026, 11, 20, 10, 0, 0)), notebook)
    collected, unknown, skipped = collect(tmp_path / "download.zip", course_folder(tmp_path / "course"), NAME)
    written = {path.relative_to(tmp_path) for path in tmp_path.rglob("*") if path.is_file()}
    assert all(path.parts[:2] == ("course", "submitted") for path in written - {Path("download.zip"),
                                                                               Path("course/course.toml")}), written
    assert all(re.fullmatch(r"[\w.-]+", student) for student in collected), collected
    assert not skipped
