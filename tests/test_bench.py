"""The bench's shared helpers (tools/bench/) against values computed independently, and its runner's interface for
every registered assignment. Each assignment's quick run end to end is in its own course/<a>/tests/test_bench.py."""
import math
import sys

import pytest
import torch
import torch.nn as nn

from course.registry import assignments
from course_paths import ROOT
from tools.bench import goals as bench_goals, runner, scaling as bench_scaling
from tools.bench import timing as bench_timing, training as bench_training

pytestmark = pytest.mark.fast


def test_loglog_slope_matches_least_squares_by_hand():
    xs = [64, 128, 256, 512, 1024]
    ys = [3.0 * x**1.7 * (1.1 if i % 2 else 0.95) for i, x in enumerate(xs)]  # a power law with wobble
    log_x, log_y = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mean_x, mean_y = sum(log_x) / len(xs), sum(log_y) / len(xs)
    by_hand = (sum((a - mean_x) * (b - mean_y) for a, b in zip(log_x, log_y))
               / sum((a - mean_x) ** 2 for a in log_x))
    assert bench_scaling.loglog_slope(xs, ys) == pytest.approx(by_hand)
    assert bench_scaling.loglog_slope(xs, [5 * x**2 for x in xs]) == pytest.approx(2.0)


def tensor_bytes(*shape):
    return torch.empty(shape, dtype=torch.float32).nbytes


def test_analytic_sizes_count_the_attention_tensors():
    batch, heads, seq_len, proj_dim, head_dim = 2, 3, 5, 4, 6
    scores = tensor_bytes(batch, heads, seq_len, seq_len)
    assert bench_scaling.full_attention_bytes(batch, heads, seq_len) == 2 * scores
    assert bench_scaling.full_attention_bytes(batch, heads, seq_len, backward=True) == 3 * scores
    low_rank, projected = tensor_bytes(batch, heads, seq_len, proj_dim), tensor_bytes(batch, heads, proj_dim, head_dim)
    assert (bench_scaling.linformer_attention_bytes(batch, heads, seq_len, proj_dim, head_dim)
            == 2 * low_rank + 2 * projected)
    assert (bench_scaling.linformer_attention_bytes(batch, heads, seq_len, proj_dim, head_dim, backward=True)
            == 3 * low_rank + 4 * projected)


def test_alternating_timing_ranks_a_slower_callable(monkeypatch):
    """On a clock only the callables advance (20 ms and 5 ms a call), so the machine's load cannot change it."""
    now = [0.0]
    monkeypatch.setattr(bench_timing.time, "perf_counter", lambda: now[0])

    def costs(seconds):
        return lambda: now.__setitem__(0, now[0] + seconds)

    result = bench_timing.compare_speed(costs(0.02), costs(0.005), "cpu", rounds=3, min_sample_seconds=0.0)
    assert result["reference_seconds"] == pytest.approx(0.02) and result["other_seconds"] == pytest.approx(0.005)
    assert result["ratio"] == pytest.approx(4.0)


def test_long_calls_are_timed_once():
    # the last point took 0.3 s at L=1024: at 2048 a quadratic extrapolation gives 1.2 s
    assert bench_scaling.timed_runs([512, 1024], [0.1, 0.3], 2048, repeats=3, long_call_seconds=1.0) == 1
    assert bench_scaling.timed_runs([512, 1024], [0.1, 0.2], 2048, repeats=3, long_call_seconds=1.0) == 3
    assert bench_scaling.timed_runs([], [], 64, repeats=3, long_call_seconds=1.0) == 3
    assert bench_scaling.timed_runs([512], [9.0], 1024, repeats=3, long_call_seconds=None) == 3


