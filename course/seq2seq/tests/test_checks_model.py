"""check_task_5 (the seq2seq model) both ways: the reference and other correct models pass, known mistakes fail with
their names, a wrong Task 1-4 part is blamed on its task, bad input is answered cleanly, within a second."""
import math

import pytest
import torch
import torch.nn as nn

from checkers.seq2seq import CheckFailure, NotImplementedYet, check_task_1, check_task_4, check_task_5
from course.mutant import Mutant
from course.seq2seq.mistakes import MUTANTS
from .checks import cpu_seconds, expect_named, reference, variant


TASK_5 = [mutant for mutant in MUTANTS if mutant.task == 5]


@pytest.mark.fast
def test_reference_passes(capsys):
    check_task_5(reference()["Seq2SeqTransformer"])
    assert capsys.readouterr().out.startswith("✓ Task 5 passed")


@pytest.mark.fast
@pytest.mark.parametrize("mutant", TASK_5, ids=lambda m: m.name)
def test_known_mistake_fails_with_its_name(mutant):
    with pytest.raises(CheckFailure, match="^Task 5: ") as failure:
        check_task_5(variant(mutant)["Seq2SeqTransformer"])
    expect_named(failure.value, mutant)


@pytest.mark.fast
def test_at_least_the_mistakes_the_issue_names_are_planted():
    names = {mutant.name for mutant in TASK_5}
    assert {"decoder sees the next token", "no causal mask in decode", "memory padding ignored in the cross-attention",
            "source padding ignored in the encoder", "embedding not scaled", "embedding scaled twice",
            "embedding scaled by embed_dim", "separate target embedding", "positional encoding missing on the target",
            "positional encoding missing on the source", "output layer missing",
            "output layer applied to the memory"} <= names


# ----- correct models written differently ----------------------------------------------------------------

def alternative_model(ns):
    """Seq2SeqTransformer in another style: ** 0.5, blocks built decoder-first in loops, inline masks, helpers."""
    class Seq2Seq(nn.Module):
        def __init__(self, vocab_size, embed_dim, num_heads, feedforward_dim, num_encoder_layers,
                     num_decoder_layers, max_len=512, activation=nn.ReLU, dropout=0.0, pad_id=0):
            super().__init__()
            self.decoder = nn.ModuleList()
            for _ in range(num_decoder_layers):
                self.decoder.append(ns["DecoderBlock"](embed_dim, num_heads, feedforward_dim, activation, dropout))
            self.encoder = nn.ModuleList()
            for _ in range(num_encoder_layers):
                self.encoder.append(ns["EncoderBlock"](embed_dim, num_heads, feedforward_dim, activation, dropout))
            self.output = nn.Linear(embed_dim, vocab_size)
            self.positional_encoding = ns["PositionalEncoding"](embed_dim, max_len)
            self.embedding = nn.Embedding(vocab_size, embed_dim, pad_id)
            self.pad_id = pad_id

        def _embed(self, tokens):
            return self.positional_encoding(self.embedding(tokens) * self.embedding.embedding_dim ** 0.5)

        def _keys(self, source):
            return (source != self.pad_id).unsqueeze(1).unsqueeze(2)

        def _encode(self, source):
            x, maps = self._embed(source), []
            for block in self.encoder:
                x, weights = block(x, mask=self._keys(source), return_attention=True)
                maps.append(weights)
            return x, maps

        def _decode(self, target_input, memory, source):
            length = target_input.shape[1]
            causal = torch.tril(torch.ones(length, length, device=target_input.device)).bool()
            x, selfs, crosses = self._embed(target_input), [], []
            for block in self.decoder:
                x, self_weights, cross_weights = block(x, memory, causal, self._keys(source), True)
                selfs.append(self_weights)
                crosses.append(cross_weights)
            return self.output(x), selfs, crosses

        def encode(self, source):
            return self._encode(source)[0]

        def decode(self, target_input, memory, source):
            return self._decode(target_input, memory, source)[0]

        def forward(self, source, target_input):
            return self.decode(target_input, self.encode(source), source)

        def forward_attention(self, source, target_input):
            memory, encoder = self._encode(source)
            _, selfs, crosses = self._decode(target_input, memory, source)
            return dict(decoder_cross=crosses, decoder_self=selfs, encoder=encoder)

    return Seq2Seq


