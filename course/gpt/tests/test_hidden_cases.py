"""The gpt hidden grading cases (course/gpt/cases/), scored in-process as the grader scores them.

The reference passes every task; every planted mistake of Tasks 1-6 and 8 (course/gpt/mistakes.py's MUTANTS, and a
few more edits of the reference below) scores 0 on its task; valid variants score full marks; what a probe receives
holds no expected values; and Task 7 is judged by the reference GPT loaded with the model's pinned weights and
written by the reference generate: a trained reference model earns it, models that answer by arithmetic or from a
table do not, and settings the reference cannot take are refused with a reason.
"""
import pytest
import torch

from course.mutant import Mutant
from course.gpt.mistakes import MUTANTS
from course.reference import load_reference, reference_source
from course.registry import assignment
from course.gpt.cases import trained_model as trained
from grading.judge.expected import reference_namespace
from grading.judge.trained_models import trained_problem
from grading.recipes import run
from in_process_grading import graded_cases_of, verdict_of

from .addition_models import calculator, memoriser, trained_reference, untied

GPT = assignment("gpt")
REFERENCE = reference_namespace(GPT)
POINTS = GPT.points
DEFINITION_TASKS = GPT.definition_tasks


@pytest.fixture(scope="module")
def graded_cases():
    """(cases, expected, names, points, reference) as the grader builds them."""
    return graded_cases_of(GPT, REFERENCE)


def variant(edit):
    """The reference namespace after edit(source) -> source, with a `model` for check_task_8's second argument."""
    namespace = load_reference(edit(reference_source(GPT)))
    return dict(namespace, model=None)


@pytest.mark.fast
def test_every_definition_task_has_hidden_cases(graded_cases):
    assert set(DEFINITION_TASKS) == {1, 2, 3, 4, 5, 6, 8}
    for task in DEFINITION_TASKS:
        assert sum(not case["visible"] for case in graded_cases[0][task]) >= 5, task


@pytest.mark.fast
@pytest.mark.parametrize("task", DEFINITION_TASKS)
def test_reference_passes_hidden_tests(task, graded_cases):
    verdict = verdict_of(task, dict(graded_cases[4], model=None), graded_cases)
    assert verdict.score == POINTS[task], verdict.message


# Mistakes the catalogue may not hold (or holds under other edits): each changes what its task computes.
THETA = "base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)"
COS, SIN = "cos = self.cos[offset:offset + seq_len]", "sin = self.sin[offset:offset + seq_len]"
ROTATE = "rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)"
ROPE_QK = "query, key = self.rotary(query, offset=past), self.rotary(key, offset=past)"
ALLOWED = "allowed = torch.ones(seq_len, past + seq_len, dtype=torch.bool, device=x.device).tril(past)"
STEP = "logits, cache = model(unseen, cache=cache) if use_cache else model(tokens)"
MORE_MISTAKES = [
    Mutant(1, "halves instead of interleaved pairs", (("even, odd = x[..., 0::2], x[..., 1::2]",
                                                       "even, odd = x.chunk(2, dim=-1)"),
                                                      ("return rotated.flatten(-2)",
                                                       "return torch.cat([rotated[..., 0], rotated[..., 1]], -1)"))),
    Mutant(1, "exponent i / head_dim", ((THETA, THETA.replace("arange(0, head_dim, 2,", "arange(0, head_dim // 2,")),)),
    Mutant(1, "positions from 1", ((COS, COS.replace("[offset:offset + seq_len]", "[offset + 1:offset + seq_len + 1]")),
                                   (SIN, SIN.replace("[offset:offset + seq_len]", "[offset + 1:offset + seq_len + 1]")),
                                   ("angle = torch.arange(max_len, dtype", "angle = torch.arange(max_len + 1, dtype"))),
    Mutant(1, "offset ignored", ((COS, COS.replace("[offset:offset + seq_len]", "[:seq_len]")),
                                 (SIN, SIN.replace("[offset:offset + seq_len]", "[:seq_len]")))),
    Mutant(1, "clockwise", ((ROTATE, "rotated = torch.stack([even * cos + odd * sin, odd * cos - even * sin], -1)"),)),
    Mutant(2, "RoPE on the queries only", ((ROPE_QK, "query = self.rotary(query, offset=past)"),)),
    Mutant(2, "RoPE on the values too", ((ROPE_QK, ROPE_QK + "; value = self.rotary(value, offset=past)"),)),
    Mutant(2, "no causal mask", ((ALLOWED, "allowed = torch.ones(seq_len, past + seq_len, dtype=torch.bool, "
                                           "device=x.device)"),)),
    Mutant(2, "scores not scaled", (("/ math.sqrt(self.head_dim)", ""),)),
    Mutant(3, "new keys rotated at position 0", ((ROPE_QK, "query, key = self.rotary(query), self.rotary(key)"),)),
    Mutant(3, "mask ignores the cached prefix", ((ALLOWED, "allowed = torch.ones(seq_len, past + seq_len, "
                                                           "dtype=torch.bool, device=x.device).tril()"),)),
    Mutant(3, "cache not used", (("key = torch.cat([cache[0], key], dim=2)", "pass"),
                                 ("value = torch.cat([cache[1], value], dim=2)", "pass"),
                                 ("past = 0 if cache is None else cache[0].size(2)", "past = 0"))),
    Mutant(8, "every step feeds the whole sequence with the cache", ((STEP, "logits, cache = model(tokens, "
                                                                             "cache=cache if use_cache else None) "
                                                                             "if False else model(tokens)"),)),
    Mutant(8, "cache ignored: only the newest token", ((STEP, "logits, cache = model(unseen) if use_cache else "
                                                              "model(tokens)"),)),
    Mutant(8, "mode not restored", (("model.train(mode_before)", "pass"),)),
    Mutant(8, "eval mode never set", (("    model.eval()\n    try:", "    try:"),)),
    Mutant(8, "gradients on", (("@torch.no_grad()\ndef generate", "def generate"),)),
    Mutant(8, "greedy by argmax of the probabilities of the first token", (
        ("unseen = sample_next_token(logits[:, -1], temperature, top_k, generator)",
         "unseen = sample_next_token(logits[:, 0], temperature, top_k, generator)"),)),
    Mutant(8, "the global RNG instead of the generator", (
        ("unseen = sample_next_token(logits[:, -1], temperature, top_k, generator)",
         "unseen = sample_next_token(logits[:, -1], temperature, top_k)"),)),
]

