"""Facts the grader records of the vit assignment's modules, as plain data (how to read them, nothing of what they
should be): a case names one as "checkers.vit._facts:<function>"."""
from .._facts import parameter_facts


def cls_token(module):
    """How a patch embedding keeps its [CLS] embedding `cls_token` (see parameter_facts)."""
    return parameter_facts(module, "cls_token")
