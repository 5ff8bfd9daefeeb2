"""check_task_4 both ways on two things a train-mode difference or a size mismatch used to hide: a sub-layer whose
output gets no dropout is named (valid dropout layouts still pass), and a sub-layer given the wrong queries, context
or mask is named instead of a raw PyTorch size-mismatch error."""
import pytest

from checkers.seq2seq import CheckFailure, check_task_4
from checkers.seq2seq import decoder
from course.mutant import Mutant
from course.seq2seq.mistakes import MUTANTS
from .checks import reference, variant
from .layers_variants import make_decoder_blocks

pytestmark = pytest.mark.fast

NORM1 = "x = self.norm1(x + self.dropout(attended))\n        attended, cross_weights"
NORM2 = "x = self.norm2(x + self.dropout(attended))"
FFN = "x = self.norm3(x + self.dropout(self.feedforward(x)))"
CROSS_CALL = "x, context=memory, mask=memory_mask, return_attention=True)"
SELF_CALL = "self.self_attention(x, mask=self_mask, return_attention=True)"

NO_DROPOUT = {  # each sub-layer's dropout left out on its own
    "self_attention": (NORM1, NORM1.replace("self.dropout(attended)", "attended")),
    "cross_attention": (NORM2, NORM2.replace("self.dropout(attended)", "attended")),
    "feedforward": (FFN, "x = self.norm3(x + self.feedforward(x))"),
}


def failure(edits):
    namespace = variant(Mutant(4, "probe", edits).apply)
    with pytest.raises(CheckFailure) as raised:
        check_task_4(namespace["DecoderBlock"])
    message = str(raised.value)
    assert message.startswith("Task 4") and "\n" not in message and "could not run" not in message, message
    return message


@pytest.mark.parametrize("name", NO_DROPOUT)
def test_a_sub_layer_without_dropout_is_named(name):
    message = failure((NO_DROPOUT[name],))
    assert f"the output of {name} gets no dropout" in message, message
    assert decoder.SUBLAYER_FORMULAS[name] in message, message


WIRING = {
    "queries from the memory": ((CROSS_CALL, CROSS_CALL.replace("x, context=memory", "memory, context=x")),
                                decoder.CROSS_QUERIES_FROM_MEMORY),
    "no context": ((CROSS_CALL, CROSS_CALL.replace("x, context=memory,", "x,")), decoder.CROSS_NO_CONTEXT),
    "context given positionally as x": ((CROSS_CALL, CROSS_CALL.replace("x, context=memory,", "x, x,")),
                                        decoder.CROSS_CONTEXT_NOT_MEMORY),
    "self_mask in the cross-attention": ((CROSS_CALL, CROSS_CALL.replace("mask=memory_mask", "mask=self_mask")),
                                         decoder.CROSS_GETS_SELF_MASK),
    "memory_mask in the self-attention": ((SELF_CALL, SELF_CALL.replace("mask=self_mask", "mask=memory_mask")),
                                          decoder.SELF_GETS_MEMORY_MASK),
    "both masks swapped": ((SELF_CALL, SELF_CALL.replace("mask=self_mask", "mask=memory_mask")),
                           (CROSS_CALL, CROSS_CALL.replace("mask=memory_mask", "mask=self_mask"))),
}


@pytest.mark.parametrize("name", WIRING)
def test_a_sub_layer_given_the_wrong_input_is_named(name):
    *edits, sentence = WIRING[name]
    if not isinstance(sentence, str):  # two edits: the first sub-layer that runs is named
        edits, sentence = [*edits, sentence], decoder.SELF_GETS_MEMORY_MASK
    message = failure(tuple(edits))
    assert sentence in message and "must match the size" not in message, message


def test_the_catalogue_plants_the_new_mistakes():
    names = {mutant.name for mutant in MUTANTS if mutant.task == 4}
    assert {"no dropout on the feed-forward output", "no dropout on the self-attention output",
            "cross-attention queries from the memory", "cross-attention without context",
            "self_mask in the cross-attention", "memory_mask in the self-attention"} <= names


@pytest.mark.parametrize("index", [0, 1], ids=["one dropout per sub-layer", "dropout inside the feed-forward too"])
def test_valid_dropout_layouts_still_pass(index, capsys):
    ref = reference()
    check_task_4(make_decoder_blocks(ref["MultiheadAttention"], ref["LayerNorm"])[index])
    assert capsys.readouterr().out.startswith("✓ Task 4 passed")


def test_dropout_only_inside_the_feed_forward_passes(capsys):
    """nn.Dropout between the feed-forward network's layers instead of on its output still drops its output's
    inputs at random: a layout choice, not a missing dropout."""
    inner = (("nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, embed_dim))",
              "nn.Linear(embed_dim, feedforward_dim), activation(), nn.Dropout(dropout), "
              "nn.Linear(feedforward_dim, embed_dim))"), NO_DROPOUT["feedforward"])
    check_task_4(variant(Mutant(4, "inner dropout only", inner).apply)["DecoderBlock"])
    assert capsys.readouterr().out.startswith("✓ Task 4 passed")