PLANTED = [mutant for mutant in MUTANTS if mutant.task in DEFINITION_TASKS] + MORE_MISTAKES


@pytest.mark.fast
@pytest.mark.parametrize("planted", PLANTED, ids=lambda m: f"task{m.task}-{m.name}")
def test_hidden_tests_reject_every_planted_mistake(planted, graded_cases):
    verdict = verdict_of(planted.task, variant(planted.apply), graded_cases)
    assert verdict.score == 0 and verdict.message.startswith(f"Task {planted.task}"), verdict.message


@pytest.mark.fast
def test_the_catalogue_covers_every_definition_task():
    """course/gpt/mistakes.py plants mistakes of Tasks 1-6 and 8 (the other helpers' part; see the report)."""
    assert {mutant.task for mutant in MUTANTS} >= set(DEFINITION_TASKS)


VALID = [
    Mutant(1, "complex multiplication", (
        ("even, odd = x[..., 0::2], x[..., 1::2]  # (B, H, L, head_dim // 2) each", "pairs = torch.view_as_complex("
         "x.reshape(*x.shape[:-1], -1, 2).contiguous())"),
        (ROTATE, "rotated = torch.view_as_real(pairs * torch.complex(cos, sin))"))),
    Mutant(2, "scaled_dot_product_attention without the cache", (
        ("scores = query @ key.transpose(-2, -1) / math.sqrt(self.head_dim)",
         "if cache is None and not return_attention:\n"
         "            out = nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True)\n"
         "            return self.o_proj(out.transpose(1, 2).reshape(batch_size, seq_len, embed_dim)), (key, value)\n"
         "        scores = query @ key.transpose(-2, -1) / math.sqrt(self.head_dim)"),)),
    Mutant(3, "an additive mask from position indices", (
        (ALLOWED, "allowed = torch.arange(past + seq_len, device=x.device)[None, :] <= "
                  "torch.arange(past, past + seq_len, device=x.device)[:, None]"),)),
    Mutant(6, "top-k by torch.where", (
        ("logits = logits.masked_fill(logits < kth_largest, float(\"-inf\"))",
         "logits = torch.where(logits >= kth_largest, logits, torch.full_like(logits, float(\"-inf\")))"),)),
    Mutant(8, "the last token fed by slicing the sequence", (
        ("logits, cache = model(unseen, cache=cache) if use_cache else model(tokens)",
         "logits, cache = model(tokens if cache is None or not use_cache else tokens[:, -1:], "
         "cache=cache if use_cache else None)"),)),
]


@pytest.mark.fast
@pytest.mark.parametrize("valid", VALID, ids=lambda m: f"task{m.task}-{m.name}")
def test_hidden_tests_accept_valid_variants(valid, graded_cases):
    verdict = verdict_of(valid.task, variant(valid.apply), graded_cases)
    assert verdict.score == POINTS[valid.task], verdict.message


