"""Honest answers written independently, for tests/test_similarity.py: {answer cell's grade_id: [its source, one per
student]}, from this assignment's valid variants (each a different formulation, no two students given the same)."""
import inspect

from . import valid_variants as variants

CELLS = {"task_1_attention": variants.ATTENTIONS, "task_2_multihead_attention": variants.MULTIHEADS,
         "task_3_encoder_block": variants.BLOCKS, "task_4_positional_encoding": variants.POSITIONALS,
         "task_5_classifier": variants.CLASSIFIERS}
HONEST = {grade_id: [inspect.getsource(answer) for answer in answers] for grade_id, answers in CELLS.items()}
