"""Task 3: the post-norm encoder block."""
import torch
import torch.nn as nn

from .._block_probes import explain_activation, explain_block
from .._dependencies import explain_parts, part_class
from .._compare import diagnose, expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import Diagnosis, check_function, expect_module_class, load_fixture
from .._modules import DROPOUT_IN_EVAL  # one sentence for every assignment's block
from .._modules import expect_gradients_everywhere, expect_native_output, expect_output, expect_unchanged, load
from ._student_errors import build
from .._weights import block_slots
from ._probes_generic import varies_in_train_mode
from ._probes_words import explain_aliased, explain_unused

ATOL, RTOL = 1e-6, 1e-6
DROPOUT_ON_RESIDUAL = Diagnosis(
    "dropout-on-residual",
    "dropout acts on the residual path too: with both sub-layers' outputs zero, dropout in train "
    "mode still changes the output; apply it to each sub-layer's output only, "
    "norm1(x + dropout(attention(x))).")
# The weights that make each sub-layer output zero: the attention's output projection, the feed-forward's last layer.
SUBLAYER_OUTPUTS = ("attention.o_proj.weight", "attention.o_proj.bias",
                    "feedforward.out.weight", "feedforward.out.bias")
# Sentences the known mistakes' diagnoses quote (course/transformer/mistakes.py).
PRE_NORM = Diagnosis(
    "pre-norm-instead-of-post-norm",
    "this is the pre-norm layout (LayerNorm before each sub-layer); the task asks for post-norm: x = norm1(x + "
    "dropout(attention(x))).")
NO_ATTENTION_RESIDUAL = Diagnosis(
    "no-residual-around-attention",
    "the residual connection around attention is missing: norm1(x + dropout(attention(x))).")
NO_FEEDFORWARD_RESIDUAL = Diagnosis(
    "no-residual-around-the-feed-forward-network",
    "the residual connection around the feed-forward network is missing: norm2(x + dropout(feedforward(x))).")
ONE_NORM_REUSED = Diagnosis(
    "one-layernorm-reused",
    "norm1 is used for both sub-layers; the feed-forward sub-layer needs its own norm2.")
SECOND_NORM_MISSING = Diagnosis(
    "second-layernorm-missing",
    "the LayerNorm after the feed-forward sub-layer (norm2) is missing.")
ACTIVATION_IGNORED = Diagnosis(
    "activation-argument-ignored",
    "the feed-forward network ignores the `activation` argument: build it with activation(), not a fixed nn.ReLU().")
FEEDFORWARD_ON_INPUT = Diagnosis(
    "feed-forward-applied-to-the-block-input",
    "the feed-forward network reads the block's input; it must read the output of the attention sub-layer.")
MASK_NOT_PASSED = Diagnosis(
    "mask-not-passed-to-attention",
    "the mask is not passed on to the attention.")


def _forward(task, block, x, what="EncoderBlock.forward", **kwargs):
    before = x.clone()
    result = task.call(what, block, x, **kwargs)
    expect_unchanged(task, before, x)
    return result


def _outputs(task, block, x, what="EncoderBlock(x)"):
    """block(x) checked to be one tensor of x's shape and dtype."""
    return expect_output(task, what, _forward(task, block, x), x.shape, x.dtype)


def _loaded_block(task, cls, fixture, case_name, dropout=0.0):
    activation = {"ReLU": nn.ReLU, "GELU": nn.GELU}[case_name]
    block = build(task, cls, "EncoderBlock", fixture["embed_dim"], fixture["num_heads"], fixture["feedforward_dim"],
                  activation=activation, dropout=dropout)
    return load(task, block, block_slots, fixture["cases"][case_name]["weights"], "EncoderBlock").eval()


