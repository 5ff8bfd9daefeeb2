"""Held-out seq2seq mistakes and variants (unnamed_mistakes.py, written from the student notebook alone,
without reading the checks): each mistake fails its check with words that name it, each variant passes.

WORDS gives, for every mistake, words of the one sentence its check must say; a mistake not listed there would only
be required to fail (none is left so).
"""
import pytest
import torch

import checkers.seq2seq as checkers

from . import unnamed_mistakes as held_out

pytestmark = pytest.mark.fast

WORDS = {
    "layernorm_unbiased_variance": "the variance is the unbiased one (divided by D - 1)",
    "layernorm_eps_outside_sqrt": "eps is added outside the square root",
    "layernorm_statistics_over_sequence_axis": "standardised along axis 1 (size 4), not along the last axis alone",
    "layernorm_forgets_bias": "the output does not change when `bias` changes: add self.bias",
    "layernorm_weight_random_init": "weight should start as torch.ones(6)",
    "layernorm_ignores_eps_argument": "the `eps` argument is ignored",
    "causal_mask_upper_triangle": "the causal mask is transposed",
    "causal_mask_excludes_diagonal": "the causal mask excludes the diagonal",
    "causal_mask_additive_float": "has dtype torch.float32; it should be torch.bool",
    "causal_mask_ignores_device": "causal_mask ignores its device argument",
    "padding_mask_flipped": "the padding mask is inverted",
    "padding_mask_masks_queries": "it masks padded queries instead of padded keys",
    "padding_mask_hardcodes_pad_zero": "the padding mask ignores the `pad_id` argument",
    "padding_mask_missing_singleton_axis": "the padding mask lacks its broadcast axes",
    "mha_values_from_x_not_context": "the values come from x instead of the context",
    "mha_merge_uses_key_length": "something uses the context's length L_k where x's length L_q belongs",
    "mha_split_heads_without_transpose": "changed the attention of other heads: split the features as view(B, L, H, "
                                         "head_dim)",
    "mha_merge_without_transpose": "merge with transpose(1, 2) back to (B, L, H, head_dim)",
    "mha_missing_output_projection": "the output does not change when o_proj's weight changes",
    "mha_mask_not_passed": "positions where the mask is 0 / False get nonzero weight",
    "mha_returns_head_averaged_weights": "the attention weights are averaged over the heads",
    "mha_scores_scaled_by_embed_dim": "the scores are divided by √8 = √embed_dim instead of by √head_dim = √4",
    "mha_mask_unsqueezed_again": "with a mask of shape (3, 3) raised RuntimeError",
    "decoder_cross_attention_without_residual": "the residual connection around cross_attention is missing",
    "decoder_masks_swapped": "self_attention gets memory_mask",
    "decoder_one_attention_module_shared": "`cross_attention` is the same module as `self_attention`",
    "decoder_pre_norm": "the block normalises before each sub-layer (pre-norm)",
    "decoder_cross_attention_queries_from_memory": "cross_attention gets the memory as its queries",
    "decoder_cross_attention_reads_block_input": "cross_attention gets the block's input x as its queries",
    "decoder_no_dropout_on_feedforward": "the output of feedforward gets no dropout",
    "decoder_attention_weights_swapped": "returns the cross-attention weights second and the self-attention weights "
                                         "third",
    "decoder_reuses_norm1": "one LayerNorm is used for several sub-layers",
    "model_embedding_not_scaled": "the embeddings are not multiplied by √embed_dim",
    "model_scales_after_positions": "the positional encoding is scaled by √embed_dim too",
    "model_decoder_without_causal_mask": "decode gives the decoder blocks no causal mask",
    "model_cross_attention_without_source_mask": "the cross-attention attends to padded source positions",
    "model_encoder_without_padding_mask": "the encoder attends to padding",
    "model_blocks_repeated_by_list_multiplication": "`encoder.1` is the same module as `encoder.0`",
    "model_embedding_without_padding_idx": "create it with padding_idx=pad_id",
    "model_dropout_not_passed_to_blocks": "pass `dropout` on to every encoder and decoder block",
    "model_activation_not_passed_to_blocks": "the blocks ignore the `activation` argument",
    "model_attention_lists_swapped": "holds the cross-attention maps under 'decoder_self'",
    "model_memory_mask_from_target": "the decoder's memory_mask is built from target_input",
    "greedy_returns_bos": "the output starts with BOS",
    "greedy_no_pad_after_eos": "replace them with model.pad_id once the sequence is finished",
    "greedy_stops_when_any_sequence_ends": "it stops as soon as the first sequence produces EOS",
    "greedy_takes_first_position": "every step repeats the first token of its sequence",
    "greedy_argmax_over_positions": "the argmax is taken over the positions axis",
    "greedy_without_eval_mode": "the model ran in train mode",
    "greedy_does_not_restore_mode": "the model is left in eval mode though the caller had it in train mode",
    "greedy_samples_tokens": "it samples the next token: the call drew from the global random generator",
    "greedy_eos_replaced_by_pad": "each sequence's EOS is missing from the output",
    "greedy_max_len_counts_bos": "generate at most max_len tokens",
    "greedy_feeds_only_last_token": "the model was not given BOS followed by the tokens chosen so far",
    "greedy_starts_with_eos": "the first token it gives the model is 2 (eos_id), not bos_id = 1",
    "greedy_pad_hardcoded_zero": "the positions after EOS hold 0, but this model's pad_id is 4",
}


def run(entry):
    """The check of the entry's task on its objects, in the check cell's order."""
    check = getattr(checkers, f"check_task_{entry['task']}")
    check(*entry["objects"].values())


def test_every_held_out_mistake_has_its_words():
    assert set(WORDS) == {entry["name"] for entry in held_out.MISTAKES}
    assert len(held_out.MISTAKES) >= 22


@pytest.mark.parametrize("entry", held_out.MISTAKES, ids=lambda entry: entry["name"])
def test_held_out_mistake_fails_with_words_that_name_it(entry):
    torch.manual_seed(0)
    with pytest.raises(checkers.CheckFailure, match=f"^Task {entry['task']}: ") as failure:
        run(entry)
    message = str(failure.value)
    assert WORDS[entry["name"]] in message and "outputs differs" not in message, message


@pytest.mark.parametrize("entry", held_out.VARIANTS, ids=lambda entry: entry["name"])
def test_held_out_variant_passes(entry, capsys):
    run(entry)
    assert capsys.readouterr().out.startswith(f"✓ Task {entry['task']} passed")
