"""Honest answers written independently, for tests/test_similarity.py: {answer cell's grade_id: [its source, one per
student]}, from this assignment's valid variants (each a different formulation, no two students given the same)."""
import inspect

from . import layers_variants as variants

HONEST = {"task_1_layer_norm": [inspect.getsource(answer) for answer in variants.LAYER_NORMS],
          "task_2_masks": ["\n\n".join(inspect.getsource(function) for function in pair) for pair in variants.MASKS]}