def _expect_values(task, cls, block, fixture, case_name):
    x, case, what = fixture["x"], fixture["cases"][case_name], f"EncoderBlock (activation=nn.{case_name})"
    outputs = expect_output(task, what, _forward(task, block, x), x.shape, x.dtype)
    if not matches(outputs, case["outputs"], ATOL, RTOL):
        _explain(task, cls, block, fixture, case_name, outputs)
    expect_close(task, f"{what} output", outputs, case["outputs"], ATOL, RTOL, signatures(case, "outputs"))
    outputs, attention = expect_output(task, what, _forward(task, block, x, return_attention=True),
                                       x.shape, x.dtype, True)
    expect_tensor(task, f"{what} attention", attention, case["attention"].shape, x.dtype)
    _expect_close_or_blame_attention(task, block, f"{what} attention", attention, case, "attention")
    masked = expect_output(task, f"{what} with a mask", _forward(task, block, x, mask=fixture["mask"]),
                           x.shape, x.dtype)
    if torch.equal(masked, outputs) and not matches(masked, case["masked_outputs"], ATOL, RTOL):
        diagnose(task, f"{what} output with a causal mask", masked, signatures(case, "masked_outputs"), ATOL, RTOL)
        task.fail(f"{what}: a causal mask changes nothing in the output: pass `mask` on to self.attention.")
    _expect_close_or_blame_attention(task, block, f"{what} output with a causal mask", masked, case, "masked_outputs")


def _expect_close_or_blame_attention(task, block, what, got, case, key):
    """expect_close, but first name a known mistake, then an attention module that fails Task 2's check."""
    if not matches(got, case[key], ATOL, RTOL):
        expect_finite(task, what, got)
        diagnose(task, what, got, signatures(case, key), ATOL, RTOL)
        explain_parts(task, what, [("its attention module", 2, part_class(block, "attention"))], __package__)
    expect_close(task, what, got, case[key], ATOL, RTOL)


def _explain(task, cls, block, fixture, case_name, outputs):
    """Name a known mistake, or the first property of the post-norm block that fails."""
    x, case, what = fixture["x"], fixture["cases"][case_name], f"EncoderBlock (activation=nn.{case_name})"
    expect_finite(task, f"{what} output", outputs)
    diagnose(task, f"{what} output", outputs, signatures(case, "outputs"), ATOL, RTOL)
    explain_parts(task, what, [("its attention module", 2, part_class(block, "attention"))], __package__)
    explain_aliased(task, what, block)
    explain_unused(task, what, block, lambda module: module(x))
    sizes = fixture["embed_dim"], fixture["num_heads"], fixture["feedforward_dim"]
    explain_activation(task, what, lambda activation: build(task, cls, "EncoderBlock", *sizes, activation=activation)
                       .eval(), x, fixture["feedforward_dim"])
    explain_block(task, what, block, x, block_slots(block))


def _expect_dropout(task, cls, fixture):
    x = fixture["x"]
    block = _loaded_block(task, cls, fixture, "ReLU", dropout=0.0).train()
    torch.manual_seed(0)
    if not torch.equal(_outputs(task, block, x), _outputs(task, block, x)):
        task.fail("EncoderBlock(dropout=0.0) in train mode gave two different outputs for one input: something drops "
                  "values although dropout=0.0; create the dropout from the argument, nn.Dropout(dropout).")
    block = _loaded_block(task, cls, fixture, "ReLU", dropout=0.5)
    if not torch.equal(_outputs(task, block, x), _outputs(task, block, x)):
        task.fail(f"EncoderBlock(dropout=0.5) gave two different outputs for one input in eval mode: {DROPOUT_IN_EVAL}",
                  DROPOUT_IN_EVAL.slug)
    expect_close(task, "EncoderBlock(dropout=0.5) in eval mode (dropout must be off)", _outputs(task, block, x),
                 fixture["cases"]["ReLU"]["outputs"], ATOL, RTOL)
    block.train()
    torch.manual_seed(0)
    first, second = _outputs(task, block, x), _outputs(task, block, x)
    if torch.allclose(first, second):
        task.fail("with dropout=0.5 in train mode two forward passes gave the same output: is `dropout` used "
                  "(and created as nn.Dropout(dropout))?")
    expect_dropout_on_each_sublayer(task, "EncoderBlock(dropout=0.5)", block, x, block_slots)
    _expect_residual_path_kept(task, block, x)


