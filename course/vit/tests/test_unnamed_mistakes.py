"""The held-out vit mistakes (unnamed_mistakes.py, written from the student notebook without reading the
checkers): each fails its check with the sentence that names it, not a neighbouring mistake's; each correct variant
passes; the grader's hidden cases agree (0 points for each mistake, full marks for each variant); each check stays
within a second.

None of the variants loops over patches in Python, so none is affected by Task 1 rejecting loops.
"""
import pytest

import checkers.vit as checkers
from checkers.vit import _build_probes, _model_probes as probes, _order, _tokens, embedding, model, patches, rollout
from course.registry import assignment
from grading.judge.expected import reference_namespace
from in_process_grading import graded_cases_of, verdict_of

from . import unnamed_mistakes as heldout
from .checks import cpu_seconds, failure_of


# name -> words of the sentence its failure must hold (the checkers' own sentences where one is shared)
WORDS = {
    "patchify_no_permute": _order.STRAIGHT,
    "patchify_column_major": _order.COLUMN_MAJOR,
    "patchify_channels_last": _order.CHANNEL_LAST,
    "patchify_transposed_patch": _order.TRANSPOSED,
    "patchify_square_only": patches.SQUARE,
    "patchify_unfold_no_check": "returned Tensor instead of raising: " + patches.NO_VALUE_ERROR,
    "patchify_assert_check": "raised AssertionError (image size 8x8 is not a multiple of the patch size 3): "
                             + patches.NO_VALUE_ERROR,
    "patchify_batch_mixed": _order.BATCH_MIXED,
    "patchify_image_size_8": patches.FIXED_SIZE.format(size="8 × 8", double="16 × 16"),
    "embedding_cls_last": _tokens.CLS_LAST,
    "embedding_no_cls_position": embedding.N_ROWS,
    "embedding_positions_before_cls": _tokens.SHIFTED,
    "embedding_cls_not_batched": embedding.BATCH_OF_ONE.format(batch_size=3),
    "embedding_cls_not_parameter": embedding.CLS_FIXED,
    "embedding_sinusoidal_positions": embedding.FIXED_TABLE,
    "embedding_patches_not_squared": embedding.ONE_SIDE.format(rows=5, side=4, num_patches=16, wanted=17,
                                                               embed_dim=6),
    "embedding_one_channel": embedding.ONE_CHANNEL.format(area=9, size=27),
    "embedding_patch_size_2": embedding.OTHER_PATCH_SIZE.format(got=12, other=2, patch_size=3, size=27),
    "vit_mean_pool": probes.MEAN_TOKENS,
    "vit_last_token": probes.LAST_TOKEN,
    "vit_no_final_norm": probes.NO_FINAL_NORM,
    "vit_norm_before_blocks": probes.FINAL_NORM_FIRST,
    "vit_softmax_output": probes.PROBABILITIES,
    "vit_shared_block": model.SHARED_BLOCKS,
    "vit_dropout_not_passed": model.DROPOUT_NOT_PASSED,
    "vit_swapped_block_args": _build_probes.SWAPPED.format(feedforward_dim=8, width=2),
    "vit_digits_only": "its projection takes 4 values per patch (in_channels=3 and patch_size=2 give 12) and its "
                       "position_embedding has 17 rows (image_size=6 and patch_size=2 give 10)",
    "vit_attention_not_chained": model.DISAGREES,
    "vit_attention_reversed": model.REVERSED,
    "vit_attention_head_mean": model.HEADS_AVERAGED,
    "vit_attention_last_only": model.ONLY_LAST,
    "rollout_no_identity": rollout.NO_IDENTITY,
    "rollout_no_renormalise": rollout.NOT_RENORMALISED,
    "rollout_right_multiply": rollout.WRONG_ORDER,
    "rollout_max_heads": rollout.MAX_HEADS,
    "rollout_column_normalise": rollout.COLUMNS,
    "rollout_softmax_normalise": rollout.SOFTMAX_ROWS,
    "rollout_inplace_identity": rollout.MODIFIES_INPUT,
    "rollout_detached": rollout.DETACHED,
    "rollout_cls_row": rollout.CLS_ROW,
    "rollout_float32_identity": rollout.FIXED_DTYPE,
    "rollout_batch_mean": rollout.HEADS_FOR_BATCH.format(shape=(2, 4, 4)),
}
# sentences that only some held-out mistakes may be told: any other mistake told one of them was misdiagnosed
ADVICE = {sentence.split(":")[0] for sentence in WORDS.values()}


def _object(item):
    (obj,) = item["objects"].values()
    return obj


@pytest.mark.fast
def test_every_held_out_mistake_has_its_words():
    assert set(WORDS) == {item["name"] for item in heldout.MISTAKES} and len(WORDS) >= 22


@pytest.mark.fast
@pytest.mark.parametrize("item", heldout.MISTAKES, ids=lambda item: item["name"])
def test_held_out_mistake_is_named(item):
    message = failure_of(item["task"], _object(item))
    assert WORDS[item["name"]] in message, message
    told = {advice for advice in ADVICE if advice in message} - {WORDS[item["name"]].split(":")[0]}
    assert not told, (told, message)


@pytest.mark.fast
@pytest.mark.parametrize("item", heldout.VARIANTS, ids=lambda item: item["name"])
def test_held_out_variant_passes(item, capsys):
    getattr(checkers, f"check_task_{item['task']}")(_object(item))
    assert capsys.readouterr().out.startswith(f"✓ Task {item['task']} passed")


@pytest.mark.full
@pytest.mark.parametrize("item", heldout.MISTAKES + heldout.VARIANTS, ids=lambda item: item["name"])
def test_held_out_checks_stay_within_a_second(item):
    check = getattr(checkers, f"check_task_{item['task']}")

    def run():
        try:
            check(_object(item))
        except checkers.CheckFailure:
            pass
    assert cpu_seconds(run, runs=3) <= 1.0


@pytest.fixture(scope="module")
def graded_cases():
    vit = assignment("vit")
    return graded_cases_of(vit, reference_namespace(vit))


@pytest.mark.fast
@pytest.mark.parametrize("item", heldout.MISTAKES + heldout.VARIANTS, ids=lambda item: item["name"])
def test_the_grader_agrees_with_the_check(item, graded_cases):
    """A held-out mistake scores 0 on its task, a variant full marks: the check's ✗ or ✓ is what the grade pays."""
    namespace = dict(graded_cases[4], **item["objects"], model=None)
    verdict = verdict_of(item["task"], namespace, graded_cases)
    full = assignment("vit").points[item["task"]]
    assert verdict.score == (full if item in heldout.VARIANTS else 0), verdict.message
