"""A small, model-agnostic training loop with evaluation, early stopping and callbacks."""
import time
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm

from .calls import student_call
from .device import cpu_threads
from .metrics import accuracy, classification_loss
from .schedule import WarmupCosineSchedule, warmup_cosine_factor

# torch's CPU threads while training. The course's tensors are too small to gain from a second thread, and on a
# shared machine a thread that loses its core makes every op wait for it: one thread cost 6% on an idle 2-core
# machine and saved 4.6-88x beside other jobs (`python -m tools.measure_threads`; figures in docs/bench.md).
CPU_THREADS = 1
# the arguments train() passes to the callables it is given: a loss given under the wrong keyword (loss_fn=
# teacher_forcing_loss) is named before training starts instead of failing deep inside the loop
TRAIN_CALLS = {"loss_fn": ("logits", "labels"), "batch_loss": ("model", "inputs", "labels"), "evaluate_fn": ("model",)}


@dataclass
class History:
    """What happened during training, one entry per evaluation (step_lr: one per optimizer step)."""

    step: list = field(default_factory=list)
    seconds: list = field(default_factory=list)  # training time so far, evaluation excluded
    train_loss: list = field(default_factory=list)
    val_loss: list = field(default_factory=list)
    val_accuracy: list = field(default_factory=list)
    lr: list = field(default_factory=list)
    # the learning rate after every optimizer step (steps 1, 2, ...), as lr holds it at each evaluation: the curves
    # draw the schedule from it, since an evaluation every eval_every steps would cut the warm-up's peak off
    step_lr: list = field(default_factory=list)

    def record(self, **values):
        for name, value in values.items():
            getattr(self, name).append(value)


@torch.no_grad()
def evaluate(model, loader, device, loss_fn=classification_loss):
    """Mean loss and accuracy of model over loader, in eval mode.

    Returns:
        (loss, accuracy) as Python floats.
    """
    was_training = model.training
    model.eval()
    total_loss, total_correct, count = 0.0, 0.0, 0
    for inputs, labels in loader:
        inputs, labels = inputs.to(device), labels.to(device)
        logits = model(inputs)  # (batch_size, num_classes)
        total_loss += loss_fn(logits, labels).item() * len(labels)
        total_correct += accuracy(logits, labels) * len(labels)
        count += len(labels)
    model.train(was_training)
    return total_loss / count, total_correct / count


@student_call
def stop_at_accuracy(target):
    """Callback that stops training once validation accuracy reaches target."""
    return lambda history: history.val_accuracy[-1] >= target


@student_call(calls=TRAIN_CALLS)
def train(model, train_loader, val_loader, num_epochs, lr, warmup_steps=0, device=None, weight_decay=0.0,
          betas=(0.9, 0.98), eval_every=50, max_seconds=None, callbacks=(), loss_fn=classification_loss,
          threads=CPU_THREADS, batch_loss=None, evaluate_fn=None):
    """Train model with AdamW and a warm-up + cosine schedule, evaluating every eval_every steps.

    The model is evaluated once before the first step, so the curves start at the untrained loss.

    Args:
        model: any nn.Module; by default one mapping a batch of inputs to logits (batch_size, num_classes).
        train_loader, val_loader: DataLoaders yielding (inputs, labels); val_loader may be None with evaluate_fn.
        num_epochs: passes over train_loader; the schedule spans all of them.
        lr: peak learning rate.
        warmup_steps: optimizer steps of linear warm-up.
        device: where to train; defaults to the device of the model's parameters.
        weight_decay: AdamW weight decay.
        betas: AdamW's decay rates; beta2 = 0.98 as in Vaswani et al. (2017). On the palindrome task it
            left the ln 2 plateau after 6,550 steps against 11,050 with PyTorch's default 0.999 (one seed
            each, embed 32, 4 heads).
        eval_every: optimizer steps between evaluations (and callback calls).
        max_seconds: stop once this much training time (evaluation excluded) has passed.
        callbacks: callables taking the History after each evaluation; one returning True stops training.
            A callback with a finish(history) method has it called once training ends.
        loss_fn: loss_fn(logits, labels) -> scalar tensor.
        threads: torch's CPU threads while training on the CPU (restored afterwards); None keeps torch's setting.
        batch_loss: batch_loss(model, inputs, labels) -> scalar loss of one batch already on the device;
            default loss_fn(model(inputs), labels). A sequence model passes its own (e.g. teacher forcing).
        evaluate_fn: evaluate_fn(model) -> (val_loss, val_accuracy) as floats; default evaluate() over val_loader.

    Returns:
        History of the run.
    """
    device = device or next(model.parameters()).device
    history = History()
    batch_loss = batch_loss or (lambda model, inputs, labels: loss_fn(model(inputs), labels))
    evaluate_fn = evaluate_fn or (lambda model: evaluate(model, val_loader, device, loss_fn))
    run = _Run(model, train_loader, evaluate_fn, device, batch_loss, history, callbacks)
    total_steps = num_epochs * len(train_loader)
    with cpu_threads(threads if device.type == "cpu" else None):
        run.evaluate(step=0, train_loss=float("nan"), lr=lr * warmup_cosine_factor(0, warmup_steps, total_steps))
        # built after the first evaluation, so an unfinished model fails in its own forward first
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, betas=betas)
        schedule = WarmupCosineSchedule(optimizer, warmup_steps, total_steps)
        run.loop(optimizer, schedule, num_epochs, eval_every, max_seconds)
    for callback in callbacks:
        if hasattr(callback, "finish"):
            callback.finish(history)  # e.g. the last redraw of live curves
    return history


