"""Task 4: the pre-norm GPT block, its cache passed through, its activation and dropout."""
import torch
import torch.nn as nn

from .._block_probes import _output, _set, explain_activation
from .._compare import diagnose, expect_close, expect_finite, expect_pair, expect_tensor, matches, signatures
from .._core import Diagnosis, check_function, expect_module_class, load_fixture
from .._dependencies import explain_parts, part_class
from .._modules import DROPOUT_IN_EVAL  # one sentence for every assignment's block
from .._modules import build, expect_gradients_everywhere, expect_native_output, expect_unchanged, load
from .._weights import MissingPart
from ._cache_branch import call_with_cache
from ._probes_generic import dropout_rates
from ._roles import block_slots, same_cache

ATOL, RTOL = 1e-6, 1e-6
NAME = "GPTBlock"
ATTENTION_FORMULA = "x = x + dropout(attention(norm1(x)))"  # formulas the sentences quote, not mistakes
FEEDFORWARD_FORMULA = "x = x + dropout(feedforward(norm2(x)))"
# Sentences the known mistakes' diagnoses quote (course/gpt/mistakes.py).
POST_NORM = Diagnosis(
    "post-norm",
    "the block is post-norm (each LayerNorm after its residual sum); a GPT block is pre-norm, the residual "
    f"stream untouched by any norm: {ATTENTION_FORMULA}, then {FEEDFORWARD_FORMULA}.")
POST_NORM_ATTENTION = Diagnosis(
    "post-norm-attention",
    "the attention sub-layer is post-norm (norm1 applied after the residual sum); it is pre-norm: "
    f"{ATTENTION_FORMULA}.")
POST_NORM_FEEDFORWARD = Diagnosis(
    "post-norm-feed-forward",
    "the feed-forward sub-layer is post-norm (norm2 applied after the residual sum); it is "
    f"pre-norm: {FEEDFORWARD_FORMULA}.")
NO_RESIDUAL = Diagnosis(
    "no-residual",
    "the residual connection around {name} is missing: add the sub-layer's output to x, {formula}.")
NORMS_SWAPPED = Diagnosis(
    "norms-swapped",
    "norm1 and norm2 are swapped: norm1 normalises the attention's input, norm2 the feed-forward "
    f"network's ({ATTENTION_FORMULA}; {FEEDFORWARD_FORMULA}).")
ACTIVATION_IGNORED = Diagnosis(  # what the stored outputs of a block that never calls `activation` are named by
    "activation-argument-ignored",
    "the `activation` argument is never called")
CACHE_NOT_PASSED = Diagnosis(
    "cache-not-passed",
    "the block does not pass its `cache` argument on to the attention: call "
    "self.attention(self.norm1(x), cache=cache) and return the cache it gives back.")
CACHE_NOT_RETURNED = Diagnosis(
    "cache-not-returned",
    "the block does not return the attention's new cache: return (x, new_cache) with new_cache the "
    "second output of self.attention(...).")
DROPOUT_ON_RESIDUAL = Diagnosis(
    "dropout-on-the-residual-stream",
    "dropout acts on the residual stream too: with both sub-layers' outputs zero, dropout in train "
    "mode still changes the output; apply it to each sub-layer's output only, "
    f"{ATTENTION_FORMULA}.")
NO_SUBLAYER_DROPOUT = Diagnosis(
    "no-sublayer-dropout",
    "the output of {name} gets no dropout: with dropout=0.5 in train mode and the other sub-layer's "
    "output set to zero, two forward passes give the same output; apply self.dropout to it before "
    "the residual sum, {formula}.")
STREAM_NORMALISED = ("with both sub-layers' outputs set to zero the block should return x unchanged (pre-norm leaves "
                     "the residual stream alone), but it does not: a LayerNorm acts on the residual stream; normalise "
                     f"only each sub-layer's input, {ATTENTION_FORMULA}, then {FEEDFORWARD_FORMULA}.")
SUBLAYERS = {"the attention": (("attention.o_proj.weight", "attention.o_proj.bias"), ATTENTION_FORMULA),
             "the feed-forward network": (("feedforward.out.weight", "feedforward.out.bias"), FEEDFORWARD_FORMULA)}


def _run(task, block, x, cache=None, what=NAME):
    """(output (B, L, D), new_cache) of block(x, cache), x left unchanged."""
    before = x.clone()
    result = task.call(f"{NAME}.forward", block, x) if cache is None else \
        call_with_cache(task, f"{NAME}.forward", block, getattr(block, "attention", None), cache, cache, x)
    expect_unchanged(task, before, x)
    outputs, new_cache = expect_pair(task, what, result, "(x, new_cache)")
    expect_tensor(task, f"{what}: output", outputs, x.shape, x.dtype)
    return outputs, new_cache


