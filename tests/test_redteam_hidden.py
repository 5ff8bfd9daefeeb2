"""Red team (issue 22's hidden cases): attacks no issue listed, each held by a mechanism tested here at unit level.

- Cells that each sleep just under their wall-clock backstop: no CPU, so no CPU limit stops them, and each cell's
  backstop (3 x its limit) let a notebook of them hold a grading slot for the whole notebook's backstop (an hour).
  Now a submission may idle (neither run nor wait for a CPU) course.toml's idle_seconds in all; after that a cell that
  idles GRACE seconds more is stopped as one that slept (grading/sandbox/supervise.py).
- A notebook that fills out/ with 150,000 empty task_N.pt files: the grader listed and opened every one, outside any
  budget (8-21 s per 150,000 files; a notebook can make millions); now it looks up only its check cells' tasks.
- A saved model too large for the grader to read (sizes far beyond the task's defaults): it was reported as "records
  could not be read: possible tampering"; now the task says the size and is flagged for a person without that claim.

The sleeper and the huge model are graded end to end, beside an honest notebook, by tests/test_redteam_class.py.
"""
import os
import subprocess
from types import SimpleNamespace

import pytest
import torch

from grading.judge import trained_models as trained
from grading.judge import unreadable_records
from grading.judge.score import Verdict
from grading.sandbox import cpuclock, supervise


class StillMeter:
    """A sandbox that never runs: its CPU and run-queue seconds stay at 0."""

    def read(self):
        return 0.0, 0.0


class BusyMeter:
    """A sandbox whose one thread is always running or waiting for a CPU (a starved or working cell)."""

    def __init__(self):
        self.started = supervise.time.monotonic()

    def read(self):
        elapsed = supervise.time.monotonic() - self.started
        return elapsed * 0.1, elapsed * 0.9  # 10% running, 90% queued: a machine loaded 10 x over


def watched(meter, monkeypatch, seconds=4.0, started=True):
    """How watch() ends a sandbox (a `sleep`) that is in its first cell (started) or still starting, of 20 s, under
    meter, with an allowance of 1 s idle."""
    monkeypatch.setattr(supervise, "GRACE", 0.5)
    monkeypatch.setattr(cpuclock, "WAITS", True)
    program = [SimpleNamespace(limit=20.0)]
    job = SimpleNamespace(meter=meter, cpu=0.0, threads=1, deadline=supervise.time.monotonic() + 600, idle=0.0,
                          max_idle=1.0, stopped=None, cap=None, account=None)
    reader, writer = os.pipe()
    os.write(writer, b'{"event": "start", "cell": 0}\n' if started else b"")
    process = subprocess.Popen(["sleep", str(seconds)], start_new_session=True)
    try:
        clock = supervise.Clock(program, [], supervise.time.monotonic(), meter.read())
        return supervise.watch(process, supervise.Progress(reader), job, clock), job
    finally:
        process.kill()
        process.wait()
        os.close(reader)
        os.close(writer)


@pytest.mark.full
def test_a_cell_that_sleeps_past_the_submissions_idle_allowance_is_stopped(monkeypatch):
    (ended, cell), job = watched(StillMeter(), monkeypatch, seconds=60)
    assert (ended, cell) == ("idle", 0)
    assert job.idle > job.max_idle and job.stopped["idle"] > supervise.GRACE
    output = supervise.stopped_output("idle", SimpleNamespace(limit=20.0), SimpleNamespace(memory=1, scratch=1),
                                      job.stopped, job.max_idle)
    assert output["error"]["ename"] == "CellTimeoutError" and "slept or waited" in output["error"]["evalue"]
    assert "its 1 s of wall-clock time allowed" in output["error"]["evalue"]


@pytest.mark.full
def test_a_starved_cell_is_not_idle(monkeypatch):
    """Time spent waiting for a CPU on a busy machine is not sleep: the cell runs to its end."""
    (ended, _), job = watched(BusyMeter(), monkeypatch, seconds=3)
    assert ended == "died" and job.idle < job.max_idle  # "died": the sandbox's process ended by itself


