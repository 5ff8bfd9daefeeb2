"""A trained model whose weights no optimizer step of the notebook produced keeps its score and is flagged.

For the model of every trained task of every assignment (course.toml's `trains`), built from the reference with the
task's default sizes: the probe's record (grading/probe/probe.py's with_steps, with the Ledger of
grading/probe/provenance.py hooked into torch's optimizers as the probe hooks it) after a few optimizer steps, then
the judge's flag (judge/provenance_flags.py). What a student may do (any torch optimizer, keep and reload the best
checkpoint, in place, into a copy or through torch.save, change the model's dtype) is not flagged; weights loaded
from another model, no step at all, a removed hook or a missing record are. The end-to-end run through the real
grader is a "pasted" submission in an assignment's own grading test (course/<name>/tests/test_grading.py).
"""
import copy
import importlib
import io
import sys

import pytest
import torch
from torch.optim import optimizer as torch_optimizer

from course.reference import load_reference, reference_source
from course_paths import ROOT
from course.registry import assignments
from grading.cases import cases_of
from grading.judge import provenance_flags as judge
from grading.judge import trained_models as judge_trained
from grading.judge.score import score_submission

pytestmark = pytest.mark.fast

TRAINED = [(a.name, task) for a in assignments() for task in a.training_tasks]


def probe_modules():
    """grading/probe/probe.py and the provenance module it uses (it puts grading/probe/ first on sys.path: taken back;
    recipes.py, which the runtime holds beside it, is found in grading/)."""
    path = list(sys.path)
    sys.path.insert(0, str(ROOT / "grading"))
    from grading.probe import probe
    sys.path[:] = path
    return probe, probe.provenance


PROBE, PROVENANCE = probe_modules()


@pytest.fixture(scope="module", params=TRAINED, ids=[f"{name}-{task}" for name, task in TRAINED])
def trained_task(request):
    """(the task's trained recipe, the reference namespace, a builder of its model at the task's default sizes)."""
    name, task = request.param
    assignment = next(a for a in assignments() if a.name == name)
    reference = load_reference(reference_source(assignment))
    recipe = cases_of(name).trained_case(task)
    spec = recipe["trained"]
    module, _, attribute = spec["defaults"].partition(":")
    defaults = getattr(importlib.import_module(module), attribute)

    def make(seed):
        torch.manual_seed(seed)
        return reference[spec["class_name"]](**defaults)
    return recipe, reference, make


@pytest.fixture
def ledger():
    """The probe's Ledger, hooked into every optimizer of this process for one test."""
    made = PROVENANCE.Ledger()
    yield made
    made.handle.remove()


def steps(model, count, optimizer_class=torch.optim.AdamW, after=None):
    """count optimizer steps on a loss every parameter reaches; after(step) runs after each (a checkpoint)."""
    optimizer = optimizer_class(model.parameters(), lr=1e-2)
    for step in range(1, count + 1):
        loss = sum(((p - 0.5) ** 2).sum() for p in model.parameters())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if after:
            after(step)


def flag_of(trained_task, ledger, model):
    """The judge's flag of the probe's record of model at the task's check cell."""
    recipe, reference, _ = trained_task
    record = PROBE.with_steps(ledger, recipe, [model], PROBE.recipes.run(recipe, [model], dict(reference)))
    return judge.provenance_flag(record)


def test_a_model_trained_here_is_not_flagged(trained_task, ledger):
    model = trained_task[2](0)
    steps(model, 3)
    assert flag_of(trained_task, ledger, model) == ""


@pytest.mark.parametrize("optimizer_class", [torch.optim.SGD, torch.optim.Adam, torch.optim.RMSprop])
def test_any_torch_optimizer_counts(trained_task, ledger, optimizer_class):
    model = trained_task[2](0)
    steps(model, 2, optimizer_class)
    assert flag_of(trained_task, ledger, model) == ""


def test_the_best_checkpoint_reloaded_is_not_flagged(trained_task, ledger):
    """The state after step 2 kept (a state_dict copy, a deep copy of the model, torch.save), 3 more steps, then the
    kept state graded: in place, as the copy, or loaded back from the file."""
    model = trained_task[2](0)
    kept = {}

    def keep(step):
        if step == 2:
            kept["state"] = copy.deepcopy(model.state_dict())
            kept["model"] = copy.deepcopy(model)
            torch.save(model.state_dict(), kept.setdefault("file", io.BytesIO()))
    steps(model, 5, after=keep)
    assert flag_of(trained_task, ledger, kept["model"]) == ""
    model.load_state_dict(kept["state"])
    assert flag_of(trained_task, ledger, model) == ""
    kept["file"].seek(0)
    reloaded = trained_task[2](1)
    reloaded.load_state_dict(torch.load(kept["file"], weights_only=True))
    assert flag_of(trained_task, ledger, reloaded) == ""


