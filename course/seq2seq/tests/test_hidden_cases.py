"""The seq2seq hidden grading cases (course/seq2seq/cases/), scored in-process as the grader scores them.

The reference passes every task; every planted mistake of Tasks 1-6 (course/seq2seq/mistakes.py) and every unnamed
Tasks 1-4 mistake of the checks' tests scores 0 on its task; the valid variants (the checks' and a few edits of the
reference) score full marks; what a probe receives holds no expected values; and Task 7 is judged by the reference
architecture loaded with the model's weights and decoded by the reference greedy_decode: a trained reference model
earns it, a model that answers from `source`, copies its memory reversed by hand or reads the future does not, and
settings the reference cannot take are refused with a reason.
"""
import pytest
import torch

from checkers.seq2seq import CheckFailure, check_task_1
from checkers.seq2seq.layer_norm import BY_HAND
from course.mutant import Mutant
from course.seq2seq.mistakes import MUTANTS
from course.reference import load_reference, reference_source
from course.registry import assignment
from course_lib.seq2seq import EOS_ID
from course.seq2seq.cases import trained_model as trained
from grading.judge.expected import reference_namespace
from grading.judge.trained_models import trained_problem
from grading.recipes import run
from in_process_grading import graded_cases_of, verdict_of

from . import layers_unnamed, layers_variants, reversal_models, test_checks_decoding as decoding, unnamed_mistakes

SEQ2SEQ = assignment("seq2seq")
REFERENCE = reference_namespace(SEQ2SEQ)  # at collection: the variants built on its layers are parameters
POINTS = SEQ2SEQ.points
DEFINITION_TASKS = SEQ2SEQ.definition_tasks


@pytest.fixture(scope="module")
def graded_cases():
    """(cases, expected, names, points, reference) as the grader builds them."""
    return graded_cases_of(SEQ2SEQ, REFERENCE)


def variant(edit):
    """The reference namespace after edit(source) -> source."""
    return load_reference(edit(reference_source(SEQ2SEQ)))


@pytest.mark.fast
@pytest.mark.parametrize("task", DEFINITION_TASKS)
def test_reference_passes_hidden_tests(task, graded_cases):
    verdict = verdict_of(task, graded_cases[4], graded_cases)
    assert verdict.score == POINTS[task], verdict.message
    assert sum(not case["visible"] for case in graded_cases[0][task]) >= 5  # hidden cases beyond the visible ones


DEFINITION_MUTANTS = [mutant for mutant in MUTANTS if mutant.task in DEFINITION_TASKS]


@pytest.mark.fast
def test_there_are_mistakes_of_every_definition_task_to_plant():
    """The catalogue this file plants from (course/seq2seq/mistakes.py) covers Tasks 1-6."""
    assert {mutant.task for mutant in DEFINITION_MUTANTS} == set(DEFINITION_TASKS)


# The full tier: the fast agreement matrix (tests/test_check_grade_agreement.py) asserts the same of each mistake
@pytest.mark.full
@pytest.mark.parametrize("planted", DEFINITION_MUTANTS, ids=lambda m: f"task{m.task}-{m.name}")
def test_hidden_tests_reject_every_planted_mistake(planted, graded_cases):
    verdict = verdict_of(planted.task, variant(planted.apply), graded_cases)
    assert verdict.score == 0 and verdict.message.startswith(f"Task {planted.task}"), verdict.message