def _structure(task, block):
    """norm1 and norm2 LayerNorms, the student's attention, a two-Linear feed-forward network: their roles."""
    for name in ("norm1", "norm2"):
        if not isinstance(getattr(block, name, None), nn.LayerNorm):
            found = type(getattr(block, name, None)).__name__ if hasattr(block, name) else "nothing"
            task.fail(f"{NAME}.{name} should be an nn.LayerNorm(embed_dim), found {found}.")
    if isinstance(getattr(block, "attention", None), nn.MultiheadAttention):
        task.fail(f"{NAME}.attention is torch's nn.MultiheadAttention: use your CausalSelfAttention (Tasks 2-3).")
    if block.norm1 is block.norm2:
        task.fail(f"{NAME}.norm1 and norm2 are the same module: each needs its own LayerNorm, with its own weights.")
    try:
        return block_slots(block)
    except MissingPart as missing:
        task.fail(f"{NAME}: {missing}.", missing.diagnosis)


def _explain_build(task, cls, sizes, activation):
    """A block that cannot be built with the activation class but can with an object of it: the class is never
    called."""
    try:
        cls(*sizes, activation=activation)
        return
    except Exception:  # noqa: BLE001 -- only a probe: the build below reports the error itself
        pass
    try:
        cls(*sizes, activation=activation())
    except Exception:  # noqa: BLE001 -- only a probe
        return
    task.fail(f"{NAME}(..., activation=nn.{activation.__name__}) fails but builds when given the object "
              f"nn.{activation.__name__}(): `activation` is a class, so create the module by calling it, "
              "nn.Sequential(nn.Linear(embed_dim, feedforward_dim), activation(), nn.Linear(feedforward_dim, "
              "embed_dim)).")


def _expect_hidden_width(task, block, embed_dim, feedforward_dim):
    """The feed-forward network's first Linear has feedforward_dim outputs."""
    first = next((part for part in getattr(block, "feedforward", nn.Module()).modules()
                  if isinstance(part, nn.Linear)), None)
    if first is not None and first.out_features != feedforward_dim:
        times = f" = {first.out_features // embed_dim}·embed_dim" if first.out_features % embed_dim == 0 else ""
        task.fail(f"{NAME}(embed_dim={embed_dim}, feedforward_dim={feedforward_dim}): the feed-forward network's "
                  f"first Linear has {first.out_features}{times} outputs: its hidden width is the `feedforward_dim` "
                  "argument, nn.Linear(embed_dim, feedforward_dim).")


def _loaded(task, cls, fixture, activation, dropout=0.0, dtype=torch.float64):
    sizes = (fixture["embed_dim"], fixture["num_heads"], fixture["feedforward_dim"], fixture["max_len"])
    _explain_build(task, cls, sizes, getattr(nn, activation))
    block = build(task, cls, NAME, *sizes, activation=getattr(nn, activation), dropout=dropout, dtype=dtype,
                  native=dtype != torch.float64)
    _structure(task, block)
    _expect_hidden_width(task, block, fixture["embed_dim"], fixture["feedforward_dim"])
    return load(task, block, block_slots, fixture["cases"][activation]["weights"], NAME).eval()


def _explain(task, cls, block, fixture, what, got, case, key, attention_task):
    """Fail naming a failing attention (Task 2 or 3), a known mistake, or an ignored activation."""
    expect_finite(task, what, got)
    explain_parts(task, what, [("its attention module", attention_task, part_class(block, "attention"))],
                  __package__)
    diagnose(task, what, got, signatures(case, key), ATOL, RTOL)
    _explain_layout(task, block, fixture["x"] if key == "outputs" else fixture["x"][:, fixture["prefix"]:], what)
    sizes = (fixture["embed_dim"], fixture["num_heads"], fixture["feedforward_dim"], fixture["max_len"])
    explain_activation(task, what, lambda act: build(task, cls, NAME, *sizes, activation=act).eval(), fixture["x"],
                       fixture["feedforward_dim"])