def test_a_model_moved_to_another_dtype_is_not_flagged(trained_task, ledger):
    model = trained_task[2](0)
    steps(model, 2)
    assert flag_of(trained_task, ledger, model.double()) == ""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_model_trained_on_the_gpu_and_moved_back_is_not_flagged(trained_task, ledger):
    """The hook's norms were summed on the GPU, the judge's on the CPU: equal to far within the tolerance."""
    model = trained_task[2](0).cuda()
    steps(model, 2)
    assert flag_of(trained_task, ledger, model.cpu()) == ""


def test_foreign_weights_loaded_after_training_are_flagged(trained_task, ledger):
    """Training ran, then another model's weights (pasted, or loaded from a file) replaced the trained ones."""
    model = trained_task[2](0)
    steps(model, 3)
    model.load_state_dict(trained_task[2](1).state_dict())
    flag = flag_of(trained_task, ledger, model)
    assert flag.startswith("the trained model's weights were not produced by an optimizer step") and \
        "match no state a step left" in flag, flag


def test_weights_without_any_step_are_flagged(trained_task, ledger):
    model = trained_task[2](0)
    assert flag_of(trained_task, ledger, model) == judge.NO_STEP
    steps(trained_task[2](1), 2)  # another model's training does not vouch for this one
    assert "match no state a step left" in flag_of(trained_task, ledger, model)


def test_a_removed_or_replaced_hook_is_flagged(trained_task, ledger):
    model = trained_task[2](0)
    steps(model, 2)
    hooks = torch_optimizer._global_optimizer_post_hooks
    try:
        torch_optimizer._global_optimizer_post_hooks = {}
        assert flag_of(trained_task, ledger, model) == judge.UNHOOKED
    finally:
        torch_optimizer._global_optimizer_post_hooks = hooks
    ledger.handle.remove()
    assert flag_of(trained_task, ledger, model) == judge.UNHOOKED


def test_a_missing_or_malformed_record_is_flagged(trained_task, ledger):
    recipe, reference, make = trained_task
    model = make(0)
    steps(model, 1)
    record = PROBE.with_steps(ledger, recipe, [model], PROBE.recipes.run(recipe, [model], dict(reference)))
    assert judge.provenance_flag(dict(record, provenance={"error": "ValueError: x"})) == judge.MISSING
    assert judge.provenance_flag({key: value for key, value in record.items() if key != "provenance"}) == judge.MISSING
    forged = dict(record["provenance"], norms={size: [1.0] for size in record["provenance"]["norms"]})
    assert judge.provenance_flag(dict(record, provenance=forged)) == judge.MISSING


def test_the_flag_keeps_the_score_and_a_failed_model_is_flagged_only_for_tampering(trained_task, ledger,
                                                                                    monkeypatch):
    """score_submission with the accuracy measurement replaced (tests/<a>/test_hidden_cases.py measure it): a model
    that reaches the target keeps its points, flagged when its weights were no step's; one below it is not
    flagged, unless the hook was removed."""
    recipe, reference, make = trained_task
    task, spec = recipe["task"], dict(recipe["trained"], target=0.5)
    model = make(0)
    record = PROBE.with_steps(ledger, recipe, [model], PROBE.recipes.run(recipe, [model], dict(reference)))

    def verdict(accuracy, changed=()):
        monkeypatch.setattr(judge_trained, "reference_accuracy", lambda *args: (accuracy, ""))
        records = {task: [dict(record, **dict(changed))]}
        return score_submission({task: [recipe]}, {task: [spec]}, records, {task: 2}, reference)[task]
    passed = verdict(0.9)
    assert passed.score == 2 and passed.flag == judge.NO_STEP
    assert verdict(0.1).score == 0 and verdict(0.1).flag == ""
    unhooked = dict(record["provenance"], hooked=False)
    assert verdict(0.1, {"provenance": unhooked}).flag == judge.UNHOOKED