class _Run:
    """State of one call to train(); keeps train() itself short."""

    def __init__(self, model, train_loader, evaluate_fn, device, batch_loss, history, callbacks):
        self.model, self.train_loader, self.evaluate_fn = model, train_loader, evaluate_fn
        self.device, self.batch_loss, self.history, self.callbacks = device, batch_loss, history, callbacks
        self.seconds = 0.0

    def evaluate(self, step, train_loss, lr):
        val_loss, val_accuracy = self.evaluate_fn(self.model)
        self.history.record(step=step, seconds=self.seconds, train_loss=train_loss,
                            val_loss=val_loss, val_accuracy=val_accuracy, lr=lr)
        stops = [bool(callback(self.history)) for callback in self.callbacks]
        return any(stops)

    def step(self, optimizer, schedule, inputs, labels):
        start = time.perf_counter()
        loss = self.batch_loss(self.model, inputs.to(self.device), labels.to(self.device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        self.history.step_lr.append(optimizer.param_groups[0]["lr"])
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # so the clock measures the step, not its launch
        self.seconds += time.perf_counter() - start
        return loss.item()

    def loop(self, optimizer, schedule, num_epochs, eval_every, max_seconds):
        self.model.train()
        total_steps, losses = num_epochs * len(self.train_loader), []
        with tqdm(total=total_steps, desc="training", unit="step") as progress:
            for step, (inputs, labels) in enumerate(_batches(self.train_loader, num_epochs), start=1):
                losses.append(self.step(optimizer, schedule, inputs, labels))
                progress.update()
                out_of_time = max_seconds is not None and self.seconds >= max_seconds
                if step % eval_every and step != total_steps and not out_of_time:
                    continue
                stop = self.evaluate(step, sum(losses) / len(losses), optimizer.param_groups[0]["lr"])
                progress.set_postfix(loss=f"{losses[-1]:.3f}", val_acc=f"{self.history.val_accuracy[-1]:.3f}")
                losses = []
                if stop or out_of_time:
                    break
            _end_at_steps_run(progress)  # not reached on an error: that bar stays red


def _end_at_steps_run(progress):
    """Make the bar's total the steps actually run: tqdm marks a bar closed short of its total as failed (red)."""
    progress.total = progress.n
    for widget in getattr(getattr(progress, "container", None), "children", ()):  # tqdm.notebook's widgets
        if hasattr(widget, "bar_style"):  # the bar itself, whose length was fixed when it was drawn
            widget.max = progress.n
    progress.refresh()


def _batches(loader, num_epochs):
    for _ in range(num_epochs):
        yield from loader
