"""seq2seq's trained task is judged within its defaults: settings far above them are refused before anything is built.

Moved from tests/test_redteam_budget.py, whose course-wide test checks that every trained task names bounding
defaults; this one is seq2seq's own case of the budget (its class, its trained task, its evaluation data).
"""
import pytest
import torch

from course.registry import assignment
from grading.cases import cases_of
from grading.judge import trained_models as judge_trained_module
from grading.judge.score import case_problem

pytestmark = pytest.mark.fast


def test_large_valid_settings_are_refused_before_building_and_flagged(monkeypatch):
    """seq2seq with embed_dim 512 (the old bound was 1024): 0 points, the reason, a flag, and nothing built."""
    from course_lib import seq2seq as seq2seq_defaults
    from course.seq2seq.cases.trained_model import evaluation_data
    from grading.recipes import run
    from grading.judge.expected import reference_namespace
    reference = reference_namespace(assignment("seq2seq"))
    recipe = cases_of("seq2seq").trained_case(7)
    torch.manual_seed(0)
    model = reference["Seq2SeqTransformer"](**seq2seq_defaults.MODEL)
    record = run(recipe, [model], {"Seq2SeqTransformer": type(model)})
    # What the probe adds for a notebook that took no optimizer step, its hook intact (grading/probe/provenance.py)
    record["provenance"] = {"hooked": True, "steps": 0, "failures": 0, "stepped": 0, "norms": {}}
    wide = {role: torch.zeros(*[512 if size == 32 else size for size in value.shape])
            for role, value in record["weights"].items()}
    built, build = [], judge_trained_module.build
    monkeypatch.setattr(judge_trained_module, "build", lambda *args, **kwargs: built.append(args) or build(*args,
                                                                                                           **kwargs))
    expected = dict(recipe["trained"], **evaluation_data(recipe["trained"]))
    problem, _, flag = case_problem(7, recipe, dict(record, weights=wide), expected, {"reference": reference})
    assert "embed_dim = 512 is above 128, 4 x the task's default 32" in problem and built == []
    assert flag.startswith("model settings beyond the task's defaults, not evaluated: embed_dim = 512")
    honest, _, honest_flag = case_problem(7, recipe, record, expected, {"reference": reference})
    assert honest.startswith("accuracy") and honest_flag == "" and built  # the defaults: built and measured
