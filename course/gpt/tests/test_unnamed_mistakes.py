"""The held-out gpt mistakes (unnamed_mistakes.py, written without reading the checks) both ways: each fails
its check with words that name it, each correct variant passes, and the grader's hidden cases agree (0 points for
every mistake, full points for every variant)."""
import pytest
import torch

import checkers.gpt as checkers
from checkers.gpt import CheckFailure
from course.registry import assignment
from course_lib import gpt as gpt_defaults
from grading.judge.expected import reference_namespace
from in_process_grading import graded_cases_of, verdict_of

from . import unnamed_mistakes as held_out
from .checks import reference

pytestmark = pytest.mark.fast

GPT = assignment("gpt")
# Words that name each mistake in its check's message (the evidence, and the fix where the evidence identifies it).
WORDS = {
    "rope_rotate_half": "feature j is paired with feature j + head_dim / 2",
    "rope_theta_missing_factor_two": "the frequencies use i where 2i belongs",
    "rope_reversed_rotation": "each pair turns clockwise",
    "rope_ignores_offset": "the `offset` argument is ignored",
    "rope_positions_from_one": "the positions start at 1",
    "rope_lecture_notes_product": "each feature is multiplied by a sine or a cosine of its position",
    "rope_modifies_input": "modified its input `x` in place",
    "rope_persistent_buffers": "the tables cos and sin are saved in the state_dict",
    "rope_no_length_check": "past max_len raised RuntimeError",
    "attn_mask_sees_next_token": "the attention is not causal: a query attends keys after it",
    "attn_mask_transposed": "the attention is not causal: a query attends keys after it",
    "attn_rotates_values": "RoPE is applied to the values too",
    "attn_scale_half_head_dim": "the scores are divided by head_dim / 2 = 6 instead of √head_dim",
    "attn_softmax_over_queries": "do not sum to 1 over the keys (the last axis): take the softmax over dim=-1",
    "attn_split_heads_without_transpose": "the heads are split without the transpose",
    "attn_merge_heads_without_transpose": "the heads are merged without the transpose",
    "attn_rope_before_head_split": "RoPE is applied over the whole embedding before the heads are split",
    "attn_mask_fill_zero": "the attention is not causal: a query attends keys after it; fill the scores where key j > "
                           "query i with -inf",
    "attn_mask_after_softmax": "the future is removed after the softmax",
    "attn_detached_weights": "no gradient reaches `q_proj.weight`",
    "attn_returns_unrotated_keys": "the keys returned for the cache are not rotated",
    "cache_positions_restart_at_zero": "the new keys are rotated as if they sat at positions 0, 1, ...",
    "cache_mask_top_left": "the causal mask ignores the cached prefix",
    "cache_new_before_past": "the new keys and values come before the cached ones",
    "cache_keys_rotated_twice": "the cached keys are rotated again",
    "cache_length_from_head_axis": "rotated from position 2 instead of L_past = 1, the number of cached positions: "
                                   "2 is cache[0].size(1), the number of heads",
    "cache_returns_new_positions_only": "the new cache holds only the new positions",
    "cache_values_from_cached_keys": "the returned values at the cached positions 0 .. L_past - 1 are the cached keys",
    "block_post_norm": "the block is post-norm",
    "block_residual_from_normed": "a LayerNorm acts on the residual stream",
    "block_norm1_used_twice": "changing norm2's weight and bias changes nothing in the output, so norm2 is never used",
    "block_parallel_sublayers": "the feed-forward network reads the block's input, not the stream after the attention",
    "block_cache_not_passed": "the block does not pass its `cache` argument on to the attention",
    "block_relu_hardcoded": "the `activation` argument is never called",
    "gpt_head_not_tied": "lm_head.weight is a separate Parameter",
    "gpt_no_final_norm": "the logits do not go through final_norm",
    "gpt_embedding_scaled": "the token embeddings are multiplied by √embed_dim",
    "gpt_extra_position_table": "looks like an absolute position table",
    "gpt_first_cache_for_every_block": "block 1 is not given its own entry of the cache",
    "gpt_head_bias": "GPT.lm_head has a bias",
    "sample_temperature_after_softmax": "the temperature changes nothing in any setting",
    "sample_multiplies_temperature": "a higher temperature sharpens the distribution",
    "sample_topk_keeps_one_more": "top-k keeps k + 1 tokens",
    "sample_topk_drops_ties": "top-k keeps exactly k tokens where others tie with the k-th largest logit",
    "sample_topk_fills_zero": "top-k sets the logits outside the k largest to 0",
    "sample_ignores_generator": "it draws from torch's global random generator",
    "sample_greedy_flat_shape": "it returns shape (B,) where (B, 1) is pinned",
    "sample_no_greedy_case": "with temperature=0 it raised RuntimeError",
    "sample_divides_logits_in_place": "it modified `logits` in place",
    "sample_topk_larger_than_vocab": "top_k above the vocabulary size keeps every token",
    "generate_feeds_whole_sequence_with_cache": "a step feeds the whole sequence together with the cache",
    "generate_cache_not_kept": "the model received caches holding [0, 0, 0, 0, 0, 0] positions",
    "generate_no_length_check": "but no ValueError was raised",
    "generate_length_check_off_by_one": "which fits: raise only when prompt.size(1) + max_new_tokens > model.max_len",
    "generate_always_train_after": "the model is left in train mode though the caller had it in eval mode",
    "generate_mode_not_restored_on_error": "the caller's train mode is not restored",
    "generate_first_position_logits": "each step samples from the logits of the first position",
    "generate_drops_temperature_top_k": "the temperature argument does not reach sample_next_token",
    "generate_stops_on_total_length": "max_new_tokens = 6 tokens in all, the prompt's 4 included",
}
MISTAKES, VARIANTS = held_out.MISTAKES, held_out.VARIANTS


