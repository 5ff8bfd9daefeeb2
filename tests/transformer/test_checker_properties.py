"""Mistakes named nowhere in the catalogue fail with the property they violate, not only 'differs'.

The mistakes live in tests/unnamed_mistakes.py; each test names the words its message must hold, and, where
a wrong hint was once given, the words it must not hold.
"""
import contextlib
import io

import pytest

import checkers.transformer as checkers
from checkers.transformer import CheckFailure
from checkers.transformer.attention import BATCHED
from . import unnamed_mistakes as wrong
from course.mistakes.transformer import DIAGNOSES, MUTANTS
from .student_objects import run_check


def failure_of(task, *student_objects):
    with pytest.raises(CheckFailure, match=f"^Task {task}") as failure:
        getattr(checkers, f"check_task_{task}")(*student_objects)
    message = str(failure.value)
    assert "\n" not in message and "differs from the expected values" not in message, message
    return message


@pytest.mark.parametrize("attention_fn, words", [
    (wrong.attention_softmax_dim_1, "sum to 1 along axis 1"),
    (wrong.attention_scale_shape_1, "divided by √3 = √query.size(1)"),
])
def test_hard_coded_axes_get_no_T_hint(attention_fn, words):
    message = failure_of(1, attention_fn)
    assert "right for 2-D inputs but not for batched ones" in message and "count axes from the end" in message
    assert words in message, message
    assert ".T" not in message and BATCHED not in message, message


def test_T_on_batched_input_gets_the_T_hint():
    assert BATCHED in failure_of(1, wrong.attention_dot_T)


def test_matrix_only_operations_are_named_not_T():
    message = failure_of(1, wrong.attention_torch_mm)
    assert ".t() takes matrices only" in message and BATCHED not in message, message


def test_the_unnamed_base_implementations_pass(capsys):
    """The bases the unnamed mistakes derive from are right: each mistake is the one change it names."""
    for task, student_objects in [(2, (wrong.MultiheadAttentionBase,)), (3, (wrong.EncoderBlockBase,)),
                                  (4, (wrong.PositionalEncodingBase,)), (5, (wrong.ClassifierBase,)),
                                  (7, wrong.LINFORMER)]:
        getattr(checkers, f"check_task_{task}")(*student_objects)
        assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


def test_wrong_divisor_is_measured():
    message = failure_of(1, wrong.attention_scale_by_value_width)
    assert "divided by √6 instead of √query.size(-1) = √4" in message, message