# Valid ways to write Tasks 1-6 (edits of the reference), which the hidden cases must accept.
DECODE_STEP = "next_token = model.decode(tokens, memory, source)[:, -1].argmax(dim=-1)"
VALID = [
    Mutant(1, "var_mean and rsqrt", (("mean = x.mean(dim=-1, keepdim=True)",
                                      "var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)"),
                                     ("var = (centered * centered).mean(dim=-1, keepdim=True)", "pass"),
                                     ("centered / torch.sqrt(var + self.eps)",
                                      "centered * torch.rsqrt(var + self.eps)"))),
    Mutant(2, "masks by comparison and unsqueeze", (
        ("torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()",
         "torch.arange(seq_len, device=device)[None, :] <= torch.arange(seq_len, device=device)[:, None]"),
        ("(tokens != pad_id)[:, None, None, :]", "tokens.ne(pad_id).unsqueeze(1).unsqueeze(2)"))),
    Mutant(3, "einsum heads", (("heads, attention = scaled_softmax_attention(query, key, value, mask)",
                                "scores = torch.einsum('bhqd,bhkd->bhqk', query, key) / math.sqrt(self.head_dim)\n"
                                "        if mask is not None:\n"
                                "            scores = scores.masked_fill(~mask.bool(), float('-inf'))\n"
                                "        attention = scores.softmax(dim=-1)\n"
                                "        heads = torch.einsum('bhqk,bhkd->bhqd', attention, value)"),)),
    Mutant(4, "dropout inside the feed-forward network", (
        ("nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))",
         "nn.Linear(embed_dim, feedforward_dim), activation(), nn.Dropout(dropout), nn.Linear(feedforward_dim, "
         "embed_dim))"),)),
    Mutant(5, "masks inline, embedding scaled by embed_dim ** 0.5", (
        ("memory_mask = padding_mask(source, self.pad_id)", "memory_mask = (source != self.pad_id)[:, None, None, :]"),
        ("self.embedding(target_input) * math.sqrt(self.embed_dim)",
         "self.embedding(target_input) * self.embed_dim ** 0.5"))),
    Mutant(5, "padded target keys masked too", (
        ("self_mask = causal_mask(target_input.size(1), device=target_input.device)",
         "self_mask = causal_mask(target_input.size(1), device=target_input.device) & "
         "padding_mask(target_input, self.pad_id)"),)),
    Mutant(6, "model(source, tokens) at every step", ((DECODE_STEP,
        "next_token = model(source, tokens)[:, -1].argmax(dim=-1)"),)),
    Mutant(6, "a list of steps, concatenated at the end", (
        ("tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, t + 1)",
         "tokens = torch.cat([tokens, next_token.unsqueeze(1)], 1)"),)),
]


@pytest.mark.fast
@pytest.mark.parametrize("valid", VALID, ids=lambda m: f"task{m.task}-{m.name}")
def test_hidden_tests_accept_valid_variants(valid, graded_cases):
    verdict = verdict_of(valid.task, variant(valid.apply), graded_cases)
    assert verdict.score == POINTS[valid.task], verdict.message


def layer_variants(reference):
    """The checks' accepted Tasks 1-4 alternatives (course/seq2seq/tests/layers_variants.py), by task."""
    blocks = layers_variants.make_decoder_blocks(reference["MultiheadAttention"], reference["LayerNorm"])
    return [(1, (cls,)) for cls in layers_variants.LAYER_NORMS] + [(2, pair) for pair in layers_variants.MASKS] + \
        [(3, (cls,)) for cls in layers_variants.MULTIHEADS] + [(4, (cls,)) for cls in blocks]


def names(value):
    return "-".join(obj.__name__ for obj in value[1]) if isinstance(value, tuple) else None


@pytest.mark.fast
@pytest.mark.parametrize("variant_of_task", layer_variants(REFERENCE), ids=names)
def test_hidden_tests_accept_the_checks_layer_variants(variant_of_task, graded_cases):
    task, objects = variant_of_task
    verdict = verdict_of(task, dict(zip(graded_cases[2][task], objects)), graded_cases)
    assert verdict.score == POINTS[task], verdict.message


def unnamed_layer_mistakes(reference):
    """The checks' unnamed Tasks 1-4 mistakes (layers_unnamed.py): each changes what a module computes
    with given weights, or (LayerNormOnesWeight) what a new module computes before any weights are loaded."""
    blocks = layers_unnamed.make_unnamed_decoder_blocks(reference["MultiheadAttention"], reference["LayerNorm"])
    return [(1, (layers_unnamed.LayerNormLastAxisHardCoded,)), (1, (layers_unnamed.LayerNormOnesWeight,)),
            *((1, (cls,)) for cls in layers_unnamed.TORCH_NORMS),
            (1, (layers_unnamed.LayerNormWithoutAffine,)),
            (2, (layers_unnamed.causal_mask_float, reference["padding_mask"])),
            (2, (layers_unnamed.causal_mask_batched, reference["padding_mask"])),
            (2, (reference["causal_mask"], layers_unnamed.padding_mask_pad_is_zero_int)),
            (3, (layers_unnamed.MultiheadAttentionUnscaled,)), (3, (layers_unnamed.MultiheadAttentionDroppedContext,))
            ] + [(4, (cls,)) for cls, _ in blocks.values()]