def torch_sqrt_model(ns):
    """The reference with the √embed_dim scale computed once in __init__, the padding mask built inline in encode,
    and one more dropout (on the embedded source) that eval mode switches off."""
    base = ns["Seq2SeqTransformer"]

    class Scaled(base):
        def __init__(self, *args, dropout=0.0, **kwargs):
            super().__init__(*args, dropout=dropout, **kwargs)
            self.scale = math.sqrt(self.embedding.embedding_dim)
            self.embedding_dropout = nn.Dropout(dropout)

        def encode(self, source, attention=None):
            mask = (source != self.pad_id)[:, None, None, :]
            x = self.embedding_dropout(self.positional_encoding(self.embedding(source) * self.scale))
            for block in self.encoder:
                x, weights = block(x, mask=mask, return_attention=True)
                if attention is not None:
                    attention.append(weights)
            return x

    return Scaled


@pytest.mark.fast
@pytest.mark.parametrize("build", [alternative_model, torch_sqrt_model])
def test_valid_variant_passes(build, capsys):
    check_task_5(build(reference()))
    assert capsys.readouterr().out.startswith("✓ Task 5 passed")


# ----- a wrong part of Tasks 1-4 is blamed on its task --------------------------------------------------------

PART_MISTAKES = [
    (4, Mutant(4, "no residual around the feed-forward network",
               (("x = self.norm3(x + self.dropout(self.feedforward(x)))",
                 "x = self.norm3(self.dropout(self.feedforward(x)))"),))),
    (1, Mutant(1, "unbiased variance", (("var = (centered * centered).mean(dim=-1, keepdim=True)",
                                          "var = centered.var(dim=-1, keepdim=True)"),))),
]


@pytest.mark.fast
@pytest.mark.parametrize("task, mutant", PART_MISTAKES, ids=lambda value: getattr(value, "name", value))
def test_a_wrong_part_is_blamed_on_its_task(task, mutant):
    ns = variant(mutant)
    part_check, part = {4: (check_task_4, "DecoderBlock"), 1: (check_task_1, "LayerNorm")}[task]
    try:
        part_check(reference()[part])
    except NotImplementedError:
        pytest.skip(f"check_task_{task} is not written yet on this branch")
    with pytest.raises(CheckFailure, match="^Task 5: ") as failure:
        check_task_5(ns["Seq2SeqTransformer"])
    assert f"does not pass check_task_{task}" in str(failure.value) and f"fix Task {task} first" in str(failure.value)


# ----- bad input ----------------------------------------------------------------------------------------

def _with(ns, **methods):
    return type("Seq2SeqTransformer", (ns["Seq2SeqTransformer"],), methods)


def _not_implemented(self, *args, **kwargs):
    raise NotImplementedError()


class Stub(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, source, target_input):
        raise NotImplementedError()


BAD = {
    "None": (lambda ns: None, "got None instead of the class"),
    "an instance": (lambda ns: ns["Seq2SeqTransformer"](11, 8, 2, 16, 1, 1), "got an object of class"),
    "not a module": (lambda ns: dict, "not an nn.Module"),
    "NaN memory": (lambda ns: _with(ns, encode=lambda self, source: torch.full(
        (*source.shape, self.embed_dim), float("nan"), dtype=torch.float64)), "NaN"),
    "decode returns a tuple": (lambda ns: _with(ns, decode=lambda self, t, m, s: (t, m)), "should be a torch.Tensor"),
    "encode raises": (lambda ns: _with(ns, encode=lambda self, source: source.foo()), "raised AttributeError"),
    "no forward_attention": (lambda ns: _with(ns, forward_attention=None), "has no method forward_attention"),
    "forward_attention returns a list": (lambda ns: _with(ns, forward_attention=lambda self, s, t: [s]),
                                         "should return a dict with the keys"),
}


@pytest.mark.fast
@pytest.mark.parametrize("kind", BAD)
def test_bad_input_fails_cleanly(kind):
    make, words = BAD[kind]
    with pytest.raises(CheckFailure, match="^Task 5: ") as failure:
        check_task_5(make(reference()))
    assert words in str(failure.value)


@pytest.mark.fast
@pytest.mark.parametrize("make", [lambda ns: Stub, lambda ns: _with(ns, decode=_not_implemented)],
                         ids=["constructor creates no layers", "decode raises NotImplementedError"])
def test_not_implemented_is_reported_as_such(make):
    with pytest.raises(NotImplementedYet, match="^Task 5 is not implemented yet"):
        check_task_5(make(reference()))