def _explain_layout(task, block, x, what):
    """Fail naming a normalised residual stream, a missing residual or swapped norms, from probes that silence
    sub-layers (their output projections set to zero) on the eval-mode block, without a cache."""
    slots = block_slots(block)
    (attention_roles, _), (feedforward_roles, _) = SUBLAYERS.values()
    with _set(slots, dict.fromkeys(attention_roles + feedforward_roles, 0.0)):
        silent = _output(block, x)
    if silent is None or silent.shape != x.shape:
        return
    with _set(slots, dict.fromkeys(attention_roles, 0.0)):
        moved = x + torch.linspace(-1, 1, x.numel(), dtype=x.dtype).view_as(x)  # not a shift LayerNorm removes
        shifted = _output(block, moved)  # the feed-forward alone: the output follows x through the residual
        still = _output(block, x)
    with _set(slots, dict.fromkeys(feedforward_roles, 0.0)):
        attended = _output(block, x)
        with _set(slots, {"norm2.weight": 2.0, "norm2.bias": 0.5}):
            renormed = _output(block, x)
    if still is not None and shifted is not None and torch.allclose(still, shifted, atol=1e-9):
        task.fail(f"{what}: " + NO_RESIDUAL.format(name="the attention", formula=ATTENTION_FORMULA), NO_RESIDUAL.slug)
    if attended is not None and torch.allclose(attended, torch.zeros_like(attended), atol=1e-12):
        task.fail(f"{what}: " + NO_RESIDUAL.format(name="the feed-forward network", formula=FEEDFORWARD_FORMULA),
                  NO_RESIDUAL.slug)
    if not torch.allclose(silent, x, atol=1e-9):
        task.fail(f"{what}: {STREAM_NORMALISED}")
    if attended is not None and renormed is not None and not torch.allclose(attended, renormed, atol=1e-9):
        task.fail(f"{what}: {NORMS_SWAPPED}", NORMS_SWAPPED.slug)
    _explain_feedforward_input(task, block, slots, x, attended, still, what)


def _explain_feedforward_input(task, block, slots, x, attended, fed, what):
    """Name a norm2 that changes nothing, or a feed-forward network that reads the block's input: the output is then
    x plus the attention's part plus the feed-forward's part, each measured with the other silenced."""
    whole = _output(block, x)
    with _set(slots, {"norm2.weight": 2.0, "norm2.bias": 0.5}):
        renormed = _output(block, x)
    if whole is None or renormed is None:
        return
    if torch.allclose(whole, renormed, atol=1e-9):
        task.fail(f"{what}: changing norm2's weight and bias changes nothing in the output, so norm2 is never used: "
                  f"the feed-forward network reads norm2 of the stream, {FEEDFORWARD_FORMULA}.")
    if attended is not None and fed is not None and torch.allclose(whole, attended + fed - x, atol=1e-9):
        task.fail(f"{what}: the output is x + (the attention's part) + (the feed-forward's part) exactly, so the "
                  "feed-forward network reads the block's input, not the stream after the attention: add the "
                  f"attention's output first, {ATTENTION_FORMULA}, then {FEEDFORWARD_FORMULA}.")


def _expect_outputs(task, cls, block, fixture, activation):
    """The output without a cache, and the cache the attention gave back, returned unchanged."""
    case, what = fixture["cases"][activation], f"{NAME} (activation=nn.{activation})"
    returned = []
    hook = block.attention.register_forward_hook(lambda module, args, result: returned.append(result))
    try:
        outputs, new_cache = _run(task, block, fixture["x"], what=what)
    finally:
        hook.remove()
    if not matches(outputs, case["outputs"], ATOL, RTOL):
        _explain(task, cls, block, fixture, f"{what}: output", outputs, case, "outputs", 2)
    expect_close(task, f"{what}: output", outputs, case["outputs"], ATOL, RTOL)
    given = returned[-1][1] if returned and isinstance(returned[-1], (tuple, list)) and len(returned[-1]) > 1 else None
    if given is not None and not same_cache(new_cache, given):  # a missing cache is Task 2-3's to name
        task.fail(f"{what}: {CACHE_NOT_RETURNED}", CACHE_NOT_RETURNED.slug)


def _expect_cache(task, cls, block, fixture, activation):
    """The last positions run on the cache of the first ones give the full run's outputs; the cache reaches the
    attention as it was given."""
    case, prefix, x = fixture["cases"][activation], fixture["prefix"], fixture["x"]
    what = f"{NAME} (activation=nn.{activation}) on x[:, {prefix}:] with the cache of x[:, :{prefix}]"
    _, cache = _run(task, block, x[:, :prefix], what=f"{NAME} on x[:, :{prefix}]")
    received = []

    def record(module, args, kwargs):
        received.append(kwargs["cache"] if "cache" in kwargs else (args[1] if len(args) > 1 else None))
    hook = block.attention.register_forward_pre_hook(record, with_kwargs=True)
    try:
        continued, _ = _run(task, block, x[:, prefix:], cache=cache, what=what)
    finally:
        hook.remove()
    if not received or not same_cache(received[-1], cache):
        task.fail(f"{what}: {CACHE_NOT_PASSED}", CACHE_NOT_PASSED.slug)
    if not matches(continued, case["continued"], ATOL, RTOL):
        _explain(task, cls, block, fixture, f"{what}: output", continued, case, "continued", 3)
    expect_close(task, f"{what}: output", continued, case["continued"], ATOL, RTOL)


