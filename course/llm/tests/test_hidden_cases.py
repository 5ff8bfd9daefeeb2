"""The llm hidden grading cases (course/llm/cases/), scored in process as the grader scores them.

The reference passes every task; every planted mistake of Tasks 1-6 and 8 (course/llm/mistakes.py's MUTANTS) scores
0 on its task (the full recount by the check's own speed rule, run in the probe); the valid variants the checks'
tests use score full marks;
what a probe receives holds no expected values and no held-out text; and Task 7 is judged by the reference Llama
loaded with the model's weights, on the grader's own held-out text cut by the reference tokenizer with the notebook's
merges: a trained reference model earns it, merges that are not valid are refused with a reason, other valid merges
are judged fairly, and re-drawn weights collapse.
"""
import copy

import pytest
import torch

from checkers.llm._facts import bpe_speed
from checkers.llm.trained import TARGET_BPB
from course.llm.cases import trained_model
from course.llm.cases.facts import BPE_SPEED, FACT_PROBLEMS
from course.llm.mistakes import MUTANTS
from course.registry import assignment
from course_lib import llm as llm_defaults
from course_lib.llm import split_topics
from grading.judge.trained_models import trained_problem
from grading.recipes import run
from in_process_grading import graded_cases_of, verdict_of

from . import attention_variants, bpe_variants, layer_variants, lora_variants, unnamed_mistakes as heldout
from .checks import reference, variant
from .trained_models import reference_merges, reference_tokenizer, trained_reference

DEFINITION_TASKS = (1, 2, 3, 4, 5, 6, 8)


@pytest.fixture(scope="module")
def graded_cases():
    """(cases, expected, names, points, reference) as the grader builds them (tests/in_process_grading.py)."""
    return graded_cases_of(assignment("llm"), reference())


@pytest.mark.fast
def test_every_definition_task_has_hidden_cases(graded_cases):
    assert set(graded_cases[0]) == set(assignment("llm").tasks)
    for task in DEFINITION_TASKS:
        assert sum(not case["visible"] for case in graded_cases[0][task]) >= 5, task
        assert sum(case["visible"] for case in graded_cases[0][task]) >= 1, task


@pytest.mark.fast
@pytest.mark.parametrize("task", DEFINITION_TASKS)
def test_reference_passes_hidden_tests(task, graded_cases):
    verdict = verdict_of(task, graded_cases[4], graded_cases)
    assert verdict.score == graded_cases[3][task], verdict.message


PLANTED = [mutant for mutant in MUTANTS if mutant.task in DEFINITION_TASKS]


# The full tier: the fast agreement matrix (tests/test_check_grade_agreement.py) asserts the same of each mistake
@pytest.mark.full
@pytest.mark.parametrize("planted", PLANTED, ids=lambda m: f"task{m.task}-{m.name}")
def test_hidden_tests_reject_every_planted_mistake(planted, graded_cases):
    verdict = verdict_of(planted.task, variant(planted), graded_cases)
    assert verdict.score == 0 and verdict.message.startswith(f"Task {planted.task}"), verdict.message


@pytest.mark.fast
def test_the_catalogue_covers_every_definition_task():
    assert {mutant.task for mutant in MUTANTS} >= set(DEFINITION_TASKS)


# The valid variants of the checks' tests; SdpaGQA among them: Task 5 may call SDPA (Task 6 may not).
VALID = [(1, "train_bpe", bpe_variants.heap_train_bpe), (1, "train_bpe", bpe_variants.tuple_words_train_bpe),
         (2, "BPETokenizer", bpe_variants.SequentialTokenizer), (2, "BPETokenizer", bpe_variants.ExplicitLoopTokenizer),
         (3, "RMSNorm", layer_variants.RsqrtRMSNorm), (3, "RMSNorm", layer_variants.TorchRMSNorm),
         (3, "RMSNorm", layer_variants.UpcastRMSNorm), (4, "SwiGLU", layer_variants.SequentialGateSwiGLU),
         (4, "SwiGLU", layer_variants.HandSiluSwiGLU)] \
    + [(5, "GroupedQueryAttention", layer) for layer in attention_variants.GQA_VARIANTS] \
    + [(6, "tiled_attention", function) for function in attention_variants.TILED_VARIANTS] \
    + [(8, "LoRALinear", layer) for layer in lora_variants.LORA_VARIANTS]