@pytest.mark.full
@pytest.mark.parametrize("name", ["reference", "decoder sees the next token", "separate target embedding"])
def test_check_takes_under_a_second(name):
    cls = reference()["Seq2SeqTransformer"] if name == "reference" else \
        variant(next(m for m in TASK_5 if m.name == name))["Seq2SeqTransformer"]

    def run():
        try:
            check_task_5(cls)
        except CheckFailure:
            pass
    assert cpu_seconds(run) <= 1.0


# ----- mistakes without a stored output are explained by the probes --------------------------------------------

LAST_KEY = " | (torch.arange(source.size(1)) == source.size(1) - 1)"  # the last source position never masked
PROBED = {
    "decoder sees two tokens ahead": (
        ("self_mask = causal_mask(target_input.size(1), device=target_input.device)",
         "self_mask = torch.ones(target_input.size(1), target_input.size(1), dtype=torch.bool).tril(2)"),
        "the decoder reads the future"),
    "cross-attention sees the last PAD": (
        ("memory_mask = padding_mask(source, self.pad_id)",
         "memory_mask = padding_mask(source, self.pad_id)" + LAST_KEY),
        "the cross-attention attends to padded source positions"),
    "encoder sees the last PAD": (
        ("mask = padding_mask(source, self.pad_id)  # (B, 1, 1, S)\n"
         "        x = self.positional_encoding(self.embedding(source)",
         "mask = padding_mask(source, self.pad_id)" + LAST_KEY
         + "\n        x = self.positional_encoding(self.embedding(source)"),
        "the encoder attends to padding"),
}


@pytest.mark.fast
@pytest.mark.parametrize("name", PROBED)
def test_unrecorded_mistake_is_explained_by_a_probe(name):
    edit, words = PROBED[name]
    cls = variant(Mutant(5, name, (edit,)))["Seq2SeqTransformer"]
    with pytest.raises(CheckFailure, match="^Task 5: ") as failure:
        check_task_5(cls)
    assert words in str(failure.value)


# ----- masking padded target keys too is valid; source padding stays tested ---------------------------------

CAUSAL = "self_mask = causal_mask(target_input.size(1), device=target_input.device)"
TARGET_PADDING_MASKED = Mutant(5, "padded target keys masked too", ((
    CAUSAL, CAUSAL + " & padding_mask(target_input, self.pad_id)"),))


@pytest.mark.fast
def test_a_decoder_that_also_masks_padded_target_keys_passes(capsys):
    """What nn.Transformer's tgt_key_padding_mask does: it changes only the logits at PAD inputs, which the loss
    ignores and greedy decoding never reads."""
    check_task_5(variant(TARGET_PADDING_MASKED)["Seq2SeqTransformer"])
    assert capsys.readouterr().out.startswith("✓ Task 5 passed")


@pytest.mark.fast
def test_the_fixture_pads_its_sources_not_its_decoder_inputs():
    from checkers._core import load_fixture
    for case in load_fixture("checkers.seq2seq", 5)["cases"].values():
        pad_id = case["config"]["pad_id"]
        assert (case["source"] == pad_id).any(dim=1).sum() >= 2  # source padding is what the masks are tested on
        assert not (case["target_input"] == pad_id).any()


# ----- a swapped memory or memory_mask is named instead of a raw size mismatch ----------------------------------

SWAPPED = {
    "memory_mask from target_input": (("memory_mask = padding_mask(source, self.pad_id)",
                                       "memory_mask = padding_mask(target_input, self.pad_id)"),
                                      "MEMORY_MASK_FROM_TARGET"),
    "block(x, x, ...)": (("block(x, memory, self_mask", "block(x, x, self_mask"), "BLOCK_MEMORY_IS_X"),
    "block given the embedded source as memory": (
        ("block(x, memory, self_mask", "block(x, self.embedding(source), self_mask"), "BLOCK_MEMORY_NOT_GIVEN"),
    "pad id 0 hard-coded": (("padding_mask(source, self.pad_id)", "padding_mask(source, 0)"), "PAD_ID_HARD_CODED"),
}


@pytest.mark.fast
@pytest.mark.parametrize("name", SWAPPED)
def test_a_swapped_memory_or_mask_is_named(name):
    from checkers.seq2seq import model as checks
    edit, sentence = SWAPPED[name]
    with pytest.raises(CheckFailure, match="^Task 5: ") as failure:
        check_task_5(variant(Mutant(5, name, (edit,)))["Seq2SeqTransformer"])
    message = str(failure.value)
    expected = getattr(checks, sentence)
    if sentence == "PAD_ID_HARD_CODED":
        expected = expected.format(found=0, pad_id=3)
        assert "should store the pad_id argument" not in message, message
    assert expected in message and "must match the size" not in message, message