def test_alternating_timing_interleaves_the_calls():
    calls = []
    bench_timing.alternating_seconds({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, "cpu",
                              rounds=2, warmup=0, min_sample_seconds=0.0)
    assert calls == ["a", "b", "a", "b", "a", "b"]  # one calibration call each, then A B A B


def test_output_difference_tells_equal_from_different():
    torch.manual_seed(0)
    layer = nn.Linear(4, 3)
    inputs = torch.randn(5, 4)
    same = bench_timing.output_difference(layer, layer, inputs)
    assert same == dict(match=True, max_abs_diff=0.0, grad_max_abs_diff=0.0)
    other = nn.Linear(4, 3)
    different = bench_timing.output_difference(layer, other, inputs)
    assert not different["match"] and different["max_abs_diff"] > 0


class ConstantLogit(nn.Module):
    """Predicts class 1 for every example (one positive logit)."""

    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return self.bias.expand(len(x), 1)


def test_accuracy_stop_measures_held_out_data_and_stops_at_target():
    labels = torch.tensor([1.0, 1.0, 1.0, 0.0])  # class 1 is right on 3 of 4
    inputs = torch.zeros(4, 2)
    assert bench_training.held_out_accuracy(ConstantLogit(), inputs, labels, batch_size=3) == pytest.approx(0.75)
    assert bench_training.AccuracyStop(ConstantLogit(), inputs, labels, target=0.75)(history=None) is True
    stop = bench_training.AccuracyStop(ConstantLogit(), inputs, labels, target=0.9)
    assert stop(history=None) is False and stop.accuracies == [pytest.approx(0.75)]


def test_summarize_runs_takes_median_and_worst():
    runs = [dict(seed=s, seconds=t, steps=n, reached=r) for s, t, n, r in
            [(0, 10.0, 100, True), (1, 30.0, 300, True), (2, 20.0, 200, False)]]
    assert bench_training.summarize_runs(runs) == dict(median_seconds=20.0, worst_seconds=30.0, median_steps=200,
                                              worst_steps=300, all_reached=False)


def test_table_shows_verdicts():
    goals = [bench_goals.Goal("s", "ratio", "1.10", "<= 1.3", True),
             bench_goals.Goal("s", "time", "70 s", "<= 60 s", False),
             bench_goals.Goal("s", "method", "profiler")]
    table = bench_goals.format_table(goals, title="T")
    lines = table.splitlines()
    assert lines[0] == "T" and len(lines) == 3 + len(goals)
    assert lines[3].endswith("PASS") and lines[4].endswith("MISS") and lines[5].endswith("-")
    assert [g["verdict"] for g in bench_goals.goals_as_dicts(goals)] == ["PASS", "MISS", "-"]


def registry_with(tmp_path, name):
    """A checkout root whose course.toml registers the course's assignments and one more, called name, whose one task
    borrows the first registered assignment's first check."""
    check = next(iter(assignments()[0].tasks.values())).check
    extra = (f'\n[[assignments]]\nname = "{name}"\ntitle = "x"\n[assignments.tasks]\n'
             f'1 = {{ points = 1, check = "{check}", trains = false }}\n')
    (tmp_path / "course.toml").write_text((ROOT / "course.toml").read_text() + extra)
    return tmp_path


def test_the_runner_refuses_an_unregistered_assignment_in_one_line(capsys):
    with pytest.raises(SystemExit) as stopped:
        runner.main(["--assignment", "nope", "--quick"])
    message = str(stopped.value.code)
    assert message.count("\n") == 0 and "no assignment 'nope'" in message and "course.toml" in message
    assert "course/nope/bench.py" in message


def test_the_runner_names_the_bench_module_a_registered_assignment_lacks(tmp_path):
    with pytest.raises(runner.BenchError) as refused:
        runner.load_bench("decoder", root=registry_with(tmp_path, "decoder"))
    assert str(refused.value).count("\n") == 0
    assert "add course/decoder/bench.py defining SETTINGS, SECTIONS, goals" in str(refused.value)


@pytest.mark.parametrize("name", ["registry", "slices"])
def test_a_shared_module_is_no_assignment_s_bench(tmp_path, name):
    """An assignment named like a shared module of course/ (where the bench modules live, course/<a>/bench.py) gets no
    bench from it, and a refusal in one line rather than an import error."""
    with pytest.raises(runner.BenchError, match=f"add course/{name}/bench.py defining SETTINGS"):
        runner.load_bench(name, root=registry_with(tmp_path, name))


def test_a_bench_module_without_the_interface_is_refused(tmp_path, monkeypatch):
    """A module course/<name>/bench.py that defines only part of the interface is named with what it lacks."""
    package = tmp_path / "course" / "partial"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "bench.py").write_text("SETTINGS = {'full': {}, 'quick': {}}\n")
    monkeypatch.setattr(sys.modules["course"], "__path__", [*sys.modules["course"].__path__, str(package.parent)])
    try:
        with pytest.raises(runner.BenchError, match=r"^course/partial/bench.py defines no SECTIONS, goals"):
            runner.load_bench("partial", root=registry_with(tmp_path, "partial"))
    finally:
        sys.modules.pop("course.partial.bench", None)
        sys.modules.pop("course.partial", None)


@pytest.mark.parametrize("name", [assignment.name for assignment in assignments()])
def test_each_bench_module_defines_the_interface(name):
    """Every registered assignment's bench loads with both settings, sections to run and figures to draw (the
    sections each report holds: course/<a>/tests/test_bench.py)."""
    module = runner.load_bench(name)
    assert set(module.SETTINGS) == {"full", "quick"} and len(module.SECTIONS) > 0
    assert all(callable(section) for section in module.SECTIONS.values()) and callable(module.figures)


class History:
    """What bench_training.first_reaching reads of course_lib.training.History."""

    def __init__(self, seconds, step, val_accuracy):
        self.seconds, self.step, self.val_accuracy = seconds, step, val_accuracy


def test_first_reaching_finds_the_first_evaluation_at_the_target():
    history = History(seconds=[0.0, 2.0, 4.0, 6.0], step=[0, 100, 200, 300], val_accuracy=[0.0, 0.991, 0.98, 0.999])
    assert bench_training.first_reaching(history, 0.99) == (2.0, 100)
    assert bench_training.first_reaching(history, 0.995) == (6.0, 300)
    assert bench_training.first_reaching(history, 1.0) == (None, None)
    test_accuracy = [0.1, 0.5, 0.96, 0.97]  # measured on other data than the validation split
    assert bench_training.first_reaching(history, 0.95, test_accuracy) == (4.0, 200)
    assert bench_training.first_reaching(history, 0.99, test_accuracy) == (None, None)

