"""train()'s progress bar ends complete (green in a notebook) when training stops early, and red only on an error;
LiveCurves keeps its redrawing to a share of the training time."""
import io
import re
import tomllib
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import tqdm.notebook
import tqdm.std
from torch.utils.data import DataLoader, TensorDataset

import course_lib.training
from course_lib import LiveCurves, stop_at_accuracy, train

pytestmark = pytest.mark.full

ROOT = Path(__file__).resolve().parent.parent
NUM_EPOCHS = 50  # far more than the separable toy problem needs: training stops at the accuracy target


def loaders():
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(512, 4, generator=generator)
    labels = (inputs[:, 0] > 0).float()  # linearly separable
    data = TensorDataset(inputs, labels)
    return DataLoader(data, batch_size=32, shuffle=True, generator=generator), DataLoader(data, batch_size=256)


@pytest.fixture
def bars(monkeypatch):
    """Makes train() use the notebook's widget bar (as tqdm.auto does in Jupyter and Colab); returns the bars made."""
    made = []

    class NotebookBar(tqdm.notebook.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, display=False, **kwargs)  # the widget without an IPython kernel to show it in
            made.append(self)

    monkeypatch.setattr(course_lib.training, "tqdm", NotebookBar)
    return made


def progress_widget(bar):
    (widget,) = [child for child in bar.container.children if isinstance(child, tqdm.notebook.IProgress)]
    return widget


def early_stop(callbacks=()):
    torch.manual_seed(0)
    train_loader, val_loader = loaders()
    return train(nn.Linear(4, 1), train_loader, val_loader, num_epochs=NUM_EPOCHS, lr=0.05, eval_every=5,
                 callbacks=[stop_at_accuracy(0.9), *callbacks])


def test_notebook_bar_ends_green_at_an_early_stop(bars):
    history = early_stop()
    (bar,) = bars
    assert history.step[-1] < NUM_EPOCHS * 16  # stopped early
    assert bar.n == bar.total == history.step[-1]
    widget = progress_widget(bar)
    assert widget.bar_style == "success" and widget.value == widget.max == history.step[-1]


def test_notebook_bar_turns_red_when_training_fails(bars):
    def fail_at_second_evaluation(history):
        if len(history.step) == 3:
            raise RuntimeError("student's model broke")

    with pytest.raises(RuntimeError):
        early_stop([fail_at_second_evaluation])
    (bar,) = bars
    assert bar.n == 10 and bar.total == NUM_EPOCHS * 16 and progress_widget(bar).bar_style == "danger"


KERNEL_CELL = """
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from course_lib import train, stop_at_accuracy
generator = torch.Generator().manual_seed(0)
inputs = torch.randn(512, 4, generator=generator)
data = TensorDataset(inputs, (inputs[:, 0] > 0).float())
torch.manual_seed(0)
history = train(nn.Linear(4, 1), DataLoader(data, batch_size=32, shuffle=True, generator=generator),
                DataLoader(data, batch_size=256), num_epochs=50, lr=0.05, eval_every=5,
                callbacks=[stop_at_accuracy(0.9)])
print("steps run:", history.step[-1])
"""


def test_bar_in_a_jupyter_kernel_ends_green_at_an_early_stop():
    """End to end, as JupyterLab shows it: tqdm.auto picks the widget, whose saved state is 'success' and full."""
    import nbformat
    from nbclient import NotebookClient
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(KERNEL_CELL)])
    NotebookClient(notebook, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    outputs = notebook.cells[0].outputs
    assert not any("IProgress not found" in output.get("text", "") for output in outputs)
    steps = int(re.search(r"steps run: (\d+)", outputs[-1]["text"]).group(1))
    state = notebook.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"].values()
    (bar,) = [model["state"] for model in state if model["model_name"] == "FloatProgressModel"]
    assert steps < NUM_EPOCHS * 16 and bar["bar_style"] == "success" and bar["value"] == bar["max"] == steps


def test_text_bar_ends_at_the_steps_run(monkeypatch):
    """Without widgets, the last line says n/n steps, not n/total with an hour to go."""
    output = io.StringIO()
    monkeypatch.setattr(course_lib.training, "tqdm", lambda **kwargs: tqdm.std.tqdm(file=output, **kwargs))
    steps = early_stop().step[-1]
    last = output.getvalue().split("\r")[-1]
    assert re.search(rf"\b{steps}/{steps} \[", last), last


def test_notebook_widgets_are_a_dependency():
    """tqdm.auto draws widgets in notebooks; without ipywidgets it prints "IProgress not found" and text chunks."""
    assert tqdm.notebook.IProgress is not None  # ipywidgets is installed in the pinned environment
    requirements = (ROOT / "requirements.txt").read_text()
    assert re.search(r"^ipywidgets==\d", requirements, flags=re.M)  # environment.yml mirrors it (test_packaging)
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(re.match(r"ipywidgets\b(?!.*==)", dependency) for dependency in dependencies)


def test_training_runs_on_one_cpu_thread_and_restores_the_setting():
    """One thread while training (measured faster on a shared 2-core machine: see course_lib/training.py)."""
    seen = []

    def fail_late(history):
        if len(history.step) > 2:
            raise RuntimeError("student's callback broke")

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        early_stop([lambda history: seen.append(torch.get_num_threads())])
        after_run = torch.get_num_threads()
        with pytest.raises(RuntimeError):
            early_stop([fail_late])
        after_error = torch.get_num_threads()
    finally:
        torch.set_num_threads(previous)
    assert set(seen) == {1} and after_run == 2 and after_error == 2


def test_live_curves_spend_at_most_their_share_of_the_time_drawing():
    curves = LiveCurves(min_seconds=2.0, max_share=0.1)
    assert curves.pause_after(0.05) == 2.0  # a cheap draw: every min_seconds
    assert curves.pause_after(0.56) == pytest.approx(5.04)  # 0.56 s of 5.6 s
    assert 0.56 / (0.56 + curves.pause_after(0.56)) == pytest.approx(0.1)
