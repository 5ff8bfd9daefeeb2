"""The gpt assignment's answers for tests/test_check_grade_agreement.py beyond its reference and planted mistakes: its
tests' unnamed mistakes, valid variants and hidden-case variants, and the untrained model its generation check takes."""
from agreement_cases import by_names, mutants
from course_lib import gpt as gpt_defaults


def _unnamed(ref):
    from . import layers_unnamed as wrong
    attentions = wrong.make_unnamed_attentions(ref["RotaryEmbedding"])
    rotaries = (wrong.RotarySquaredPositions, wrong.RotaryFullWidthTables, wrong.RotaryOneAngle,
                wrong.RotaryTablesInForward, wrong.RotaryTablesSwapped)
    return by_names([(1, (c,)) for c in rotaries] +
                    [(2, (attentions["sdpa_unmasked"],)), (3, (attentions["sdpa_causal_with_cache"],)),
                     (3, (attentions["cache_ignored"],)), (2, (attentions["rotated_before_transpose"],))], False)


def _variants(ref):
    from . import layers_variants as layers, model_variants as models
    attentions = layers.make_attentions(ref["RotaryEmbedding"])
    return by_names([(1, (c,)) for c in layers.ROTARIES] + [(task, (c,)) for task in (2, 3) for c in attentions] +
                    [(4, (models.block_with_named_sublayers(ref),)), (4, (models.block_rebuilding_the_cache(ref),)),
                     (5, (models.model_tied_the_other_way(ref),)), (5, (models.model_tied_after_construction(ref),)),
                     (6, (models.sample_with_topk_scatter,)), (6, (models.sample_with_sort_and_log_softmax,)),
                     (8, (models.generate_with_while_loop(ref),)), (8, (models.generate_calling_forward(ref),))],
                    True)


def _hidden_case_variants(ref):
    from .test_hidden_cases import VALID
    return mutants(True)(VALID)


SOURCES = [("unnamed", _unnamed), ("variants", _variants), ("hidden-case variants", _hidden_case_variants)]
WRITTEN_HERE = []  # mistakes only the agreement test writes (Mutant)


def stand_ins(namespace):
    """The objects a check cell passes that no definition task defines: the generation check's cell passes a GPT
    built from the namespace's own class, untrained (the caller seeds the draw)."""
    return {"model": namespace["GPT"](**gpt_defaults.MODEL)}
