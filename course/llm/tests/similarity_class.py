"""Honest answers written independently, for tests/test_similarity.py: {answer cell's grade_id: [its source, one per
student]}, from this assignment's valid variants (each a different formulation, no two students given the same)."""
import inspect

from . import bpe_variants as bpe, layer_variants as layers

HONEST = {"task_1_train_bpe": [inspect.getsource(answer) for answer in (bpe.heap_train_bpe, bpe.tuple_words_train_bpe)],
          "task_2_bpe_tokenizer": [inspect.getsource(answer) for answer in (bpe.SequentialTokenizer,
                                                                             bpe.ExplicitLoopTokenizer)],
          "task_3_rms_norm": [inspect.getsource(answer) for answer in (layers.RsqrtRMSNorm, layers.UpcastRMSNorm)]}
