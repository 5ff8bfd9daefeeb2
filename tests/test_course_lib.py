"""Unit tests of course_lib: schedule, metrics, training loop and plots (an assignment's data and defaults are tested
by its own tests, course/<name>/tests/)."""
import math

import matplotlib
import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

matplotlib.use("Agg")

from course_lib import (WarmupCosineSchedule, accuracy, classification_loss, get_device,
                        plot_attention_maps, plot_explained_variance, plot_history, plot_lr_schedule,
                        plot_positional_encoding, plot_scaling, seed_everything, stop_at_accuracy, train,
                        warmup_cosine_factor)
from course_lib.plotting import explained_variance
from course_lib.training import History

pytestmark = pytest.mark.fast


def test_schedule_warms_up_then_decays_to_zero():
    warmup, total = 10, 110
    factors = [warmup_cosine_factor(step, warmup, total) for step in range(total + 1)]
    assert factors[0] == pytest.approx(1 / warmup) and factors[0] > 0
    assert factors[warmup - 1] == pytest.approx(1.0)
    assert factors[warmup + 50] == pytest.approx(0.5)  # halfway through the cosine: cos(pi/2) = 0
    assert factors[total] == pytest.approx(0.0)
    assert all(a < b for a, b in zip(factors[:warmup], factors[1:warmup]))
    assert warmup_cosine_factor(0, 0, 100) == 1.0


def test_schedule_object_drives_an_optimizer():
    parameter = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=0.1)
    schedule = WarmupCosineSchedule(optimizer, warmup_steps=4, max_steps=8)
    rates = []
    for _ in range(8):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert rates[0] == pytest.approx(0.025) and rates[3] == pytest.approx(0.1)
    with pytest.raises(ValueError):
        WarmupCosineSchedule(optimizer, warmup_steps=9, max_steps=8)


def test_metrics_binary_and_multiclass():
    binary_logits, labels = torch.tensor([[2.0], [-1.0], [0.5]]), torch.tensor([1.0, 0.0, 0.0])
    assert accuracy(binary_logits, labels) == pytest.approx(2 / 3)
    expected = -(math.log(torch.sigmoid(torch.tensor(2.0))) + math.log(1 - torch.sigmoid(torch.tensor(-1.0)))
                 + math.log(1 - torch.sigmoid(torch.tensor(0.5)))) / 3
    assert classification_loss(binary_logits, labels).item() == pytest.approx(expected, rel=1e-6)
    multi = torch.tensor([[0.0, 3.0], [5.0, 0.0]])
    assert accuracy(multi, torch.tensor([1, 1])) == 0.5


def toy_loaders():
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(512, 4, generator=generator)
    labels = (inputs[:, 0] > 0).float()  # linearly separable
    data = TensorDataset(inputs, labels)
    return DataLoader(data, batch_size=32, shuffle=True), DataLoader(data, batch_size=256)


def test_train_learns_a_separable_problem_and_records_history():
    seed_everything(0)
    train_loader, val_loader = toy_loaders()
    history = train(nn.Linear(4, 1), train_loader, val_loader, num_epochs=10, lr=0.1, warmup_steps=5, eval_every=10)
    assert history.step[0] == 0 and history.step[-1] == 10 * len(train_loader)
    assert history.val_accuracy[-1] > 0.95 and history.val_loss[-1] < history.val_loss[0]
    assert len({len(history.step), len(history.lr), len(history.val_loss), len(history.seconds)}) == 1
    assert history.lr[-1] == pytest.approx(0.0, abs=1e-12)


def test_train_stops_early_by_callback_and_by_time():
    train_loader, val_loader = toy_loaders()
    history = train(nn.Linear(4, 1), train_loader, val_loader, num_epochs=50, lr=0.05, eval_every=5,
                    callbacks=[stop_at_accuracy(0.9)])
    assert history.val_accuracy[-1] >= 0.9 and history.step[-1] < 50 * len(train_loader)
    history = train(nn.Linear(4, 1), train_loader, val_loader, num_epochs=50, lr=0.05, max_seconds=0.0)
    assert history.step == [0, 1]


def test_train_surfaces_an_unfinished_model_as_not_implemented():
    class Unfinished(nn.Module):
        def forward(self, x):
            raise NotImplementedError()

    train_loader, val_loader = toy_loaders()
    with pytest.raises(NotImplementedError):
        train(Unfinished(), train_loader, val_loader, num_epochs=1, lr=0.1, device=torch.device("cpu"))


def test_explained_variance_of_a_rank_one_matrix():
    matrix = torch.outer(torch.arange(1.0, 6.0), torch.ones(5))
    curve = explained_variance(matrix)
    assert curve[0] == pytest.approx(1.0) and curve[-1] == pytest.approx(1.0)


