"""The vit assignment's bench (course/vit/bench.py): a quick run end to end and its torch-native model."""
import math
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from course.reference import reference_of
from course.vit import bench as bench_vit
from course_lib import vit as vit_defaults
from tools.bench import native as bench_native, timing as bench_timing

from bench_reports import assert_whole_report, run_quick_bench
from tools.bench import runner

NAME = "vit"
# the report's sections; the bench module's own are those between meta and goals
SECTIONS = ('meta', 'training', 'layers', 'goals')


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    """The vit assignment's quick bench: (report, out, stdout)."""
    return run_quick_bench(NAME, tmp_path_factory.mktemp("bench_vit"))


@pytest.mark.fast
def test_the_bench_module_defines_the_sections_of_the_report():
    assert list(runner.load_bench(NAME).SECTIONS) == list(SECTIONS[1:-1])


@pytest.mark.full
def test_quick_bench_writes_every_section(quick_report):
    assert_whole_report(NAME, quick_report, SECTIONS)


@pytest.mark.full
def test_quick_bench_writes_the_accuracy_plot(quick_report):
    report, out, _ = quick_report
    assert [Path(path).name for path in report["meta"]["plots"]] == ["test_accuracy.png"]
    assert (out / "test_accuracy.png").stat().st_size > 0


@pytest.mark.full
def test_quick_vit_bench_trains_as_the_notebook_and_scores_the_test_split(quick_report):
    training = quick_report[0]["training"]
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


@pytest.mark.full
def test_quick_vit_bench_checks_the_native_model_before_timing(quick_report):
    layers = quick_report[0]["layers"]
    assert layers["match"] is True and layers["batch_size"] == vit_defaults.BATCH_SIZE
    assert max(layers["max_abs_diff"], layers["grad_max_abs_diff"], layers["eval_max_abs_diff"]) < 1e-5
    for name in ("training_step", "forward"):
        assert layers[name]["reference_seconds"] > 0 and layers[name]["other_seconds"] > 0
    assert layers["profile"]["reference"]["ops"] > 0 and layers["profile"]["native"]["ops"] > 0
    ratio_goals = [g for g in quick_report[0]["goals"] if "ref / native" in g["name"] and g["goal"]]
    assert [g["name"].split(" ref")[0] for g in ratio_goals] == ["AdamW training step"]  # the one time held to a goal


@pytest.fixture(scope="module")
def vit_reference():
    return reference_of("vit")


@pytest.mark.fast
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


@pytest.mark.fast
def test_the_native_vit_is_pre_norm_like_the_reference(vit_reference):
    """Built post-norm from the same weights, the native model computes another function: norm_first matters."""
    model, _, images, _ = bench_vit.model_pair(vit_reference, "cpu", batch_size=8)
    post_norm = bench_vit.NativeVisionTransformer(model)
    post_norm.blocks = nn.ModuleList([bench_native.encoder_layer(block, 4, 128, "gelu", norm_first=False)
                                      for block in model.blocks])
    assert bench_timing.output_difference(model, post_norm, images)["match"] is False
