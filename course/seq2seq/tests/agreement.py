"""The seq2seq assignment's answers for tests/test_check_grade_agreement.py beyond its reference and planted mistakes:
its tests' unnamed mistakes, valid variants and hidden-case variants, and mistakes written for the agreement alone."""
from agreement_cases import by_names, mutants
from course.mutant import Mutant


def _unnamed(ref):
    from . import layers_unnamed as wrong
    blocks = wrong.make_unnamed_decoder_blocks(ref["MultiheadAttention"], ref["LayerNorm"])
    return by_names([(1, (c,)) for c in (wrong.LayerNormLastAxisHardCoded, wrong.LayerNormSequenceAxis,
                                         wrong.LayerNormWholeInput, wrong.LayerNormMeanWithoutGradient,
                                         wrong.LayerNormStdFromData, wrong.LayerNormOnesWeight)] +
                    [(2, (mask, ref["padding_mask"])) for mask in (wrong.causal_mask_float, wrong.causal_mask_on_cpu,
                                                                   wrong.causal_mask_batched)] +
                    [(2, (ref["causal_mask"], wrong.padding_mask_pad_is_zero_int)),
                     (3, (wrong.MultiheadAttentionUnscaled,)), (3, (wrong.MultiheadAttentionDroppedContext,))] +
                    [(4, (cls,)) for cls, _ in blocks.values()], False)


def _variants(ref):
    from . import layers_variants as alt
    blocks = alt.make_decoder_blocks(ref["MultiheadAttention"], ref["LayerNorm"])
    return by_names([(1, (c,)) for c in alt.LAYER_NORMS] + [(2, pair) for pair in alt.MASKS] +
                    [(3, (c,)) for c in alt.MULTIHEADS] + [(4, (c,)) for c in blocks], True)


def _hidden_case_variants(ref):
    from .test_hidden_cases import VALID
    return mutants(True)(VALID)


SOURCES = [("unnamed", _unnamed), ("variants", _variants), ("hidden-case variants", _hidden_case_variants)]

# Mistakes that only the agreement test writes: each once passed a check (issue 21).
DECODE_STEP = "next_token = model.decode(tokens, memory, source)[:, -1].argmax(dim=-1)"
WRITTEN_HERE = [
    Mutant(6, "greedy by torch.multinomial", ((DECODE_STEP, "next_token = torch.multinomial(torch.softmax("
                                               "model.decode(tokens, memory, source)[:, -1], dim=-1), 1)[:, 0]"),)),
    Mutant(5, "dropout given to the decoder blocks only", (
        ("nn.ModuleList(EncoderBlock(*sizes)", "nn.ModuleList(EncoderBlock(*sizes[:4])"),)),
]
