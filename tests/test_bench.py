"""The bench: its helpers against values computed independently, and a quick run end to end."""
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn

from checkers.gpt import trained as gpt_trained
from course.reference import reference_of
from course_lib import gpt as gpt_defaults
from course_lib import seq2seq as seq2seq_defaults
from course_lib import vit as vit_defaults
from course.gpt import bench as bench_gpt
from tools.bench import goals as bench_goals, runner, scaling as bench_scaling
from course.seq2seq import bench as bench_seq2seq
from course.vit import bench as bench_vit
from tools.bench import native as bench_native, timing as bench_timing, training as bench_training

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("meta", "layers", "training_step", "training", "scaling", "goals")
SEQ2SEQ_SECTIONS = ("meta", "layers", "training", "decoding", "goals")
GPT_SECTIONS = ("meta", "training", "attention", "generation", "goals")
VIT_SECTIONS = ("meta", "training", "layers", "goals")


def run_quick_bench(assignment, out):
    """Run an assignment's bench with --quick in a fresh process, as `make bench` would: (report, out, stdout)."""
    done = subprocess.run([sys.executable, "-m", "tools.bench", "--assignment", assignment, "--quick", "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads((out / "bench.json").read_text()), out, done.stdout


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    """The transformer's quick bench: (report, out, stdout)."""
    return run_quick_bench("transformer", tmp_path_factory.mktemp("bench"))


@pytest.fixture(scope="module")
def quick_seq2seq_report(tmp_path_factory):
    """The seq2seq assignment's quick bench: (report, out, stdout)."""
    return run_quick_bench("seq2seq", tmp_path_factory.mktemp("bench_seq2seq"))


@pytest.fixture(scope="module")
def quick_gpt_report(tmp_path_factory):
    """The gpt assignment's quick bench: (report, out, stdout)."""
    return run_quick_bench("gpt", tmp_path_factory.mktemp("bench_gpt"))


def numbers(tree):
    """Every int or float in a nested JSON structure (bools excluded)."""
    if isinstance(tree, dict):
        return [n for value in tree.values() for n in numbers(value)]
    if isinstance(tree, list):
        return [n for value in tree for n in numbers(value)]
    return [tree] if isinstance(tree, (int, float)) and not isinstance(tree, bool) else []


def test_quick_bench_writes_every_section(quick_report):
    report, out, stdout = quick_report
    assert all(section in report for section in SECTIONS)
    assert report["meta"]["quick"] is True and report["meta"]["wall_seconds"] > 0
    assert report["meta"]["assignment"] == "transformer" and stdout.count("Measured performance of transformer") == 1
    assert all(math.isfinite(n) for n in numbers(report))
    for path in report["meta"]["plots"]:
        assert Path(path).stat().st_size > 0
    assert len(list(out.glob("scaling_*.png"))) == 4
    assert stdout.count("| PASS") + stdout.count("| MISS") == sum(g["passed"] is not None for g in report["goals"])


def test_quick_bench_checks_outputs_before_timing(quick_report):
    report = quick_report[0]
    rows = [row for size in report["layers"].values() for row in size["comparisons"]] + [report["training_step"]]
    assert len(rows) == 9
    for row in rows:
        assert row["match"] is True and row["max_abs_diff"] < 1e-4
        assert row["reference_seconds"] > 0 and row["other_seconds"] > 0 and row["ratio"] > 0


def test_quick_bench_trains_and_measures_scaling(quick_report):
    report = quick_report[0]
    for task in ("task 6", "task 8"):
        run = report["training"][task]["runs"][0]
        assert run["seconds"] > 0 and run["steps"] > 0 and 0 <= run["accuracy"] <= 1
    scaling = report["scaling"]
    for pass_name in ("forward", "forward_backward"):
        for curve in scaling[pass_name].values():
            assert len(curve["peak_bytes"]) == len(curve["seconds"]) == len(scaling["seq_lens"])
            assert min(curve["peak_bytes"]) > 0 and min(curve["seconds"]) > 0
            assert math.isfinite(curve["memory_slope"]) and math.isfinite(curve["time_slope"])
        # memory of full attention grows faster than Linformer's, even at the quick run's lengths
        curves = scaling[pass_name]
        assert curves["full attention"]["memory_slope"] > curves["Linformer k=8"]["memory_slope"]


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
    """On a clock the callables move themselves (20 ms against 5 ms): what a busy machine does to sleeps is no part."""
    now = [0.0]
    monkeypatch.setattr(bench_timing, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    advance = lambda seconds: lambda: now.__setitem__(0, now[0] + seconds)
    result = bench_timing.compare_speed(advance(0.02), advance(0.005), "cpu", rounds=3, min_sample_seconds=0.0)
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
    """A checkout root whose course.toml registers the course's assignments and one more, called name."""
    extra = (f'\n[[assignments]]\nname = "{name}"\ntitle = "x"\n[assignments.tasks]\n'
             '1 = { points = 1, check = "checkers.transformer:check_task_1", trains = false }\n')
    (tmp_path / "course.toml").write_text((ROOT / "course.toml").read_text() + extra)
    return tmp_path


def test_the_runner_refuses_an_unregistered_assignment_in_one_line(capsys):
    with pytest.raises(SystemExit) as stopped:
        runner.main(["--assignment", "nope", "--quick"])
    message = str(stopped.value.code)
    assert message.count("\n") == 0 and "no assignment 'nope'" in message and "course.toml" in message
    assert "tools/bench/nope.py" in message


def test_the_runner_names_the_bench_module_a_registered_assignment_lacks(tmp_path):
    with pytest.raises(runner.BenchError) as refused:
        runner.load_bench("decoder", root=registry_with(tmp_path, "decoder"))
    assert str(refused.value).count("\n") == 0
    assert "add tools/bench/decoder.py defining SETTINGS, SECTIONS, goals" in str(refused.value)


@pytest.mark.parametrize("name", ["timing", "runner"])
def test_a_shared_module_is_no_assignment_s_bench(tmp_path, name):
    """An assignment named like a shared module gets no bench from it: that module defines no SETTINGS."""
    with pytest.raises(runner.BenchError, match=f"add tools/bench/{name}.py defining SETTINGS"):
        runner.load_bench(name, root=registry_with(tmp_path, name))


def test_a_bench_module_without_the_interface_is_refused(tmp_path, monkeypatch):
    """A module tools/bench/<name>.py that defines only part of the interface is named with what it lacks."""
    package = tmp_path / "tools" / "bench"
    package.mkdir(parents=True)
    (package / "partial.py").write_text("SETTINGS = {'full': {}, 'quick': {}}\n")
    monkeypatch.setattr(sys.modules["tools.bench"], "__path__", [*sys.modules["tools.bench"].__path__, str(package)])
    with pytest.raises(runner.BenchError, match=r"^tools/bench/partial.py defines no SECTIONS, goals"):
        runner.load_bench("partial", root=registry_with(tmp_path, "partial"))
    sys.modules.pop("tools.bench.partial", None)


@pytest.mark.parametrize("name, sections", [("transformer", SECTIONS[1:5]), ("seq2seq", SEQ2SEQ_SECTIONS[1:4]),
                                            ("gpt", GPT_SECTIONS[1:4]), ("vit", VIT_SECTIONS[1:3])])
def test_each_bench_module_defines_the_interface(name, sections):
    module = runner.load_bench(name)
    assert set(module.SETTINGS) == {"full", "quick"} and list(module.SECTIONS) == list(sections)
    assert all(callable(section) for section in module.SECTIONS.values()) and callable(module.figures)


# ----------------------------------------------------------------------------- the seq2seq assignment's bench


def test_quick_seq2seq_bench_writes_every_section(quick_seq2seq_report):
    report, out, stdout = quick_seq2seq_report
    assert all(section in report for section in SEQ2SEQ_SECTIONS)
    assert report["meta"]["assignment"] == "seq2seq" and report["meta"]["quick"] is True
    assert stdout.count("Measured performance of seq2seq") == 1 and "QUICK smoke run" in stdout
    assert all(math.isfinite(n) for n in numbers(report))
    assert [Path(path).name for path in report["meta"]["plots"]] == ["decoding_time.png"]
    assert (out / "decoding_time.png").stat().st_size > 0
    assert stdout.count("| PASS") + stdout.count("| MISS") == sum(g["passed"] is not None for g in report["goals"])


def test_quick_seq2seq_bench_checks_every_layer_against_torch_before_timing(quick_seq2seq_report):
    rows = quick_seq2seq_report[0]["layers"]["comparisons"]
    assert [(row["layer"].split(",")[0], row["native"]) for row in rows] == [
        ("LayerNorm", "nn.LayerNorm"), ("MultiheadAttention", "nn.MultiheadAttention"),
        ("MultiheadAttention", "nn.MultiheadAttention"), ("DecoderBlock", "nn.TransformerDecoderLayer")]
    for row in rows:
        assert row["match"] is True and row["max_abs_diff"] < 1e-4 and row["grad_max_abs_diff"] < 1e-4
        assert row["reference_seconds"] > 0 and row["other_seconds"] > 0 and row["ratio"] > 0
    ratio_goals = [g for g in quick_seq2seq_report[0]["goals"] if "fwd+bwd" in g["name"] and g["goal"]]
    assert [g["name"].split(" vs ")[0] for g in ratio_goals] == ["DecoderBlock"]  # the one time held to a goal


def test_quick_seq2seq_bench_trains_as_the_notebook_and_decodes(quick_seq2seq_report):
    report = quick_seq2seq_report[0]
    training, decoding = report["training"], report["decoding"]
    assert training["stop_at"] == seq2seq_defaults.STOP_AT_ACCURACY
    assert training["training"] == seq2seq_defaults.TRAINING
    run = training["runs"][0]
    assert run["seconds"] > 0 and run["steps"] > 0 and 0 <= run["accuracy"] <= 1 and 0 <= run["fresh_accuracy"] <= 1
    assert run["reached"] == (run["accuracy"] >= seq2seq_defaults.STOP_AT_ACCURACY)
    assert len(decoding["seconds"]) == len(decoding["lengths"]) and min(decoding["seconds"]) > 0
    per_token = [s / n for s, n in zip(decoding["seconds"], decoding["lengths"])]
    assert decoding["seconds_per_token"] == pytest.approx(per_token)


@pytest.fixture(scope="module")
def seq2seq_reference():
    return reference_of("seq2seq")


def test_the_decoding_timer_generates_every_token(seq2seq_reference):
    """eos_id -1 (no token) keeps every sequence running, so a call generates exactly the tokens asked for."""
    torch.manual_seed(0)
    model = seq2seq_reference["Seq2SeqTransformer"](**dict(seq2seq_defaults.MODEL, embed_dim=8, num_heads=2))
    sources = torch.tensor([[3, 4, 5], [6, 0, 0]])
    assert seq2seq_reference["greedy_decode"](model, sources, 7, 1, -1).shape == (2, 7)


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


def test_the_native_decoder_layer_differs_when_a_weight_is_not_copied(seq2seq_reference):
    """The equality check can fail: the native layer with one norm left at its fresh weights computes otherwise."""
    size = dict(bench_seq2seq.COURSE, batch_size=4)
    pairs = bench_seq2seq.layer_pairs(seq2seq_reference, size, "cpu")
    ours, theirs, x = pairs[-1][2], pairs[-1][3], pairs[-1][4]
    assert bench_timing.output_difference(ours, theirs, x)["match"] is True
    theirs.layer.norm3.reset_parameters()
    assert bench_timing.output_difference(ours, theirs, x)["match"] is False


# ----------------------------------------------------------------------------- the gpt assignment's bench


def test_quick_gpt_bench_writes_every_section(quick_gpt_report):
    report, out, stdout = quick_gpt_report
    assert all(section in report for section in GPT_SECTIONS)
    assert report["meta"]["assignment"] == "gpt" and report["meta"]["quick"] is True
    assert stdout.count("Measured performance of gpt") == 1 and "QUICK smoke run" in stdout
    assert all(math.isfinite(n) for n in numbers(report))
    assert [Path(path).name for path in report["meta"]["plots"]] == ["generation_step_time.png"]
    assert (out / "generation_step_time.png").stat().st_size > 0
    assert stdout.count("| PASS") + stdout.count("| MISS") == sum(g["passed"] is not None for g in report["goals"])


def test_quick_gpt_bench_checks_attention_against_sdpa_before_timing(quick_gpt_report):
    attention = quick_gpt_report[0]["attention"]
    assert attention["match"] is True and attention["max_abs_diff"] < 1e-5 and attention["grad_max_abs_diff"] < 1e-5
    assert attention["size"]["seq_len"] == 11 and attention["size"]["batch_size"] == gpt_defaults.BATCH_SIZE
    for name in ("forward_backward", "forward"):
        assert attention[name]["reference_seconds"] > 0 and attention[name]["other_seconds"] > 0
    # the two routes share projections and RoPE; the reference spells out what SDPA fuses into one op
    assert attention["forward_ops"]["reference"] > attention["forward_ops"]["sdpa"] > 0
    ratio_goals = [g for g in quick_gpt_report[0]["goals"] if "ref / SDPA" in g["name"] and g["goal"]]
    assert [g["name"].split(" (")[0] for g in ratio_goals] == ["training step"]  # the one time held to the goal


def test_quick_gpt_bench_trains_as_the_notebook_and_generates(quick_gpt_report):
    report = quick_gpt_report[0]
    training, generation = report["training"], report["generation"]
    assert training["stop_at"] == gpt_defaults.STOP_AT_ACCURACY and training["training"] == gpt_defaults.TRAINING
    assert training["target"] == gpt_trained.TARGET_ACCURACY and training["fresh_seed"] == gpt_trained.CHECK_SEED
    run = training["runs"][0]
    assert run["seconds"] > 0 and run["steps"] > 0 and 0 <= run["accuracy"] <= 1 and 0 <= run["fresh_accuracy"] <= 1
    assert run["reached"] == (run["accuracy"] >= gpt_defaults.STOP_AT_ACCURACY)
    assert generation["identical"] is True and generation["speedup"] > 0
    steps = len(generation["lengths"])
    assert steps == generation["new_tokens"] and generation["lengths"][0] == generation["prompt_len"]
    for route in ("cached", "uncached"):
        assert len(generation[route]["step_seconds"]) == steps and min(generation[route]["step_seconds"]) > 0
        assert sum(generation[route]["step_seconds"]) <= generation[route]["seconds"] * 1.5


@pytest.fixture(scope="module")
def gpt_reference():
    return reference_of("gpt")


def test_the_sdpa_route_differs_when_a_weight_differs(gpt_reference):
    """The equality check can fail: an SDPA route around a layer with one other projection computes otherwise."""
    size = dict(bench_gpt.COURSE, batch_size=4)
    ours, sdpa, x = bench_gpt.attention_pair(gpt_reference, size, "cpu")
    assert bench_timing.output_difference(ours, sdpa, x)["match"] is True
    other = bench_gpt.attention_pair(gpt_reference, size, "cpu")[1]
    other.layer.k_proj.reset_parameters()
    assert bench_timing.output_difference(ours, other, x)["match"] is False


class NoRotation(nn.Module):
    """A RotaryEmbedding that leaves every position as it is."""

    def forward(self, x, offset=0):
        return x


def test_the_sdpa_route_keeps_rope_and_causality(gpt_reference):
    """Without RoPE the SDPA route no longer matches the reference layer; a later token moves no earlier output."""
    size = dict(bench_gpt.COURSE, batch_size=4)
    ours, sdpa, x = bench_gpt.attention_pair(gpt_reference, size, "cpu")
    other = bench_gpt.attention_pair(gpt_reference, size, "cpu")[1]
    other.layer.rotary = NoRotation()
    assert bench_timing.output_difference(ours, other, x)["match"] is False
    future = x.clone()
    future[:, -1] += 1.0  # a later token changes: the earlier outputs of both routes must not move
    for route in (ours, sdpa):
        with torch.no_grad():
            now, changed = route(x), route(future)  # (B, L, D) each
        assert torch.allclose(now[:, :-1], changed[:, :-1], atol=1e-6)
        assert not torch.allclose(now[:, -1], changed[:, -1])


def test_step_stamps_one_per_model_call(gpt_reference):
    """step_seconds times every step of generate: one stamp per model call, so N steps for N new tokens."""
    torch.manual_seed(0)
    model = gpt_reference["GPT"](**dict(gpt_defaults.MODEL, max_len=32))
    prompts = torch.randint(10, (3, 5))
    for use_cache in (True, False):
        tokens, seconds, steps = bench_gpt.step_seconds(gpt_reference, model, prompts, 7, use_cache)
        assert tokens.shape == (3, 12) and torch.equal(tokens[:, :5], prompts)
        assert len(steps) == 7 and min(steps) > 0 and sum(steps) <= seconds
    assert not model._forward_pre_hooks  # the hook is removed


def test_per_step_curve_fits_a_power_law_and_leaves_out_the_first_step():
    lengths = list(range(8, 136))
    law = [2e-6 * length ** 0.5 for length in lengths[1:]]
    runs = [(None, 1.0, [10.0] + [2.0 * s for s in law]),  # first step: the whole prompt, far slower
            (None, 3.0, [10.0] + [0.5 * s for s in law]),
            (None, 2.0, [10.0] + law)]
    curve = bench_gpt.per_step_curve(runs, lengths, bins=8)
    assert curve["seconds"] == 2.0 and curve["step_seconds"] == pytest.approx([10.0] + law)
    assert curve["exponent"] == pytest.approx(0.5, abs=0.01) and curve["exponent_every_step"] == pytest.approx(0.5)
    assert len(curve["bin_lengths"]) == 8 and curve["bin_lengths"][0] > 8  # the first step is in no bin


def test_a_preempted_step_bends_the_every_step_fit_but_not_the_binned_one():
    lengths = list(range(9, 265))
    seconds = [1e-3 * length ** 0.2 for length in lengths]
    for index in range(200, 256, 5):  # a busy machine: every fifth late step lasts 8 times longer
        seconds[index] *= 8
    bin_lengths, bin_seconds = bench_gpt.length_bins(lengths, seconds, bins=16)
    assert bench_scaling.loglog_slope(bin_lengths, bin_seconds) == pytest.approx(0.2, abs=0.02)
    assert bench_scaling.loglog_slope(lengths, seconds) > 0.3  # bent by more than 0.1


def test_length_bins_take_medians_of_consecutive_steps():
    """Edges 1, 3, 9 (geometric from the first length to one past the last): lengths 1-2, then 3-8."""
    lengths, seconds = [1, 2, 3, 4, 5, 6, 7, 8], [1.0, 9.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert bench_gpt.length_bins(lengths, seconds, bins=2) == ([1.5, 5.5], [5.0, 4.5])


# ----------------------------------------------------------------------------- the vit assignment's bench


@pytest.fixture(scope="module")
def quick_vit_report(tmp_path_factory):
    """The vit assignment's quick bench: (report, out, stdout)."""
    return run_quick_bench("vit", tmp_path_factory.mktemp("bench_vit"))


def test_quick_vit_bench_writes_every_section(quick_vit_report):
    report, out, stdout = quick_vit_report
    assert all(section in report for section in VIT_SECTIONS)
    assert report["meta"]["assignment"] == "vit" and report["meta"]["quick"] is True
    assert stdout.count("Measured performance of vit") == 1 and "QUICK smoke run" in stdout
    assert all(math.isfinite(n) for n in numbers(report))
    assert [Path(path).name for path in report["meta"]["plots"]] == ["test_accuracy.png"]
    assert (out / "test_accuracy.png").stat().st_size > 0
    assert stdout.count("| PASS") + stdout.count("| MISS") == sum(g["passed"] is not None for g in report["goals"])


def test_quick_vit_bench_trains_as_the_notebook_and_scores_the_test_split(quick_vit_report):
    training = quick_vit_report[0]["training"]
    assert training["training"] == vit_defaults.TRAINING and training["model"] == vit_defaults.MODEL
    assert training["target"] == vit_defaults.TARGET_ACCURACY
    train_images = len(bench_vit.digit_splits()["train"][1])
    assert training["total_steps"] == vit_defaults.TRAINING["num_epochs"] * math.ceil(train_images / 64)
    run = training["runs"][0]
    assert 0 < run["steps"] < training["total_steps"] and not run["completed"]  # the quick run's 0.5 s cut it short
    assert len(run["curve_seconds"]) == len(run["curve_accuracy"]) >= 2 and run["curve_seconds"][0] == 0
    # the last evaluation scored the finished model: the bench's own test accuracy, measured again afterwards
    assert run["curve_accuracy"][-1] == pytest.approx(run["test_accuracy"], abs=1e-6)  # float32 mean, exact ratio
    assert 0 <= run["shifted_accuracy"] <= 1 and 0 <= run["val_accuracy"] <= 1


def test_quick_vit_bench_checks_the_native_model_before_timing(quick_vit_report):
    layers = quick_vit_report[0]["layers"]
    assert layers["match"] is True and layers["batch_size"] == vit_defaults.BATCH_SIZE
    assert max(layers["max_abs_diff"], layers["grad_max_abs_diff"], layers["eval_max_abs_diff"]) < 1e-5
    for name in ("training_step", "forward"):
        assert layers[name]["reference_seconds"] > 0 and layers[name]["other_seconds"] > 0
    assert layers["profile"]["reference"]["ops"] > 0 and layers["profile"]["native"]["ops"] > 0
    ratio_goals = [g for g in quick_vit_report[0]["goals"] if "ref / native" in g["name"] and g["goal"]]
    assert [g["name"].split(" ref")[0] for g in ratio_goals] == ["AdamW training step"]  # the one time held to a goal


@pytest.fixture(scope="module")
def vit_reference():
    return reference_of("vit")


def test_the_native_vit_differs_when_a_weight_is_not_copied(vit_reference):
    """The equality checks can fail: the native model with one norm of its last block left fresh computes otherwise,
    in training mode and on torch's eval fast path alike."""
    model, native, images, _ = bench_vit.model_pair(vit_reference, "cpu", batch_size=8)
    assert bench_timing.output_difference(model, native, images)["match"] is True
    assert bench_vit.eval_difference(model, native, images) < 1e-5
    with torch.no_grad():
        model.blocks[-1].norm2.weight.mul_(1.5)  # the reference's norm moves away from the native copy's
    assert bench_timing.output_difference(model, native, images)["match"] is False
    assert bench_vit.eval_difference(model, native, images) > 1e-3


def test_the_native_vit_is_pre_norm_like_the_reference(vit_reference):
    """Built post-norm from the same weights, the native model computes another function: norm_first matters."""
    model, _, images, _ = bench_vit.model_pair(vit_reference, "cpu", batch_size=8)
    post_norm = bench_vit.NativeVisionTransformer(model)
    post_norm.blocks = nn.ModuleList([bench_native.encoder_layer(block, 4, 128, "gelu", norm_first=False)
                                      for block in model.blocks])
    assert bench_timing.output_difference(model, post_norm, images)["match"] is False
