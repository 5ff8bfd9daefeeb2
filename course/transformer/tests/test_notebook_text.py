"""What the transformer notebooks say and show: readable output and supported claims (the rules every notebook
follows, such as math that renders everywhere and no staff notes, are in tests/test_notebook_rules.py)."""
import contextlib
import io
import re

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
import torch.nn as nn

from course_lib import plot_attention_maps, plot_lr_schedule
from course_lib import transformer as defaults
from course_lib.attention_stats import explained_variance, head_statistics
from course.registry import assignment

from notebook_text import (MEASURED, code_cell, section)

pytestmark = pytest.mark.fast

TRANSFORMER = assignment("transformer")
SOURCE, RELEASE = TRANSFORMER.source_notebook, TRANSFORMER.release_notebook

BOTH = pytest.mark.parametrize("path", [SOURCE, RELEASE], ids=["solutions", "notebooks"])


def run_cell(source, namespace):
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(source, "<notebook cell>", "exec"), namespace)
    return output.getvalue()


@pytest.mark.parametrize("needle", ["model_config = ", "linformer_config = "])
def test_model_configs_print_readably(needle):
    """The provided config cells, run as they are, print `activation=ReLU`, not `<class '...ReLU'>`."""
    namespace = {"defaults": defaults, "SEQ_LEN": defaults.SEQ_LEN, "device": torch.device("cpu"),
                 "seed_everything": lambda seed: None,
                 "TransformerForSequenceClassification": lambda **_: nn.Identity(),
                 "LinformerForSequenceClassification": lambda **_: nn.Identity()}
    printed = run_cell(code_cell(SOURCE, needle), namespace)
    assert "<class" not in printed and "activation=ReLU" in printed and "lr=0.001" in printed, printed


def test_task_5_says_to_pass_activation_and_dropout_to_the_blocks():
    (bullet,) = [line for line in section(SOURCE, "## 5.").splitlines() if line.startswith("- `encoder`")]
    assert "activation" in bullet and "dropout" in bullet, bullet


def test_task_4_bullets_and_stub_agree_on_who_registers_the_buffer():
    stub = code_cell(RELEASE, "class PositionalEncoding")
    registering = [line.strip() for line in stub.splitlines() if "register_buffer" in line]
    text = section(RELEASE, "## 4.")
    if registering:  # the stub registers the table itself: the text must quote that line and call it provided
        (line,) = registering
        call = line.split("#")[0].strip()
        (bullet,) = [b for b in text.splitlines() if "register_buffer" in b]
        assert call in bullet and "provided" in bullet, bullet
    else:
        assert "register_buffer" in text