@pytest.mark.fast
@pytest.mark.parametrize("mistake_of_task", unnamed_layer_mistakes(REFERENCE), ids=names)
def test_hidden_tests_reject_the_checks_unnamed_layer_mistakes(mistake_of_task, graded_cases):
    task, objects = mistake_of_task
    verdict = verdict_of(task, dict(zip(graded_cases[2][task], objects)), graded_cases)
    assert verdict.score == 0 and verdict.message.startswith(f"Task {task}"), verdict.message


def torch_norm_layer_norms():
    """LayerNorms that call torch's own layer norm: the tests' unnamed ones and the planted mistake's."""
    planted = next(mutant for mutant in MUTANTS if mutant.task == 1 and mutant.diagnosis == BY_HAND)
    return list(layers_unnamed.TORCH_NORMS) + [variant(planted.apply)["LayerNorm"]]


@pytest.mark.fast
@pytest.mark.parametrize("cls", torch_norm_layer_norms(), ids=lambda cls: cls.__name__)
def test_torch_s_own_layer_norm_scores_0_for_the_check_s_reason(cls, graded_cases):
    """Task 1 asks for layer normalisation by hand: the grader pays nothing for torch's, and says what the check
    says (the same values everywhere else, so the case that records the calls is the one that fails)."""
    with pytest.raises(CheckFailure) as failure:
        check_task_1(cls)
    verdict = verdict_of(1, {"LayerNorm": cls}, graded_cases)
    assert verdict.score == 0
    assert verdict.message == f"Task 1: hidden: computed by hand: {str(failure.value).removeprefix('Task 1: ')}"
    assert BY_HAND in verdict.message, verdict.message
@pytest.mark.fast
@pytest.mark.parametrize("decode", [decoding.decode_own_generator, decoding.decode_shared_generator,
                                    decoding.decode_seeding], ids=lambda function: function.__name__)
def test_hidden_tests_reject_what_the_check_rejects_in_greedy_decoding(decode, graded_cases):
    """A sampler that keeps the global random state (its own generator, fresh or shared) and a decoder that seeds
    the global generator: the check says ✗ (course/seq2seq/tests/test_checks_decoding.py), the grader pays 0."""
    torch.manual_seed(5)
    verdict = verdict_of(6, {"greedy_decode": decode}, graded_cases)
    assert verdict.score == 0 and verdict.message.startswith("Task 6"), verdict.message


@pytest.mark.fast
@pytest.mark.parametrize("entry", unnamed_mistakes.MISTAKES, ids=lambda entry: entry["name"])
def test_hidden_tests_reject_the_held_out_mistakes(entry, graded_cases):
    """Every held-out mistake (course/seq2seq/tests/unnamed_mistakes.py) fails its check: the grader pays it nothing."""
    torch.manual_seed(0)
    verdict = verdict_of(entry["task"], entry["objects"], graded_cases)
    assert verdict.score == 0 and verdict.message.startswith(f"Task {entry['task']}"), verdict.message


@pytest.mark.fast
@pytest.mark.parametrize("entry", unnamed_mistakes.VARIANTS, ids=lambda entry: entry["name"])
def test_hidden_tests_accept_the_held_out_variants(entry, graded_cases):
    verdict = verdict_of(entry["task"], entry["objects"], graded_cases)
    assert verdict.score == POINTS[entry["task"]], verdict.message


@pytest.mark.fast
def test_recipes_hold_no_expected_values(graded_cases):
    """What a probe receives: inputs and weights only; Task 7's sources and targets stay in the grader."""
    cases, expected = graded_cases[0], graded_cases[1]
    text = repr(cases)
    assert "'targets'" not in text and "'sources'" not in text and "expected" not in text
    assert not {"sources", "targets"} & set(cases[7][0]["trained"])
    assert {"sources", "targets"} <= set(expected[7][0])  # the data is there, on the grader's side
    assert expected[7][0]["sources"].shape == (trained.SIZE, 12)