def test_plots_return_labelled_figures():
    train_loader, val_loader = toy_loaders()
    history = train(nn.Linear(4, 1), train_loader, val_loader, num_epochs=1, lr=0.05)
    figures = [
        plot_positional_encoding(torch.randn(1, 20, 8)),
        plot_lr_schedule(1e-3, 10, 100),
        plot_history(history),
        plot_explained_variance(torch.softmax(torch.randn(3, 6, 6), -1)),
        plot_explained_variance(torch.softmax(torch.randn(4, 3, 6, 6), -1), untrained=torch.full((4, 3, 6, 6), 1 / 6)),
        plot_attention_maps(torch.softmax(torch.randn(2, 4, 4), -1)),
        plot_scaling([64, 128], {"a": [1.0, 4.0]}, "peak memory (MiB)", "t", ideal_slopes={"a": 2}),
    ]
    for figure in figures:
        axes = [ax for ax in figure.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
        assert axes and all(ax.get_xlabel() for ax in axes)
        # panels that share their y axis label it once, on the leftmost panel
        assert all(ax.get_ylabel() or (ax.get_shared_y_axes().joined(ax, axes[0]) and axes[0].get_ylabel())
                   for ax in axes)
        assert any(ax.get_title() for ax in axes) or figure._suptitle is not None


def test_history_plot_without_an_accuracy_target_draws_no_target_line():
    """target_accuracy=None (a task judged by another measure, e.g. bits per byte): the accuracy panel has only the
    curve; a number draws the dashed target line and its legend."""
    train_loader, val_loader = toy_loaders()
    history = train(nn.Linear(4, 1), train_loader, val_loader, num_epochs=1, lr=0.05)
    for target, lines in ((None, 1), (0.9, 2)):
        accuracy_panel = plot_history(history, target_accuracy=target).axes[1]
        assert len(accuracy_panel.get_lines()) == lines
        assert (accuracy_panel.get_legend() is not None) == (target is not None)


def test_history_plot_draws_the_learning_rate_of_every_step():
    """Evaluations every 10 steps would show a 5-step warm-up's peak 10 steps late: the panel draws every step's rate,
    which train() records, through the points recorded at the evaluations."""
    train_loader, val_loader = toy_loaders()
    history = train(nn.Linear(4, 1), train_loader, val_loader, num_epochs=1, lr=0.05, warmup_steps=5, eval_every=10)
    assert len(history.step_lr) == history.step[-1]
    (line,) = plot_history(history).axes[2].get_lines()
    steps, rates = (list(values) for values in line.get_data())
    assert steps == list(range(history.step[-1] + 1))
    assert max(rates) == pytest.approx(0.05) and steps[rates.index(max(rates))] in (4, 5)  # the warm-up's end
    assert [rates[step] for step in history.step] == pytest.approx(history.lr)


def test_accuracy_panel_fits_a_curve_far_below_1_when_no_target_is_drawn():
    """A language model's next-token accuracy stays near 0.3: without a target line the panel ends a little above the
    curve, not at 1; with one it still reaches 1 (the line and the curve both in view)."""
    history = History(step=[0, 100, 200], seconds=[0.0, 1.0, 2.0], train_loss=[float("nan"), 5.0, 4.0],
                      val_loss=[6.9, 5.0, 4.2], val_accuracy=[0.001, 0.25, 0.31], lr=[1e-3, 1e-3, 0.0])
    low, high = plot_history(history, target_accuracy=None).axes[1].get_ylim()
    assert low <= 0.001 and 0.31 < high < 0.4
    assert plot_history(history, target_accuracy=0.95).axes[1].get_ylim()[1] > 1


def test_scaling_plot_ticks_the_lengths_measured():
    figure = plot_scaling([256, 512, 1024, 2048], {"a": [1.0, 2.0, 4.0, 8.0]}, "peak memory (MiB)", "t")
    ax = figure.axes[0]
    assert list(ax.get_xticks()) == [256, 512, 1024, 2048] and ax.get_xticks(minor=True).size == 0
    assert [label.get_text() for label in ax.get_xticklabels()] == ["256", "512", "1,024", "2,048"]


def test_device_is_cuda_only_when_available():
    assert get_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_train_calls_finish_once_at_the_end():
    class Recorder:
        def __init__(self):
            self.calls, self.finished = 0, []

        def __call__(self, history):
            self.calls += 1

        def finish(self, history):
            self.finished.append(history.step[-1])

    train_loader, val_loader = toy_loaders()
    recorder = Recorder()
    history = train(nn.Linear(4, 1), train_loader, val_loader, num_epochs=1, lr=0.05, eval_every=4,
                    callbacks=[recorder])
    assert recorder.calls == len(history.step) and recorder.finished == [history.step[-1]]
