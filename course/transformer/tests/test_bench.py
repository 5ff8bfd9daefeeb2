"""The transformer assignment's bench (course/transformer/bench.py): a quick run end to end."""
import math

import pytest

from course.registry import assignment
from bench_reports import assert_whole_report, run_quick_bench
from tools.bench import runner

NAME = "transformer"
# the report's sections; the bench module's own are those between meta and goals
SECTIONS = ('meta', 'layers', 'training_step', 'training', 'scaling', 'goals')


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    """The transformer assignment's quick bench: (report, out, stdout)."""
    return run_quick_bench(NAME, tmp_path_factory.mktemp("bench_transformer"))


@pytest.mark.fast
def test_the_bench_module_defines_the_sections_of_the_report():
    assert list(runner.load_bench(NAME).SECTIONS) == list(SECTIONS[1:-1])


@pytest.mark.full
def test_quick_bench_writes_every_section(quick_report):
    assert_whole_report(NAME, quick_report, SECTIONS)


@pytest.mark.full
def test_quick_bench_writes_the_scaling_plots(quick_report):
    assert len(list(quick_report[1].glob("scaling_*.png"))) == 4


@pytest.mark.full
def test_quick_bench_checks_outputs_before_timing(quick_report):
    report = quick_report[0]
    rows = [row for size in report["layers"].values() for row in size["comparisons"]] + [report["training_step"]]
    assert len(rows) == 9
    for row in rows:
        assert row["match"] is True and row["max_abs_diff"] < 1e-4
        assert row["reference_seconds"] > 0 and row["other_seconds"] > 0 and row["ratio"] > 0


@pytest.mark.full
def test_quick_bench_trains_and_measures_scaling(quick_report):
    report = quick_report[0]
    for task in [f"task {number}" for number in assignment(NAME).training_tasks]:
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