def judged(model, graded_cases):
    """The problem trained_problem finds with the model's Task 7 record (None: full marks); the notebook's
    Seq2SeqTransformer is the model's own class."""
    cases, expected, _, _, reference = graded_cases
    record = run(cases[7][0], [model], {"Seq2SeqTransformer": type(model)})
    return trained_problem(7, record, expected[7][0], reference)[0]


@pytest.fixture(scope="module")
def trained_model():
    return reversal_models.trained_reference()


@pytest.mark.full
def test_a_trained_reference_model_earns_task_7(trained_model, graded_cases):
    assert judged(trained_model, graded_cases) is None


@pytest.mark.fast
@pytest.mark.parametrize("cheat", ["source_reader", "memory_copier", "future_reader"])
def test_task_7_is_judged_on_the_reference_not_on_the_model_s_own_forward(cheat, graded_cases):
    """A hand-written reversal in place of a trained network (the reference's own decoder gets 100% from the first
    two) earns nothing: the grader decodes the reference architecture loaded with the untrained weights."""
    from course_lib.seq2seq import ReversalDataset, exact_match
    reference = graded_cases[4]
    torch.manual_seed(0)
    model = getattr(reversal_models, cheat)(reference)
    if cheat != "future_reader":
        data = ReversalDataset(200, seed=5)
        decoded = reference["greedy_decode"](model, data.sources, data.sources.size(1) + 1, 1, EOS_ID)
        assert exact_match(decoded, data.targets) == 1.0  # the cheat works on the model's own forward
    problem = judged(model, graded_cases)
    assert problem and "accuracy" in problem and "with your weights" in problem, problem


@pytest.mark.full
def test_trained_weights_that_do_not_fit_the_reference_are_not_judged(trained_model, graded_cases):
    """Settings the reference cannot build, or another vocabulary, score 0 and say why."""
    cases, expected, _, _, reference = graded_cases
    record = run(cases[7][0], [trained_model], {"Seq2SeqTransformer": type(trained_model)})
    wrong_heads = dict(record, config=dict(record["config"], num_heads=[5] * len(record["config"]["num_heads"])))
    assert "not valid" in trained_problem(7, wrong_heads, expected[7][0], reference)[0]
    mixed = dict(record, config=dict(record["config"], activation=["ReLU", "GELU"] * 2))
    assert "disagree" in trained_problem(7, mixed, expected[7][0], reference)[0]
    bigger = dict(record, weights={**record["weights"], "embedding.weight": torch.zeros(14, 32)})
    assert "vocab_size is 14" in trained_problem(7, bigger, expected[7][0], reference)[0]
    huge = dict(record, weights={**record["weights"], "embedding.weight": torch.zeros(13, 2048)})
    assert "embed_dim = 2048 is above 128" in trained_problem(7, huge, expected[7][0], reference)[0]
    deep = dict(record,
                weights={**record["weights"], **{f"decoder.{i}.norm1.weight": torch.ones(32) for i in range(17)}},
                config=dict(record["config"], num_heads=[4] * (2 + 2 * 17), activation=["ReLU"] * (2 + 17)))
    assert "num_decoder_layers = 17 is above 8" in trained_problem(7, deep, expected[7][0], reference)[0]


@pytest.mark.full
def test_re_drawn_weights_collapse_on_the_reference_architecture(trained_model, graded_cases):
    """The collapse check the grader makes: the trained weights re-drawn reverse (almost) nothing."""
    expected, reference = graded_cases[1][7][0], graded_cases[4]
    data = (expected["sources"][:500], expected["targets"][:500], reference["greedy_decode"])
    assert trained.decoded_accuracy(trained_model, *data) >= trained.TARGET_ACCURACY
    assert trained.decoded_accuracy(trained.redrawn(trained_model), *data) < 0.05


@pytest.mark.fast
def test_a_dict_of_other_keys_is_named_by_its_keys(graded_cases):
    """forward_attention's dict is compared key by key; one without a key says which keys it has."""
    dropped = Mutant(5, "no decoder_cross", (('return attention\n', 'return {key: attention[key] for key in '
                                                                      '("encoder", "decoder_self")}\n'),))
    verdict = verdict_of(5, variant(dropped.apply), graded_cases)
    assert verdict.score == 0
    assert "returned a dict of keys 'decoder_self', 'encoder', expected a dict of keys 'decoder_cross', " \
           "'decoder_self', 'encoder'" in verdict.message, verdict.message
