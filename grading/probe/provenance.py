"""Record the optimizer steps a notebook takes, to tell whether a trained model's weights are a state one left.

The probe makes one Ledger before any student code runs: it registers a global optimizer step post hook (every
torch.optim.Optimizer, a student's subclass included, calls it after each step), which keeps the float64 norm of
every parameter the step's optimizer holds. At a trained task's check cell, `provenance` records how many steps there
were, how many held the graded tensors themselves, and the norms that parameters of the graded tensors' sizes had
after each step. The grader compares those with the weights it judges (judge/provenance_flags.py): a best checkpoint
reloaded (in place or into a copy), a model moved between devices or dtypes keeps a step's norms; weights pasted or
loaded from elsewhere, or left at their initialisation, do not.

This module is copied into the sandbox beside probe.py: it may import only torch.
"""
import torch
from torch.optim import optimizer as _optimizer

# Captured before any student code runs: a notebook that rebinds them cannot change what is recorded.
_norms, _stack, _cat, _tensor, _no_grad = torch._foreach_norm, torch.stack, torch.cat, torch.tensor, torch.no_grad
_register = _optimizer.register_optimizer_step_post_hook


class Ledger:
    """The steps of every optimizer in this process, each as the norms of the parameters it left."""

    def __init__(self, sightings=None):
        self.sightings = sightings  # Sightings of the sandbox's stand-ins in training batches, when it has some
        self.steps, self.failures = 0, 0
        self.layouts, self.parameters, self.sizes, self.counts = {}, [], [], []  # per layout: see after_step
        self.order, self.norms = [], []  # per step: its layout's index, the float64 norms of its parameters
        self.hooks = _optimizer._global_optimizer_post_hooks  # the dict torch's step reads: rebinding it is removal
        self.handle = _register(self.after_step)
        self.hook = self.hooks[self.handle.id]

    def after_step(self, optimizer, args, kwargs):
        """The global post hook: one step's norms (one fused call for all its parameters)."""
        try:
            parameters = [p for group in optimizer.param_groups for p in group["params"]]
            key = tuple(map(id, parameters))
            index = self.layouts.get(key)
            if index is None:  # a new optimizer (or new groups): keep its parameters, so their ids stay theirs
                index = self.layouts[key] = len(self.parameters)
                self.parameters.append(parameters)
                self.sizes.append(_tensor([p.numel() for p in parameters], dtype=torch.int64))
                self.counts.append(0)
            with _no_grad():
                self.norms.append(_stack(_norms(parameters, 2, dtype=torch.float64)).cpu())
            self.order.append(index)
            self.counts[index] += 1
            self.steps += 1
        except Exception:  # noqa: BLE001 -- never break the student's training; the judge sees the failures
            self.failures += 1

    def hooked(self):
        """Whether torch still calls after_step after every step (the notebook neither removed nor replaced it)."""
        return _optimizer._global_optimizer_post_hooks is self.hooks and self.hooks.get(self.handle.id) is self.hook

    def provenance(self, tensors):
        """The evidence the grader needs to tell whether the graded tensors came out of this notebook's steps.

        Args:
            tensors: the model's graded tensors (its weights by role, as recorded for the grader).

        Returns:
            {"hooked": bool, "steps": all steps, "failures": steps the hook could not record, "stepped": steps whose
            optimizer held one of the tensors themselves, "norms": {size: float64 tensor (steps of that size,) of
            the norms every parameter of that many elements had after each step}, and "stand_ins" (Sightings.report)
            where the sandbox has stand-ins}: plain data.
        """
        held = {id(t) for t in tensors}
        stepped = sum(count for parameters, count in zip(self.parameters, self.counts)
                      if any(id(p) in held for p in parameters))
        evidence = {"hooked": self.hooked(), "steps": self.steps, "failures": self.failures, "stepped": stepped,
                    "norms": self.norms_by_size({t.numel() for t in tensors})}
        return evidence if self.sightings is None else dict(evidence, stand_ins=self.sightings.report())

    def norms_by_size(self, sizes):
        """{size: the norms after every step of each parameter of that many elements} for the given sizes."""
        if not self.norms:
            return {size: _tensor([], dtype=torch.float64) for size in sizes}
        norms, all_sizes = _cat(self.norms), _cat([self.sizes[index] for index in self.order])
        return {size: norms[all_sizes == size] for size in sorted(sizes)}


_register_pre = torch.nn.modules.module.register_module_forward_pre_hook
_forward_pre_hooks = torch.nn.modules.module._global_forward_pre_hooks
_is_grad_enabled, _round = torch.is_grad_enabled, torch.round


def fingerprints(rows, scale):
    """The bytes of each row (N, ...) rounded on its grid (values times scale): equal rows, equal bytes."""
    return [bytes(row) for row in _round(rows.detach().float().cpu() * scale).to(torch.int32).reshape(
        len(rows), -1).numpy()]


class Sightings:
    """Which of the sandbox's stand-ins for the scored data went through training: a module called in training mode
    with gradients on a batch holding them, followed by an optimizer step before the next such batch.

    The probe makes one, before any student code runs, when the runtime holds stand-in rows (grading/sandbox/covers.py):
    a global forward pre-hook reads the first tensor argument of every module call whose trailing shape is a row's,
    and a global optimizer step post hook confirms the rows of the last such batch. An honest notebook only evaluates
    on them (in eval mode, or without a step after), and none is seen.
    """

    def __init__(self, rows, scale):
        self.shape, self.scale, self.total = tuple(rows.shape[1:]), scale, len(rows)
        self.known = set(fingerprints(rows, scale))
        self.pending, self.trained = set(), set()
        self.handle = _register_pre(self.before_forward)
        self.hook = _forward_pre_hooks[self.handle.id]
        self.step_handle = _register(self.after_step)

    def before_forward(self, module, args):
        """The global forward pre-hook: the stand-ins among a training batch's rows wait for the next step."""
        try:
            batch = args[0] if args else None
            if type(batch) is not torch.Tensor or tuple(batch.shape[1:]) != self.shape or batch.dim() < 2:
                return None
            if module.training and _is_grad_enabled() and batch.is_floating_point():
                self.pending = self.known.intersection(fingerprints(batch, self.scale))
            else:
                self.pending = set()
        except Exception:  # noqa: BLE001 -- never break the student's code
            pass
        return None

    def after_step(self, optimizer, args, kwargs):
        self.trained |= self.pending
        self.pending = set()

    def report(self):
        """{"hooked": whether torch still calls before_forward, "trained": stand-ins that went through a step,
        "total": stand-ins}: plain data."""
        hooked = torch.nn.modules.module._global_forward_pre_hooks is _forward_pre_hooks and \
            _forward_pre_hooks.get(self.handle.id) is self.hook
        return {"hooked": hooked, "trained": len(self.trained), "total": self.total}