def _differs(task, block, x):
    """Whether two train-mode forward passes of block on x give different outputs."""
    first, second = (_run(task, block, x, what=f"{NAME}(dropout=0.5) in train mode")[0] for _ in range(2))
    return not torch.equal(first, second)


def _expect_no_dropout(task, cls, fixture):
    """dropout=0.0 in train mode drops nothing: the outputs of eval mode."""
    block = _loaded(task, cls, fixture, "GELU", dropout=0.0).train()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        outputs, _ = _run(task, block, fixture["x"], what=f"{NAME}(dropout=0.0) in train mode")
    if matches(outputs, fixture["cases"]["GELU"]["outputs"], ATOL, RTOL):
        return
    rates = {name: p for name, p in dropout_rates(block).items() if p != 0.0}
    if rates:
        name, p = next(iter(rates.items()))
        task.fail(f"{NAME}(dropout=0.0) in train mode still drops: its nn.Dropout `{name}` has p = {p:g} whatever "
                  "`dropout` says (nn.Dropout() defaults to 0.5): build it with the argument, nn.Dropout(dropout).")
    task.fail(f"{NAME}(dropout=0.0) in train mode gives other outputs than in eval mode: with dropout=0.0 nothing "
              "may be dropped; use nn.Dropout(dropout) for every dropout of the block.")


def _expect_dropout(task, cls, fixture):
    """Dropout off in eval mode, on each sub-layer's output in train mode, never on the residual stream."""
    _expect_no_dropout(task, cls, fixture)
    block = _loaded(task, cls, fixture, "GELU", dropout=0.5)
    slots, x = block_slots(block), fixture["x"]
    outputs, _ = _run(task, block, x, what=f"{NAME}(dropout=0.5) in eval mode")
    if not matches(outputs, fixture["cases"]["GELU"]["outputs"], ATOL, RTOL):
        task.fail(DROPOUT_IN_EVAL)
    block.train()
    with torch.random.fork_rng(devices=[]):  # dropout draws from the global generator: leave the student's alone
        torch.manual_seed(0)
        if not _differs(task, block, x):
            task.fail(f"{NAME}(dropout=0.5) in train mode gave the same output twice: apply self.dropout to each "
                      "sub-layer's output before it joins the residual stream.")
        silent = {role: 0.0 for roles, _ in SUBLAYERS.values() for role in roles}
        with _set(slots, silent):
            if _differs(task, block, x):
                task.fail(DROPOUT_ON_RESIDUAL)
        for name, (_, formula) in SUBLAYERS.items():
            others = {role: 0.0 for other, (parts, _) in SUBLAYERS.items() if other != name for role in parts}
            with _set(slots, others):
                if not _differs(task, block, x):
                    task.fail(NO_SUBLAYER_DROPOUT.format(name=name, formula=formula))


@check_function(4)
def check_task_4(task, GPTBlock):
    """Check GPTBlock: structure, pre-norm outputs with GELU and ReLU, the cache passed through, dropout, gradients."""
    expect_module_class(task, GPTBlock, NAME)
    fixture = load_fixture(__package__, 4)
    for activation in ("GELU", "ReLU"):
        block = _loaded(task, GPTBlock, fixture, activation)
        _expect_outputs(task, GPTBlock, block, fixture, activation)
        _expect_cache(task, GPTBlock, block, fixture, activation)
    _expect_dropout(task, GPTBlock, fixture)
    x = fixture["x"].clone().requires_grad_()
    outputs, _ = _run(task, block, x)
    expect_gradients_everywhere(task, block, outputs.pow(2).sum(), x, NAME)
    single = _loaded(task, GPTBlock, fixture, "ReLU", dtype=torch.float32)
    expect_native_output(task, single, NAME, f"{NAME} in float32", lambda: _run(task, single, fixture["x"].float())[0],
                         fixture["cases"]["ReLU"]["outputs"], attention_api=False)
    task.passed("pre-norm sub-layers with their residuals, the activation argument, the cache passed through, "
                "dropout only in train mode and gradients are right.")