@pytest.mark.fast
@pytest.mark.parametrize("task, name, answer", VALID, ids=lambda v: getattr(v, "__name__", str(v)))
def test_hidden_tests_accept_valid_variants(task, name, answer, graded_cases):
    verdict = verdict_of(task, dict(reference(), **{name: answer}), graded_cases)
    assert verdict.score == graded_cases[3][task], verdict.message


FULL_RECOUNTS = ["a full recount after every merge", "bpe_full_recount", "bpe_full_recount_all_words"]


def recount(name):
    """The planted full recount, or a held-out one (right merges, too slow), by name."""
    planted = [variant(mutant)["train_bpe"] for mutant in MUTANTS if mutant.name == name]
    return planted[0] if planted else heldout.mistake_object(next(i for i in heldout.MISTAKES if i["name"] == name))


@pytest.mark.fast
@pytest.mark.parametrize("train_bpe", [None, bpe_variants.heap_train_bpe, bpe_variants.tuple_words_train_bpe],
                         ids=["reference", "heap", "tuple_words"])
def test_valid_trainers_are_fast_enough_in_the_probe(train_bpe):
    assert bpe_speed(train_bpe or reference()["train_bpe"]) == {"fast_enough": True}


@pytest.mark.fast
@pytest.mark.parametrize("name", FULL_RECOUNTS)
def test_full_recounts_fail_the_speed_rule_in_the_grader(name, graded_cases):
    """Their merges are right: only the speed fact (the check's rule, timed in the probe) scores them 0."""
    assert bpe_speed(recount(name)) == {"fast_enough": False}
    verdict = verdict_of(1, dict(reference(), train_bpe=recount(name)), graded_cases)
    assert verdict.score == 0 and FACT_PROBLEMS[BPE_SPEED, "fast_enough"] in verdict.message, verdict.message


@pytest.mark.fast
def test_recipes_hold_no_expected_values(graded_cases):
    """What a probe receives: inputs and weights only."""
    text = repr(graded_cases[0])
    assert "expected" not in text and "'outputs'" not in text


# ----- Task 7 -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained_cases(graded_cases):
    """(cases, expected, names, points, reference): Task 7's are read from them."""
    return graded_cases


@pytest.fixture(scope="module")
def trained():
    """(the reference Llama trained as the notebook trains it, the reference merges it was trained with)."""
    return trained_reference(), reference_merges()


def judged(trained_cases, model, merges, **namespace):
    """(problem, flag, note) trained_problem gives the model's Task 7 record, the notebook's `merges` being merges."""
    cases, expected, _, _, ref = trained_cases
    namespace = dict({"Llama": type(model), "merges": merges}, **namespace)
    record = run(cases[7][0], [model, reference_tokenizer()], namespace)
    return trained_problem(7, record, expected[7][0], ref)


@pytest.mark.fast
def test_the_probe_gets_no_text_and_the_grader_scores_the_check_s_part(trained_cases):
    cases, expected = trained_cases[0], trained_cases[1]
    assert "text" not in cases[7][0]["trained"] and "text" not in repr(cases[7][0]["trained"]).replace("'measure'", "")
    assert expected[7][0]["text"] == split_topics()[1][:llm_defaults.EVAL_CHARS]


@pytest.mark.full
def test_a_trained_reference_model_earns_task_7(trained_cases, trained):
    """It passes, and nothing says it fits the sandbox's stand-ins better than their twin (its flag: the probe adds
    the optimizer steps, not here)."""
    problem, _, note = judged(trained_cases, *trained)
    assert problem is None and note == "", note


@pytest.mark.full
def test_merges_as_lists_are_the_same_merges(trained_cases, trained):
    model, merges = trained
    assert judged(trained_cases, model, [list(pair) for pair in merges])[0] is None


@pytest.mark.full
@pytest.mark.parametrize("forged, words", [
    (None, "was not found"), ("not merges", "was not found"), ({(97, 98): 256}, "was not found"),
    ([(97, 98), (256, 400)], "merge 1 of the notebook's `merges` is not a pair of ids below 257"),
    ([(97, 98), (99,)], "merge 1"), ([(97, 98), (True, 99)], "merge 1"), ([(97, 98), ("a", "b")], "merge 1"),
    ([(97, -1)], "merge 0"), ([(97, 98)] * 769, "769 merges but the model has 1024 tokens")],
    ids=lambda v: str(v)[:30])