def test_lr_schedule_plot_shows_the_warmup():
    """Over the notebook's 37,500 steps a 100-step warm-up is a spike: one panel must give it a tenth of its width."""
    training = defaults.TRAINING
    max_steps = training["num_epochs"] * (defaults.TRAIN_SIZE // defaults.BATCH_SIZE)
    figure = plot_lr_schedule(training["lr"], training["warmup_steps"], max_steps)
    spans = [ax.get_xlim() for ax in figure.axes]
    assert any(low <= 0 and training["warmup_steps"] / (high - low) >= 0.1 for low, high in spans), spans
    assert any(high >= max_steps for _, high in spans), "the whole schedule is shown too"


def test_attention_maps_colour_scale_follows_the_weights():
    """Weights near 1/8 must not all be one dark colour: the scale ends at the largest weight shown."""
    weights = torch.softmax(0.2 * torch.randn(4, 8, 8, generator=torch.Generator().manual_seed(0)), dim=-1)
    figure = plot_attention_maps(weights)
    limits = [image.get_clim() for ax in figure.axes for image in ax.images]
    assert len(limits) == 4 and all(limit == (0, pytest.approx(weights.max().item())) for limit in limits), limits
    colorbars = [ax for ax in figure.axes if ax.get_label() == "<colorbar>"]
    assert colorbars and colorbars[0].get_ylabel()


@pytest.mark.parametrize("shape", [(4, 8, 8), (2, 33, 33)], ids=["task 2 example", "trained classifier"])
def test_attention_map_labels_stay_off_neighbouring_panels(shape):
    figure = plot_attention_maps(torch.softmax(torch.randn(shape), dim=-1))
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    panels = [ax for ax in figure.axes if ax.images]
    for ax in panels:
        label = ax.yaxis.label
        if not label.get_text():
            continue
        boxes = [label.get_window_extent(renderer)] + [tick.get_window_extent(renderer)
                                                       for tick in ax.get_yticklabels() if tick.get_text()]
        for other in panels:
            if other is not ax:
                assert not any(box.overlaps(other.get_window_extent(renderer)) for box in boxes), \
                    "a y label or tick label runs into a neighbouring panel"


def test_near_uniform_attention_is_low_rank_without_any_learning():
    """Why the notebook compares with the untrained model: near-uniform maps already put ~99% in sigma_1.

    Scores of standard deviation 0.1 give rows whose largest weight is about 1.2 / L, as in the untrained classifier.
    """
    maps = torch.softmax(0.1 * torch.randn(50, 32, 32, generator=torch.Generator().manual_seed(0)), dim=-1)
    assert explained_variance(maps)[:, 0].min() > 0.98
    mirror = torch.eye(32).flip(0)  # each query looks up its mirror key
    (stats,) = head_statistics(mirror[None])
    assert stats["sigma1_share"] == pytest.approx(1 / 32) and stats["mirror_share"] == 1.0
    (uniform,) = head_statistics(torch.full((1, 32, 32), 1 / 32))
    assert uniform["sigma1_share"] == pytest.approx(1.0) and uniform["largest_weight"] == pytest.approx(1 / 32)


def test_explained_variance_is_compared_with_the_untrained_model():
    source = code_cell(SOURCE, "plot_explained_variance(")
    assert "untrained=" in source and "head_statistics(" in source
    rebuilt = code_cell(SOURCE, "untrained = ")
    assert re.search(r"seed_everything\(0\)\s*\nuntrained = TransformerForSequenceClassification\(\*\*model_config\)",
                     rebuilt), "the untrained model must start from the trained model's initial weights"
    text = section(SOURCE, "## What does the trained attention look like?")
    assert "untrained" in text


def numbers(text):
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]


@pytest.mark.parametrize("heading", ["## 6.", "## 8."])
def test_each_training_task_states_its_measured_time_in_one_marked_sentence(heading):
    text = section(SOURCE, heading)
    assert text.count(MEASURED) == 1
    sentence = text.split(MEASURED)[1].split("\n")[0]
    assert re.search(r"[\d,]+ steps", sentence) and re.search(r"\d+ s\b", sentence) and "load average" in sentence
    # the steps measured lie within the range of steps the task's text states
    low, high = numbers(re.search(r"\d[\d,]*–\d[\d,]* (?:optimizer )?steps", text.split(MEASURED)[0]).group(0))
    measured = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) steps", sentence)]
    assert measured and all(low <= steps <= high for steps in measured), (low, high, measured)




def test_training_curves_draw_the_accuracy_training_stops_at_and_the_check_s():
    """Tasks 6 and 8 stop at STOP_AT_ACCURACY (98%) and the check needs 95%: the live curves' lines say both."""
    from checkers.transformer.trained import TARGET_ACCURACY
    from course_lib import plot_history
    from course_lib.training import History

    for needle in ("\nhistory = train(", "\nlinformer_history = train("):
        cell = code_cell(SOURCE, needle)
        assert "LiveCurves(**defaults.CURVES)" in cell and "stop_at_accuracy(defaults.STOP_AT_ACCURACY)" in cell
    assert defaults.CURVES["target_accuracy"] == defaults.STOP_AT_ACCURACY
    assert defaults.CURVES["check_accuracy"] == TARGET_ACCURACY
    history = History(step=[0, 50], seconds=[0.0, 1.0], train_loss=[float("nan"), 0.6], val_loss=[0.7, 0.6],
                      val_accuracy=[0.5, 0.6], lr=[1e-5, 1e-3])
    labels = [line.get_label() for line in plot_history(history, **defaults.CURVES).axes[1].get_lines()]
    assert "training stops at 98%" in labels and "the check needs 95%" in labels
