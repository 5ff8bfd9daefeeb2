"""The fourth held-out list of student mistakes for the seq2seq assignment (Tasks 1-6), written without the checks.

Written from the notebooks (student and solutions) and reference answers only (not from checkers/seq2seq, the planted
mistakes or the other tests; heldout_round2.py, heldout_round3.py and unnamed_mistakes.py were read for their names and
`what` lines only, so that no mistake here repeats one there). Each mistake is a list of edits (old text, new text) of
the reference answer source, applied in order as course.mutant.Mutant applies a planted mistake; each old text occurs
exactly once where it is applied. `what` says what is wrong, in the words a check that names the mistake would need.
"""
from tools.heldout import HeldOut


_GREEDY_STEP = """\
                tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, t + 1)
                finished |= next_token == eos_id
                if finished.all():
                    break
"""
_GREEDY_STEP_LATE_APPEND = """\
                finished |= next_token == eos_id
                if finished.all():
                    break
                tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, t + 1)
"""

MISTAKES = [
    # ---- Task 1: LayerNorm ----
    dict(task=1, name="layernorm_no_eps",
         edits=(("return centered / torch.sqrt(var + self.eps) * self.weight + self.bias",
                 "return centered / torch.sqrt(var) * self.weight + self.bias"),),
         what="eps is never used: the centred input is divided by sqrt(var) alone, so a vector whose features are "
              "all equal (variance 0) gives 0 / 0 = NaN, and near-constant vectors blow up."),
    dict(task=1, name="layernorm_scalar_affine",
         edits=(("self.weight = nn.Parameter(torch.ones(embed_dim))", "self.weight = nn.Parameter(torch.ones(1))"),
                ("self.bias = nn.Parameter(torch.zeros(embed_dim))", "self.bias = nn.Parameter(torch.zeros(1))")),
         what="gamma and beta have shape (1,) instead of (D,): one scale and one shift shared by every feature "
              "(broadcasting hides it), so the layer cannot learn a per-feature scale and shift and a (D,) state_dict "
              "does not load."),

    # ---- Task 2: masks ----
    dict(task=2, name="padding_mask_positions_on_head_axis",
         edits=(("return (tokens != pad_id)[:, None, None, :]", "return (tokens != pad_id)[:, :, None, None]"),),
         what="The padding mask has shape (B, L, 1, 1) instead of (B, 1, 1, L): the key positions sit on the heads "
              "axis, so against (B, H, L_q, L_k) scores it fails to broadcast, or hides whole heads and rows instead "
              "of PAD keys."),

    # ---- Task 3: MultiheadAttention ----
    dict(task=3, name="mha_returns_weights_first",
         edits=(("return (outputs, attention) if return_attention else outputs",
                 "return (attention, outputs) if return_attention else outputs"),),
         what="With return_attention=True forward returns (attention, outputs) instead of (outputs, attention): the "
              "caller unpacks the (B, H, L_q, L_k) weights as the output."),

    # ---- Task 4: DecoderBlock ----
    dict(task=4, name="decoder_cross_attention_memory_not_passed",
         edits=(("x, context=memory, mask=memory_mask, return_attention=True)",
                 "x, mask=memory_mask, return_attention=True)"),),
         what="The memory is never passed to the cross-attention as its context, so it attends over the target "
              "itself (a second self-attention): the source is ignored, and a (B, 1, 1, S) memory mask fails to "
              "broadcast when S != T."),
    dict(task=4, name="decoder_self_mask_passed_positionally",
         edits=(("self.self_attention(x, mask=self_mask, return_attention=True)",
                 "self.self_attention(x, self_mask, return_attention=True)"),),
         what="self_mask is passed by position, where MultiheadAttention.forward takes context: the causal mask "
              "is taken as the keys' and values' input and no mask is applied: any call with a causal mask fails "
              "(k_proj of a bool (T, T) tensor)."),

    # ---- Task 5: Seq2SeqTransformer ----
    dict(task=5, name="model_forward_shifts_target",
         edits=(("return self.decode(target_input, self.encode(source), source)",
                 "return self.decode(target_input[:, :-1], self.encode(source), source)"),),
         what="forward drops the last position of target_input (it shifts the target again, as the training loop "
              "already does), so the logits are (B, T - 1, V) instead of (B, T, V)."),
    dict(task=5, name="model_target_without_positions",
         edits=(("x = self.positional_encoding(self.embedding(target_input) * math.sqrt(self.embed_dim))",
                 "x = self.embedding(target_input) * math.sqrt(self.embed_dim)"),),
         what="decode never adds the positional encoding to the target embeddings (the source gets it), so the "
              "decoder's tokens carry no position."),

    # ---- Task 6: greedy_decode ----
    dict(task=6, name="greedy_last_batch_element",
         edits=(("next_token = model.decode(tokens, memory, source)[:, -1].argmax(dim=-1)",
                 "next_token = model.decode(tokens, memory, source)[-1].argmax(dim=-1)"),),
         what="The logits are indexed [-1], the last sequence of the batch (t, V), instead of [:, -1], the last "
              "position of every sequence: the argmax gives t tokens of one sequence instead of one token per "
              "sequence, a shape error (for a batch of one, from the second step)."),
    dict(task=6, name="greedy_last_eos_dropped",
         edits=((_GREEDY_STEP, _GREEDY_STEP_LATE_APPEND),),
         what="The loop stops before the token of the last step is appended, so the EOS of the sequence that "
              "finishes last is dropped (its row ends without EOS)."),
]


LIST = HeldOut("seq2seq")


# What this list found when it was written, still open: mistakes its checks pass, and mistakes the grade pays
# (tests/test_heldout_round2.py expects both to keep failing until mended; then the line goes).
KNOWN_FALSE_PASSES = {}
KNOWN_GRADE_PAYS = {}
