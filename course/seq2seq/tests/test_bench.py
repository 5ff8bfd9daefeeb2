"""The seq2seq assignment's bench (course/seq2seq/bench.py): a quick run end to end, its timer, its native layer."""
from pathlib import Path

import pytest
import torch

from course.reference import reference_of
from course.seq2seq import bench as bench_seq2seq
from course_lib import seq2seq as seq2seq_defaults
from tools.bench import timing as bench_timing

from bench_reports import assert_whole_report, run_quick_bench
from tools.bench import runner

NAME = "seq2seq"
# the report's sections; the bench module's own are those between meta and goals
SECTIONS = ('meta', 'layers', 'training', 'decoding', 'goals')


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    """The seq2seq assignment's quick bench: (report, out, stdout)."""
    return run_quick_bench(NAME, tmp_path_factory.mktemp("bench_seq2seq"))


@pytest.mark.fast
def test_the_bench_module_defines_the_sections_of_the_report():
    assert list(runner.load_bench(NAME).SECTIONS) == list(SECTIONS[1:-1])


@pytest.mark.full
def test_quick_bench_writes_every_section(quick_report):
    assert_whole_report(NAME, quick_report, SECTIONS)


@pytest.mark.full
def test_quick_bench_writes_the_decoding_plot(quick_report):
    report, out, _ = quick_report
    assert [Path(path).name for path in report["meta"]["plots"]] == ["decoding_time.png"]
    assert (out / "decoding_time.png").stat().st_size > 0


@pytest.mark.full
def test_quick_seq2seq_bench_checks_every_layer_against_torch_before_timing(quick_report):
    rows = quick_report[0]["layers"]["comparisons"]
    assert [(row["layer"].split(",")[0], row["native"]) for row in rows] == [
        ("LayerNorm", "nn.LayerNorm"), ("MultiheadAttention", "nn.MultiheadAttention"),
        ("MultiheadAttention", "nn.MultiheadAttention"), ("DecoderBlock", "nn.TransformerDecoderLayer")]
    for row in rows:
        assert row["match"] is True and row["max_abs_diff"] < 1e-4 and row["grad_max_abs_diff"] < 1e-4
        assert row["reference_seconds"] > 0 and row["other_seconds"] > 0 and row["ratio"] > 0
    ratio_goals = [g for g in quick_report[0]["goals"] if "fwd+bwd" in g["name"] and g["goal"]]
    assert [g["name"].split(" vs ")[0] for g in ratio_goals] == ["DecoderBlock"]  # the one time held to a goal


@pytest.mark.full
def test_quick_seq2seq_bench_trains_as_the_notebook_and_decodes(quick_report):
    report = quick_report[0]
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


@pytest.mark.fast
def test_the_decoding_timer_generates_every_token(seq2seq_reference):
    """eos_id -1 (no token) keeps every sequence running, so a call generates exactly the tokens asked for."""
    torch.manual_seed(0)
    model = seq2seq_reference["Seq2SeqTransformer"](**dict(seq2seq_defaults.MODEL, embed_dim=8, num_heads=2))
    sources = torch.tensor([[3, 4, 5], [6, 0, 0]])
    assert seq2seq_reference["greedy_decode"](model, sources, 7, 1, -1).shape == (2, 7)



@pytest.mark.fast
def test_the_native_decoder_layer_differs_when_a_weight_is_not_copied(seq2seq_reference):
    """The equality check can fail: the native layer with one norm left at its fresh weights computes otherwise."""
    size = dict(bench_seq2seq.COURSE, batch_size=4)
    pairs = bench_seq2seq.layer_pairs(seq2seq_reference, size, "cpu")
    ours, theirs, x = pairs[-1][2], pairs[-1][3], pairs[-1][4]
    assert bench_timing.output_difference(ours, theirs, x)["match"] is True
    theirs.layer.norm3.reset_parameters()
    assert bench_timing.output_difference(ours, theirs, x)["match"] is False

