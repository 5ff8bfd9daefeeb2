"""grading/exchange.py's own decisions, without a hub (tests/test_hub.py runs the whole route): which submission is
set aside as written in another's name, when one is noted late, whose feedback is released, and the exchange's mode."""
import json
import os
import stat
from datetime import datetime
from pathlib import Path

import pytest

from grading import exchange

pytestmark = pytest.mark.fast


def entry(student, stamp, owner, folder="/x"):
    return (student, f"{folder}/inbound/{student}+a+{stamp}+r", stamp, owner)


def test_a_submission_another_user_wrote_is_spoofed_where_the_named_student_is_a_user(monkeypatch):
    monkeypatch.setattr(exchange, "is_user", lambda name: name in {"ann", "bob"})
    own, spoof = entry("ann", "2026-01-01 10:00:00.0 UTC", "ann"), entry("ann", "2026-01-02 10:00:00.0 UTC", "bob")
    older_spoof = entry("bob", "2026-01-01 10:00:00.0 UTC", "ann")
    unknown = entry("zed", "2026-01-01 10:00:00.0 UTC", "jovyan")  # a hub whose servers all run as one user
    assert exchange.spoofed([own, spoof, older_spoof, unknown]) == [spoof, older_spoof]


def test_spoofed_entries_are_moved_out_of_the_inbound_and_noted_against_their_writer(tmp_path, capsys):
    (tmp_path / "inbound").mkdir()
    spoof = entry("ann", "2026-01-02 10:00:00.0 UTC", "bob", folder=tmp_path)
    Path(spoof[1]).mkdir()
    notes = exchange.set_aside([spoof], tmp_path / "aside")
    assert not Path(spoof[1]).exists() and (tmp_path / "aside" / Path(spoof[1]).name).is_dir()
    assert list(notes) == ["bob"] and "in ann's name" in notes["bob"][0]
    assert "SET ASIDE:" in capsys.readouterr().out


@pytest.mark.parametrize("due, late", [(datetime(2000, 1, 1), True), (datetime(2099, 1, 1), False), (None, False)])
def test_a_submission_after_the_due_date_is_noted_late_in_collected_json(tmp_path, due, late):
    (tmp_path / "timestamp.txt").write_text("2026-12-07 23:45:01.123456 UTC")
    exchange.record(tmp_path, due, ["another note"])
    notes = json.loads((tmp_path / "collected.json").read_text())["notes"]
    assert notes[-1] == "another note" and len(notes) == 1 + late
    assert all(note.startswith("late: the submission is dated 2026-12-0") for note in notes[:-1])


def test_no_timestamp_writes_no_record(tmp_path):
    exchange.record(tmp_path, datetime(2000, 1, 1), [])
    assert not (tmp_path / "collected.json").exists()


def page(feedback, student, secret=True):
    folder = feedback / student / "a"
    folder.mkdir(parents=True)
    (folder / "a.html").write_text("<html></html>")
    if secret:
        (folder / "submission_secret.txt").write_text("s")


def test_feedback_is_released_only_to_students_who_submitted_through_the_exchange(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(exchange, "nbgrader", lambda course, where, *arguments: ran.append(arguments) or 0)
    page(tmp_path, "ann")
    page(tmp_path, "bob", secret=False)
    assert exchange.release_feedback(tmp_path, tmp_path / "x", tmp_path, "a") == 0
    assert ran == [("release_feedback", "a", "--CourseDirectory.student_id_exclude=bob")]
    assert "NOT RELEASED: bob did not submit through the exchange" in capsys.readouterr().out


def test_feedback_with_nobody_to_release_to_runs_nothing_and_without_pages_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(exchange, "nbgrader", lambda *arguments: pytest.fail("nbgrader ran"))
    assert exchange.release_feedback(tmp_path, tmp_path / "x", tmp_path, "a") == 1
    assert "run make grade first" in capsys.readouterr().out
    page(tmp_path, "bob", secret=False)
    assert exchange.release_feedback(tmp_path, tmp_path / "x", tmp_path, "a") == 0


def test_the_exchange_is_made_open_to_every_user_and_a_closed_one_is_refused(tmp_path):
    made = tmp_path / "srv" / "exchange"
    exchange.prepare(made)
    assert stat.S_IMODE(made.stat().st_mode) == 0o777
    closed = tmp_path / "closed"
    closed.mkdir()
    os.chmod(closed, 0o755)
    with pytest.raises(SystemExit, match="chmod ugo\\+rwx"):
        exchange.prepare(closed)