@pytest.mark.full
def test_the_probes_start_is_left_to_its_own_backstop(monkeypatch):
    """Reading torch from a slow disk after the allowance is spent does not stop the next attempt before any cell."""
    (ended, cell), job = watched(StillMeter(), monkeypatch, seconds=3, started=False)
    assert (ended, cell) == ("died", -1) and job.idle > job.max_idle


@pytest.mark.fast
def test_idle_is_the_wall_time_neither_run_nor_queued(monkeypatch):
    monkeypatch.setattr(cpuclock, "WAITS", True)
    assert supervise.idle_seconds((10.0, (5.0, 1.0)), (12.0, (5.5, 1.0))) == pytest.approx(1.5)
    assert supervise.idle_seconds((10.0, (5.0, 1.0)), (12.0, (7.0, 3.0))) == 0.0  # two threads busy: not negative
    monkeypatch.setattr(cpuclock, "WAITS", False)  # without run-queue waits a starved cell would look asleep
    assert supervise.idle_seconds((10.0, (5.0, 1.0)), (12.0, (5.0, 1.0))) == 0.0


@pytest.mark.fast
def test_a_saved_model_beyond_the_read_limit_is_flagged_as_too_large_not_as_tampering(tmp_path, monkeypatch):
    monkeypatch.setattr(supervise, "MAX_FILE", 10_000)
    (tmp_path / "out").mkdir()
    small, large = 5, 6  # any two tasks: one record of outputs, one of weights past the read limit
    torch.save([{"weights": {"w": torch.zeros(5_000)}}], tmp_path / "out" / f"task_{large}.pt")  # 20 kB of weights
    torch.save([{"outputs": [1]}], tmp_path / "out" / f"task_{small}.pt")
    job = SimpleNamespace(program=[], scratch=tmp_path, recorded_tasks=lambda: {small, large})
    run = supervise.ProbeRun()
    supervise.collect(job, run)
    assert set(run.records) == {small}
    assert run.oversized == {large: (tmp_path / "out" / f"task_{large}.pt").stat().st_size}
    program = [SimpleNamespace(kind="check", task=small), SimpleNamespace(kind="check", task=large)]
    run.cells = {0: {"error": None}, 1: {"error": None}}
    verdicts = {task: Verdict(task, 1.0, 1.0, "") for task in (small, large)}
    unreadable_records(program, run, verdicts)
    assert verdicts[small].score == 1.0 and not verdicts[small].flag
    assert verdicts[large].score == 0.0 and "MiB, more than the 256 MiB the grader reads" in verdicts[large].message
    assert "exceeds" in verdicts[large].flag and "tampering" not in verdicts[large].flag + verdicts[large].message


@pytest.mark.fast
def test_files_left_in_out_are_looked_up_by_task_never_listed(tmp_path):
    (tmp_path / "out").mkdir()
    for number in ("3", "99", "0100", "x"):  # check cells ask for 3 and 4; 99 is an answer cell's; 0100 is not 100
        (tmp_path / "out" / f"task_{number}.pt").write_bytes(b"")
    program = [SimpleNamespace(kind="check", task=3), SimpleNamespace(kind="check", task=4),
               SimpleNamespace(kind="answer", task=99)]
    job = supervise.Job(program=program, scratch=tmp_path, runtime=tmp_path, box=None)
    assert job.recorded_tasks() == {3}


MODEL = dict(vocab_size=16, embed_dim=32, num_heads=2, feedforward_dim=64, num_encoder_layers=2, num_decoder_layers=2,
             pad_id=0)


@pytest.mark.fast
def test_one_size_rule_bounds_sizes_both_ways_and_leaves_ids_alone():
    """1..4 x the default for every size: above it flagged (BeyondDefaults), below 1 no model; pad_id 0 is no size."""
    spec = {"defaults": f"{__name__}:MODEL"}  # the sizes of a model like an assignment's defaults, below
    trained.within_defaults(dict(MODEL), spec)
    assert MODEL["pad_id"] == 0
    with pytest.raises(trained.InvalidModel, match="embed_dim = 0 is not a size") as refused:
        trained.within_defaults(dict(MODEL, embed_dim=0), spec)
    assert not isinstance(refused.value, trained.BeyondDefaults)
    with pytest.raises(trained.BeyondDefaults, match="num_decoder_layers = 9 is above 8"):
        trained.within_defaults(dict(MODEL, num_decoder_layers=9), spec)
