"""The transformer's answers for tests/test_check_grade_agreement.py beyond its reference and planted mistakes: the
unnamed mistakes and the valid variants of its own tests."""
from agreement_cases import by_names


def _unnamed(ref):
    from . import unnamed_mistakes
    return by_names([(task, objects) for task, objects, _ in unnamed_mistakes.UNNAMED], False)


def _variants(ref):
    from . import valid_variants as alt
    return by_names([(1, (f,)) for f in alt.ATTENTIONS] + [(2, (c,)) for c in alt.MULTIHEADS] +
                    [(3, (c,)) for c in alt.BLOCKS] + [(4, (c,)) for c in alt.POSITIONALS] +
                    [(5, (c,)) for c in alt.CLASSIFIERS] + [(7, classes) for classes in alt.LINFORMERS], True)


SOURCES = [("unnamed", _unnamed), ("variants", _variants)]  # (label, reference namespace -> [Case])
WRITTEN_HERE = []  # mistakes only the agreement test writes (Mutant)