UNNAMED = [
    (1, (wrong.attention_mask_transposed,), "the result is right only when the mask is given transposed"),
    (1, (wrong.attention_result_scaled_again,), "the attention weights are right but res is not"),
    (1, (wrong.attention_scale_by_value_width,), "divided by √6 instead of √query.size(-1) = √4"),
    (2, (wrong.MultiheadAttentionInterleavedHeads,), "changed the attention of other heads"),
    (2, (wrong.MultiheadAttentionMergedInterleaved,), "changed output features 1, 3, 5 and 7 instead of only its own"),
    (2, (wrong.MultiheadAttentionScaledBySeqLen,), "divided by √5 = √seq_len instead of divided by √head_dim = √4"),
    (2, (wrong.MultiheadAttentionSoftmaxOverHeads,), "sum to 1 along axis 1 (size 2), not along the last axis"),
    (2, (wrong.MultiheadAttentionBatchMixed,), "changes with the other elements of the batch"),
    (2, (wrong.MultiheadAttentionMaskTransposed,), "the result is right only when the mask is given transposed"),
    (2, (wrong.MultiheadAttentionUnscaled,), "the scores are not scaled instead of divided by √head_dim = √4"),
    (2, (wrong.MultiheadAttentionQueriesUnprojected,), "changing the weights of q_proj changes no attention weight"),
    (3, (wrong.EncoderBlockNormsSwapped,), "the block must end with norm2"),
    (3, (wrong.EncoderBlockActivationLast,), "`activation` is applied once per forward, to width 8"),
    (3, (wrong.EncoderBlockNoActivation,), "the `activation` argument is never called"),
    (3, (wrong.EncoderBlockResidualOfAttended,), "the residual connection around attention is missing"),
    (3, (wrong.EncoderBlockFeedForwardOnAttended,), "feed it norm1's output"),
    (4, (wrong.PositionalEncodingScaledInput,), "x is multiplied by 2.449 = √embed_dim before pe is added"),
    (4, (wrong.PositionalEncodingAddedTwice,), "PositionalEncoding(zeros) is 2 · pe[:, :L]"),
    (4, (wrong.PositionalEncodingFrequencyPerColumn,), "only odd (cos) columns are wrong"),
    (5, (wrong.ClassifierActivationNotPassedOn,), "the `activation` argument runs 0 times"),
    (5, (wrong.ClassifierDropoutNotPassedOn,), "pass `dropout` on to every EncoderBlock"),
    (5, (wrong.ClassifierClsAppended,), "[CLS] sits at position 6 of the encoder's input"),
    (5, (wrong.ClassifierPositionsBeforeCls,), "the positions are added to the L tokens before [CLS] is prepended"),
    (5, (wrong.ClassifierReadsFirstToken,), "the classifier reads position 1 of the last block's output"),
    (5, (wrong.ClassifierFirstBlockRepeated,), "encoder block 0 runs 2 times in one forward pass"),
    (5, (wrong.ClassifierMeanOfTokens,), "the classifier's input is none of the rows of the last block's output"),
    (5, (wrong.ClassifierOnePositionRow,), "no position information reaches the encoder"),
    (7, (wrong.LinformerAttentionScaledByProjDim,) + wrong.LINFORMER[1:], "divided by √3 = √(number of keys)"),
    (7, (wrong.LinformerAttentionInterleavedHeads,) + wrong.LINFORMER[1:], "changed the attention of other heads"),
    (7, (wrong.LINFORMER[0], wrong.LinformerBlockNoFeedForwardResidual, wrong.LINFORMER[2]),
     "the residual connection around the feed-forward network is missing (x + sub-layer output)"),
    (1, (wrong.attention_log_softmax,), "some attention weights are negative"),
    (1, (wrong.attention_scores_multiplied,), "multiplied by √4 = √query.size(-1) instead of divided by"),
    (1, (wrong.attention_pair_swapped,), "return the pair in the order (res, attention)"),
    (1, (wrong.attention_query_key_swapped,), "query of shape (3, 4), key of shape (5, 4), value of shape (5, 6)"),
    (2, (wrong.MultiheadAttentionHeadsReversed,), "changed output features 0 to 3 instead of only its own, 4 to 7"),
    (3, (wrong.EncoderBlockNormOverSequence,), "the output is standardised along axis 1 (size 5), not along the last"),
    (3, (wrong.EncoderBlockFeedForwardResidualFromInput,), "the block's output no longer depends on the attention"),
    (3, (wrong.EncoderBlockFixedDropout,), "EncoderBlock(dropout=0.0) in train mode gave two different outputs"),
    (5, (wrong.ClassifierAttentionMapsNotChained,),
     "forward_attention: encoder block 1 does not read the output of block 0"),
    (5, (wrong.ClassifierSigmoidLogits,), "return the classifier's output as the logits"),
    (2, (wrong.MultiheadAttentionThreeAxisMaskDropped,), "a (B, L, L) mask is ignored (the result equals the unmasked"),
    (7, (wrong.LinformerAttentionReshapedBack,) + wrong.LINFORMER[1:], "so the compression mixes features"),
    (7, (wrong.LinformerAttentionProjectionsSwapped,) + wrong.LINFORMER[1:],
     "changing f_proj changes the attention weights"),
]


@pytest.mark.parametrize("task, student_objects, words", UNNAMED,
                         ids=lambda value: value[0].__name__ if isinstance(value, tuple) else None)
def test_unnamed_mistake_names_the_property(task, student_objects, words):
    message = failure_of(task, *student_objects)
    assert words in message, message
    # found by a probe, not by matching a planted mistake's stored output: no planted diagnosis is quoted whole
    assert not any(diagnosis in message for diagnosis in DIAGNOSES.values()), message


@pytest.mark.parametrize("task, cls, name", [
    (4, wrong.PositionalEncodingNumPy, "PositionalEncoding.pe"),
    (5, wrong.ClassifierNumPyPositions, "TransformerForSequenceClassification.positional_encoding.pe"),
])
def test_a_numpy_table_is_named_by_its_dtype(task, cls, name):
    """Built with NumPy, the table is float64 in a float32 model: it passed, then training crashed."""
    message = failure_of(task, cls)
    assert f"{name} has dtype torch.float64 in a module built with the default dtype torch.float32" in message, message


@pytest.mark.parametrize("task, cls, words", [
    (2, wrong.MultiheadAttentionCallingTask1, "the scaled_softmax_attention it calls does not pass check_task_1"),
    (3, wrong.EncoderBlockWithInterleavedHeads, "its attention module does not pass check_task_2"),
    (5, wrong.ClassifierWithPositionsAddedTwice, "its positional_encoding does not pass check_task_4"),
], ids=lambda value: value.__name__ if isinstance(value, type) else None)
def test_a_wrong_part_is_named_with_its_task(task, cls, words):
    message = failure_of(task, cls)
    assert words in message and "fix Task" in message, message


@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m.task in (1, 2, 3, 4)],
                         ids=lambda m: f"task{m.task}-{m.name}")
def test_a_planted_mistake_is_explained_in_later_tasks(mutant, load_variant):
    """Each earlier task's planted mistake, left in, makes every later check that it breaks say why."""
    namespace = load_variant(mutant.apply)
    for task in (2, 3, 5, 7):
        if task <= mutant.task:
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                run_check(task, namespace)
        except CheckFailure as failure:
            message = str(failure)
            assert "differs from the expected values" not in message and "could not run" not in message, message
