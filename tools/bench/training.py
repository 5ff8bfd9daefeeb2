"""Time to a target accuracy for the bench: seeded runs of train() until held-out data is classified well."""
import contextlib
import io
import statistics
import time

import torch

from course_lib.device import seed_everything
from course_lib.metrics import predictions
from course_lib.training import train


@torch.no_grad()
def held_out_accuracy(model, inputs, labels, batch_size=500):
    """Accuracy of model on a fixed set of examples, in eval mode (the mode is restored).

    Args:
        model: classifier mapping inputs (N, ...) to logits (N, num_classes).
        inputs: (N, ...) examples, on any device (moved in batches to the model's).
        labels: (N,) labels.
        batch_size: examples per forward pass.

    Returns:
        Fraction correct, a Python float.
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    predicted = torch.cat([predictions(model(batch.to(device))).cpu() for batch in inputs.split(batch_size)])
    model.train(was_training)
    right = predicted == labels.long().cpu()  # (N, ...)
    return int(right.sum()) / right.numel()  # counted in integers: 342 of 360 is exactly 0.95


class AccuracyStop:
    """train() callback: accuracy on fixed held-out data at every evaluation; stops at the target.

    Args:
        model: the model being trained.
        inputs, labels: the held-out data, e.g. the checker's (N, L, vocab) one-hot inputs and (N,) labels.
        target: accuracy at which training stops.
    """

    def __init__(self, model, inputs, labels, target):
        self.model, self.inputs, self.labels, self.target = model, inputs, labels, target
        self.accuracies = []

    def __call__(self, history):
        self.accuracies.append(held_out_accuracy(self.model, self.inputs, self.labels))
        return self.accuracies[-1] >= self.target


def train_to_accuracy(make_model, loaders, held_out, seed, target, device, training, max_seconds=None):
    """Train one freshly built model until its accuracy on held-out data reaches target.

    Args:
        make_model: callable returning a new nn.Module; called right after seed_everything(seed).
        loaders: (train_loader, val_loader) as train() takes them.
        held_out: (inputs, labels) the stopping accuracy is measured on.
        seed: seeds the model's initialization and the loader's shuffling.
        target: accuracy to reach, e.g. 0.95.
        device: where to train.
        training: keyword arguments of course_lib.train (num_epochs, lr, warmup_steps, ...).
        max_seconds: give up after this much training time.

    Returns:
        dict with seed, seconds (training time, evaluations excluded), steps, accuracy (the last one
        measured), reached (bool) and wall_seconds (the whole call, evaluations and data loading included).
    """
    seed_everything(seed)
    model = make_model().to(device)
    stop = AccuracyStop(model, *held_out, target)
    history, wall_seconds = quiet_train(model, *loaders, device=device, eval_every=50, max_seconds=max_seconds,
                                        callbacks=[stop], **training)
    return dict(seed=seed, seconds=history.seconds[-1], steps=history.step[-1], accuracy=stop.accuracies[-1],
                reached=stop.accuracies[-1] >= target, wall_seconds=wall_seconds)


def quiet_train(model, train_loader, val_loader, device, **train_arguments):
    """course_lib.train() without its progress bar, timed from end to end.

    train() draws a progress bar on stderr; the bench prints one table, so the bar is swallowed.

    Args:
        model, train_loader, val_loader: as train() takes them.
        device: where to train (a torch.device or its name).
        **train_arguments: train()'s other keyword arguments (num_epochs, lr, callbacks, batch_loss, ...).

    Returns:
        (History of the run, wall seconds of the whole call: evaluations and data loading included).
    """
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        history = train(model, train_loader, val_loader, device=torch.device(device), **train_arguments)
    return history, time.perf_counter() - start


def first_reaching(history, target, accuracies=None):
    """(seconds, steps) of the first evaluation whose accuracy reached target; (None, None) if none did.

    Args:
        history: course_lib.training.History of a run (seconds, step, val_accuracy, one entry per evaluation).
        target: the accuracy to reach.
        accuracies: one accuracy per evaluation measured on other data (e.g. an AccuracyStop's, on the test split);
            default the history's validation accuracies.
    """
    accuracies = history.val_accuracy if accuracies is None else accuracies
    for seconds, step, accuracy in zip(history.seconds, history.step, accuracies):
        if accuracy >= target:
            return seconds, step
    return None, None


def summarize_runs(runs):
    """Median and worst training time over the runs of several seeds.

    Args:
        runs: list of train_to_accuracy results.

    Returns:
        dict with median_seconds, worst_seconds, median_steps, worst_steps and all_reached.
    """
    seconds, steps = [run["seconds"] for run in runs], [run["steps"] for run in runs]
    return dict(median_seconds=statistics.median(seconds), worst_seconds=max(seconds),
                median_steps=statistics.median(steps), worst_steps=max(steps),
                all_reached=all(run["reached"] for run in runs))
