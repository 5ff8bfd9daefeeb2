"""The vit assignment's answers for tests/test_check_grade_agreement.py beyond its reference and planted mistakes: its
tests' unnamed mistakes, valid variants and hidden-case variants."""
from agreement_cases import by_names, mutants


def _unnamed(ref):
    from .test_checks_layers import UNNAMED
    return by_names([(task, (obj,)) for task, obj, _ in UNNAMED], False)


def _variants(ref):
    from . import layers_variants as layers, model_variants as models
    return by_names([(1, (f,)) for f in layers.PATCHIFIES] + [(2, (c,)) for c in layers.EMBEDDINGS] +
                    [(3, (build(ref),)) for build in (models.model_with_a_shared_helper, models.model_with_hooks,
                                                      models.model_norming_every_token)] +
                    [(5, (f,)) for f in (models.rollout_half_and_half, models.rollout_from_the_identity,
                                         models.rollout_by_reduce)], True)


def _hidden_case_variants(ref):
    from .test_hidden_cases import VALID
    return mutants(True)(VALID)


SOURCES = [("unnamed", _unnamed), ("variants", _variants), ("hidden-case variants", _hidden_case_variants)]
WRITTEN_HERE = []  # mistakes only the agreement test writes (Mutant)