def expect_dropout_on_each_sublayer(task, what, block, x, slots_of=block_slots):
    """With one sub-layer's output silenced, train-mode dropout must still change the output through the other."""
    silenced = {"the feed-forward network": SUBLAYER_OUTPUTS[2:], "attention": SUBLAYER_OUTPUTS[:2]}
    for other, (name, roles) in zip(reversed(silenced), silenced.items()):
        slots = slots_of(block)
        saved = {role: slots[role].detach().clone() for role in roles}
        try:
            with torch.no_grad():
                for role in roles:
                    slots[role].zero_()
            varies = varies_in_train_mode(block, x)
        finally:
            with torch.no_grad():
                for role, value in saved.items():
                    slots[role].copy_(value)
        if varies is False:
            task.fail(f"{what}: with the output of {name} set to zero, two passes in train mode give the same "
                      f"output: the output of {other} is not passed through dropout; apply self.dropout to each "
                      "sub-layer's output, x = norm1(x + dropout(attended)), x = norm2(x + dropout(feedforward(x))).")
    block.eval()


def _expect_residual_path_kept(task, block, x, slots_of=block_slots):
    """With both sub-layers silenced, train-mode dropout must not change the output: it belongs on the sub-layers."""
    slots = slots_of(block)
    with torch.no_grad():
        for role in SUBLAYER_OUTPUTS:
            slots[role].zero_()
    block.train()
    torch.manual_seed(1)
    first, second = _outputs(task, block, x), _outputs(task, block, x)
    if not torch.allclose(first, second, atol=ATOL):
        task.fail(f"EncoderBlock(dropout=0.5): {DROPOUT_ON_RESIDUAL}", DROPOUT_ON_RESIDUAL.slug)


def _expect_permutation_equivariant(task, block, x):
    permutation = torch.randperm(x.size(1), generator=torch.Generator().manual_seed(0))
    shuffled_outputs = _outputs(task, block, x[:, permutation])
    if not torch.allclose(_outputs(task, block, x)[:, permutation], shuffled_outputs, atol=ATOL):
        task.fail("shuffling the input positions should shuffle the outputs the same way (no positional "
                  "information inside the block): does something depend on the position index?")


@check_function(3)
def check_task_3(task, EncoderBlock):
    """Check EncoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout)."""
    expect_module_class(task, EncoderBlock, "EncoderBlock")
    fixture = load_fixture(__package__, 3)
    for case_name in ("ReLU", "GELU"):
        block = _loaded_block(task, EncoderBlock, fixture, case_name)
        _expect_values(task, EncoderBlock, block, fixture, case_name)
    _expect_permutation_equivariant(task, block, fixture["x"])
    _expect_dropout(task, EncoderBlock, fixture)
    inputs = fixture["x"].clone().requires_grad_(True)
    expect_gradients_everywhere(task, block, _outputs(task, block, inputs).pow(2).sum(), inputs, "EncoderBlock")
    sizes = fixture["embed_dim"], fixture["num_heads"], fixture["feedforward_dim"]
    single = build(task, EncoderBlock, "EncoderBlock", *sizes, dtype=torch.float32, native=True)
    single = load(task, single, block_slots, fixture["cases"]["ReLU"]["weights"], "EncoderBlock").eval()
    expect_native_output(task, single, "EncoderBlock", "EncoderBlock on float32 input",
                         lambda: _forward(task, single, fixture["x"].float()), fixture["cases"]["ReLU"]["outputs"])
    task.passed("post-norm residual layout, activation, masks, dropout, gradients and dtypes are right.")
