"""The gpt assignment's bench (course/gpt/bench.py): a quick run end to end, its SDPA route and its per-step timing."""
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from checkers.gpt import trained as gpt_trained
from course.gpt import bench as bench_gpt
from course.reference import reference_of
from course_lib import gpt as gpt_defaults
from tools.bench import scaling as bench_scaling, timing as bench_timing

from bench_reports import assert_whole_report, run_quick_bench
from tools.bench import runner

NAME = "gpt"
# the report's sections; the bench module's own are those between meta and goals
SECTIONS = ('meta', 'training', 'attention', 'generation', 'goals')


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    """The gpt assignment's quick bench: (report, out, stdout)."""
    return run_quick_bench(NAME, tmp_path_factory.mktemp("bench_gpt"))


@pytest.mark.fast
def test_the_bench_module_defines_the_sections_of_the_report():
    assert list(runner.load_bench(NAME).SECTIONS) == list(SECTIONS[1:-1])


@pytest.mark.full
def test_quick_bench_writes_every_section(quick_report):
    assert_whole_report(NAME, quick_report, SECTIONS)


@pytest.mark.full
def test_quick_bench_writes_the_generation_plot(quick_report):
    report, out, _ = quick_report
    assert [Path(path).name for path in report["meta"]["plots"]] == ["generation_step_time.png"]
    assert (out / "generation_step_time.png").stat().st_size > 0


@pytest.mark.full
def test_quick_gpt_bench_checks_attention_against_sdpa_before_timing(quick_report):
    attention = quick_report[0]["attention"]
    assert attention["match"] is True and attention["max_abs_diff"] < 1e-5 and attention["grad_max_abs_diff"] < 1e-5
    assert attention["size"]["seq_len"] == 11 and attention["size"]["batch_size"] == gpt_defaults.BATCH_SIZE
    for name in ("forward_backward", "forward"):
        assert attention[name]["reference_seconds"] > 0 and attention[name]["other_seconds"] > 0
    # the two routes share projections and RoPE; the reference spells out what SDPA fuses into one op
    assert attention["forward_ops"]["reference"] > attention["forward_ops"]["sdpa"] > 0
    ratio_goals = [g for g in quick_report[0]["goals"] if "ref / SDPA" in g["name"] and g["goal"]]
    assert [g["name"].split(" (")[0] for g in ratio_goals] == ["training step"]  # the one time held to the goal


@pytest.mark.full
def test_quick_gpt_bench_trains_as_the_notebook_and_generates(quick_report):
    report = quick_report[0]
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


@pytest.mark.fast
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


@pytest.mark.fast
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


@pytest.mark.fast
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


@pytest.mark.fast
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


@pytest.mark.fast
def test_a_preempted_step_bends_the_every_step_fit_but_not_the_binned_one():
    lengths = list(range(9, 265))
    seconds = [1e-3 * length ** 0.2 for length in lengths]
    for index in range(200, 256, 5):  # a busy machine: every fifth late step lasts 8 times longer
        seconds[index] *= 8
    bin_lengths, bin_seconds = bench_gpt.length_bins(lengths, seconds, bins=16)
    assert bench_scaling.loglog_slope(bin_lengths, bin_seconds) == pytest.approx(0.2, abs=0.02)
    assert bench_scaling.loglog_slope(lengths, seconds) > 0.3  # bent by more than 0.1


@pytest.mark.fast
def test_length_bins_take_medians_of_consecutive_steps():
    """Edges 1, 3, 9 (geometric from the first length to one past the last): lengths 1-2, then 3-8."""
    lengths, seconds = [1, 2, 3, 4, 5, 6, 7, 8], [1.0, 9.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert bench_gpt.length_bins(lengths, seconds, bins=2) == ([1.5, 5.5], [5.0, 4.5])