def test_forged_merges_are_refused_with_a_reason(forged, words, trained_cases, trained):
    problem, _, _ = judged(trained_cases, trained[0], forged)
    assert problem.startswith("the trained model cannot be judged") and words in problem, problem


@pytest.mark.full
def test_other_valid_merges_are_judged_fairly(trained_cases, trained):
    """Bits per byte are per byte of text: merges the model was not trained with give a fair, worse number."""
    model, merges = trained
    problem, _, _ = judged(trained_cases, model, merges[:384])
    assert problem.startswith("bits per byte ") and f"at most {TARGET_BPB:g} is needed" in problem, problem
    assert float(problem.split()[3]) > 2.5, problem


@pytest.mark.full
def test_the_model_must_be_of_the_notebook_s_class(trained_cases, trained):
    problem, _, _ = judged(trained_cases, *trained, Llama=torch.nn.Linear)
    assert problem == "the trained model is not a Llama", problem


@pytest.mark.full
def test_an_untied_head_is_not_judged(trained_cases, trained):
    model = copy.deepcopy(trained[0])
    model.lm_head.weight = torch.nn.Parameter(model.token_embedding.weight.detach().clone())
    problem, _, _ = judged(trained_cases, model, trained[1])
    assert "cannot be judged" in problem and "tied to `token_embedding.weight`" in problem, problem


@pytest.mark.full
def test_heads_come_from_the_rotary_table_else_from_num_heads(trained_cases, trained):
    """Neither the RoPE module's name nor `num_heads` is pinned: the table's width tells the head size, else
    num_heads does; settings that do not divide, disagree between blocks or are missing are refused."""
    cases, expected, _, _, ref = trained_cases
    record = run(cases[7][0], [trained[0], reference_tokenizer()], {"Llama": type(trained[0]), "merges": trained[1]})
    assert record["config"]["rotary_pairs"] == [8, 8] and record["config"]["num_heads"] == [4, 4]
    judge = lambda **settings: trained_problem(7, dict(record, config=dict(record["config"], **settings)),
                                               expected[7][0], ref)[0]
    assert judge(rotary_pairs=[None, None]) is None
    neither = dict(rotary_pairs=[None, None])
    for settings, words in ((dict(rotary_pairs=[3, 3]), "does not divide"), (dict(rotary_pairs=[8, 4]), "disagree"),
                            (dict(neither, num_heads=[None, None]), "`num_heads` = None is not valid"),
                            (dict(neither, num_heads=[3, 3]), "`num_heads` = 3 is not valid"),
                            (dict(num_heads=[4]), "not recorded for every block")):
        problem = judge(**settings)
        assert problem and words in problem, (settings, problem)


@pytest.mark.full
def test_re_drawn_weights_collapse_on_the_reference_architecture(trained):
    model, merges = trained
    tokenizer, text = reference()["BPETokenizer"](merges), split_topics()[1][:llm_defaults.EVAL_CHARS]
    fresh = trained_model.redrawn(model, trained_model.COLLAPSE_SEED)
    chance = trained_model.held_out_bpb(fresh, tokenizer, text[:trained_model.COLLAPSE_CHARS])
    assert chance > TARGET_BPB + trained_model.COLLAPSE_MARGIN


@pytest.mark.fast
def test_a_lora_layer_that_keeps_its_base_under_another_name_is_told_so(graded_cases):
    """`self.base` is pinned (the Task 8 check holds it): the grader's sentence names it, not a frozen-base problem."""
    class Renamed(lora_variants.DeepcopyLoRA):
        def __init__(self, base, rank, alpha):
            super().__init__(base, rank, alpha)
            self.frozen = self.base
            del self.base

        def forward(self, x):
            return self.frozen(x) + torch.nn.functional.linear(torch.nn.functional.linear(x, self.A), self.B) * \
                self.scale

    verdict = verdict_of(8, dict(reference(), LoRALinear=Renamed), graded_cases)
    assert verdict.score == 0 and "should keep the nn.Linear it adapts as `self.base`" in verdict.message, \
        verdict.message