@pytest.mark.fast
def test_recipes_hold_no_expected_values(graded_cases):
    """What a probe receives: inputs and weights only; Task 7's problems stay in the grader."""
    cases, expected = graded_cases[0], graded_cases[1]
    text = repr(cases)
    assert "'sequences'" not in text and "expected" not in text
    assert "sequences" not in cases[7][0]["trained"]
    assert expected[7][0]["sequences"].shape == (trained.SIZE, 12)


def judged(model, graded_cases):
    """The problem trained_problem finds with the model's Task 7 record (None: full marks); the notebook's GPT is the
    model's own class."""
    cases, expected, _, _, reference = graded_cases
    record = run(cases[7][0], [model], {"GPT": type(model)})
    return trained_problem(7, record, expected[7][0], reference)[0]


@pytest.mark.full
def test_a_trained_reference_model_earns_task_7(graded_cases):
    assert judged(trained_reference(), graded_cases) is None


@pytest.mark.fast
@pytest.mark.parametrize("cheat", [calculator, lambda ns: memoriser(ns, trained.DATA_SEED, trained.SIZE)],
                         ids=["calculator in forward", "memorised answers of the grader's own seed"])
def test_task_7_is_judged_on_the_reference_not_on_the_model_s_own_forward(cheat, graded_cases):
    """A forward that adds by arithmetic, or one that knows the grader's very problems, earns nothing: the grader
    runs the reference architecture with the pinned (untrained) weights alone."""
    from course_lib.gpt import PROMPT_LEN
    model, sequences = cheat(graded_cases[4]), graded_cases[1][7][0]["sequences"]
    written = graded_cases[4]["generate"](model, sequences[:200, :PROMPT_LEN], 4, temperature=0, use_cache=False)
    assert (written == sequences[:200]).all()  # the cheat works through the model's own forward
    problem = judged(model, graded_cases)
    assert problem and problem.startswith("accuracy 0.0%") and "with your weights" in problem, problem


@pytest.mark.full
def test_an_untied_head_is_not_judged(graded_cases):
    problem = judged(untied(graded_cases[4]), graded_cases)
    assert "cannot be judged" in problem and "the head is untied" in problem, problem


@pytest.mark.full
def test_heads_come_from_the_rotary_table_when_num_heads_is_not_kept(graded_cases):
    """`num_heads` is not pinned; the rotary table's width (head_dim // 2) tells the heads as well."""
    cases, expected, _, _, reference = graded_cases
    record = run(cases[7][0], [trained_reference()], {"GPT": type(trained_reference())})
    unknown = dict(record, config=dict(record["config"], num_heads=[None] * 2))
    assert trained_problem(7, unknown, expected[7][0], reference)[0] is None
    neither = dict(unknown, config=dict(unknown["config"], rotary_pairs=[None] * 2))
    assert "`num_heads` = None is not valid" in trained_problem(7, neither, expected[7][0], reference)[0]


@pytest.mark.full
def test_trained_weights_that_do_not_fit_the_reference_are_not_judged(graded_cases):
    """Settings the reference cannot build, or another vocabulary, score 0 and say why."""
    cases, expected, _, _, reference = graded_cases
    record = run(cases[7][0], [trained_reference()], {"GPT": type(trained_reference())})
    judge = lambda changed: trained_problem(7, dict(record, **changed), expected[7][0], reference)[0]
    assert "not valid" in judge({"config": dict(record["config"], num_heads=[5, 5])})
    assert "not valid" in judge({"config": dict(record["config"], activation=["ReLU", "ReLU"])})
    assert "disagree" in judge({"config": dict(record["config"], num_heads=[4, 8])})
    embedding = "token_embedding.weight"
    assert "vocab_size is 14" in judge({"weights": {**record["weights"], embedding: torch.zeros(14, 32)}})
    assert "embed_dim = 2048 is above 128" in judge(
        {"weights": {**record["weights"], embedding: torch.zeros(12, 2048)}})
    assert "1 extra" in judge({"weights": {**record["weights"], "lm_head.weight": torch.zeros(12, 32)}})


@pytest.mark.full
def test_re_drawn_weights_collapse_on_the_reference_architecture(graded_cases):
    """The collapse check the grader makes: the trained weights re-drawn answer (almost) nothing."""
    sequences, generate = graded_cases[1][7][0]["sequences"][:500], graded_cases[4]["generate"]
    model = trained_reference()
    assert trained.generated_accuracy(model, sequences, generate) >= trained.TARGET_ACCURACY
    assert trained.generated_accuracy(trained.redrawn(model, trained.COLLAPSE_SEED), sequences, generate) < 0.01
