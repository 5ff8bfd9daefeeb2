"""The llm assignment's answers for tests/test_check_grade_agreement.py beyond its reference and planted mistakes: the
valid variants its check tests use (other formulations of every definition task). Its held-out mistakes
(unnamed_mistakes.py) are picked up by name."""
from agreement_cases import by_names
from course.mutant import Mutant


def _variants(ref):
    from . import attention_variants as attention, bpe_variants as bpe, layer_variants as layers, lora_variants as lora
    return by_names([(1, (bpe.heap_train_bpe,)), (1, (bpe.tuple_words_train_bpe,)), (2, (bpe.SequentialTokenizer,)),
                     (2, (bpe.ExplicitLoopTokenizer,)), (3, (layers.RsqrtRMSNorm,)), (3, (layers.TorchRMSNorm,)),
                     (3, (layers.UpcastRMSNorm,)), (4, (layers.SequentialGateSwiGLU,)), (4, (layers.HandSiluSwiGLU,))]
                    + [(5, (layer,)) for layer in attention.GQA_VARIANTS]
                    + [(6, (function,)) for function in attention.TILED_VARIANTS]
                    + [(8, (layer,)) for layer in lora.LORA_VARIANTS], True)


SOURCES = [("variants", _variants)]
# mistakes only the agreement test writes (Mutant); the check passed the first before its bias-free case, the grader not
WRITTEN_HERE = [Mutant(8, "lora_merge_assumes_a_bias", (
    ("bias=self.base.bias is not None)", ")"),
    ("            if self.base.bias is not None:\n                merged.bias.copy_(self.base.bias)\n",
     "            merged.bias.copy_(self.base.bias)\n")))]