def untrained_model():
    """The untrained default GPT the generation tests use: Task 8's check takes (generate, model)."""
    torch.manual_seed(0)
    return reference()["GPT"](**gpt_defaults.MODEL)


def arguments(entry):
    return [*entry["objects"].values()] + ([untrained_model()] if entry["task"] == 8 else [])


def test_every_held_out_mistake_has_its_words():
    assert set(WORDS) == {entry["name"] for entry in MISTAKES} and len(MISTAKES) >= 22


@pytest.mark.parametrize("entry", MISTAKES, ids=lambda entry: entry["name"])
def test_held_out_mistake_fails_with_words_that_name_it(entry):
    with pytest.raises(CheckFailure) as failure:
        getattr(checkers, f"check_task_{entry['task']}")(*arguments(entry))
    message = str(failure.value)
    assert message.startswith(f"Task {entry['task']}") and "\n" not in message, message
    assert "differs from the expected values" not in message, message
    assert WORDS[entry["name"]] in message, message


@pytest.mark.parametrize("entry", VARIANTS, ids=lambda entry: entry["name"])
def test_held_out_variant_passes(entry, capsys):
    getattr(checkers, f"check_task_{entry['task']}")(*arguments(entry))
    assert capsys.readouterr().out.startswith(f"✓ Task {entry['task']} passed")


@pytest.fixture(scope="module")
def graded_cases():
    return graded_cases_of(GPT, reference_namespace(GPT))


def namespace(entry, graded_cases):
    return dict(graded_cases[4], **entry["objects"], model=None)


@pytest.mark.parametrize("entry", MISTAKES, ids=lambda entry: entry["name"])
def test_hidden_cases_pay_nothing_for_a_held_out_mistake(entry, graded_cases):
    verdict = verdict_of(entry["task"], namespace(entry, graded_cases), graded_cases)
    assert verdict.score == 0, verdict.message


@pytest.mark.parametrize("entry", VARIANTS, ids=lambda entry: entry["name"])
def test_hidden_cases_pay_a_held_out_variant_in_full(entry, graded_cases):
    verdict = verdict_of(entry["task"], namespace(entry, graded_cases), graded_cases)
    assert verdict.score == GPT.points[entry["task"]], verdict.message
