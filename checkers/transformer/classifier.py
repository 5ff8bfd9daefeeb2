"""Task 5: the Transformer sequence classifier with a [CLS] token (Task 7 reuses it for Linformer)."""
import torch
import torch.nn as nn

from ._classifier_probes import explain_activation, explain_classifier
from ._cls_start import MODELS, cls_start, like_standard_normal
from .._dependencies import explain_parts, part_class
from .._compare import diagnose, expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import CheckFailure, Diagnosis, check_function, expect_module_class, load_fixture
from .._modules import expect_gradients_everywhere, expect_native_output, expect_output, expect_unchanged, load
from ._student_errors import build, call
from .._weights import MissingPart, encoder_blocks
from ._roles import classifier_slots
from ._probes_generic import failing_operation, outcome, parts_unchanged_by

ATOL, RTOL = 1e-5, 1e-5  # a float32 `pe` table, converted to float64, costs up to ~1e-6 here
CLS_NOT_PREPENDED = Diagnosis(
    "cls-not-prepended",
    "[CLS] is not prepended: the encoder sees L positions instead of L + 1; put cls_token in front "
    "of the embedded tokens with torch.cat([cls, tokens], dim=1), do not add it to them.")
# Sentences the known mistakes' diagnoses quote (course/transformer/mistakes.py).
NO_POSITIONAL_ENCODING = Diagnosis(
    "no-positional-encoding",
    "no positional encoding is added to the embedded sequence, so the model cannot tell positions apart.")
CLS_FROM_LAST = Diagnosis(
    "cls-read-from-the-last-position",
    "the logits are read from the last position; read position 0, where [CLS] was prepended.")
MEAN_POOLING = Diagnosis(
    "mean-pooling-instead-of-cls",
    "the logits come from the mean over all positions; classify the [CLS] output hidden[:, 0] only.")
CLS_NOT_LEARNABLE = Diagnosis(
    "cls-not-learnable",
    "cls_token has requires_grad=False: the [CLS] embedding must be learnable.")
ONE_BLOCK_REUSED = Diagnosis(
    "one-block-reused-for-every-layer",
    "encoder repeats the same block object: create a new block for every layer (a list comprehension), or the "
    "layers share their weights.")
CLS_NOT_STANDARD_NORMAL = Diagnosis(
    "cls-token-not-drawn-from-n01",
    "draw cls_token's starting values from N(0, 1), e.g. with torch.randn(embed_dim), as the task asks.")
MAPS_PER_BLOCK = Diagnosis(
    "attention-maps-of-the-last-layer-only",
    "forward_attention should return a list with one attention tensor per encoder block")


def expect_structure(task, model, config, name):
    """cls_token learnable of shape (embed_dim,), and num_layers distinct encoder blocks."""
    cls_token = getattr(model, "cls_token", None)
    if not isinstance(cls_token, nn.Parameter):
        task.fail(f"{name}.cls_token should be a learnable nn.Parameter, found {type(cls_token).__name__}.")
    if not cls_token.requires_grad:
        task.fail(f"{name}.{CLS_NOT_LEARNABLE}", CLS_NOT_LEARNABLE.slug)
    if tuple(cls_token.detach().squeeze().shape) != (config["embed_dim"],):  # (D,), or as (1, 1, D)
        expect_tensor(task, f"{name}.cls_token", cls_token.detach(), (config["embed_dim"],))
    try:
        blocks = encoder_blocks(model)
    except MissingPart as missing:
        task.fail(f"{name}: {missing}.", missing.diagnosis)
    if len(blocks) != config["num_layers"]:
        task.fail(f"{name}.encoder holds {len(blocks)} blocks, expected num_layers = {config['num_layers']}.")
    if len({id(block) for block in blocks}) != len(blocks):
        task.fail(f"{name}.{ONE_BLOCK_REUSED}", ONE_BLOCK_REUSED.slug)


def expect_classifier(task, model, case, x, name, rebuild=None):
    """Logits and attention maps against the fixture, then [CLS] use, batch independence and gradients.

    rebuild: activation class -> the same model built with that activation (for a probe), or None.
    """
    before = x.clone()
    num_classes = case["logits"].size(1)
    try:
        logits = _logits(task, model, x, name, num_classes)
    except CheckFailure:
        _explain_batch_axis(task, model, x, name)
        raise
    expect_unchanged(task, before, x)
    if not matches(logits, case["logits"], ATOL, RTOL):
        expect_finite(task, f"{name} logits", logits)
        diagnose(task, f"{name} logits", logits, signatures(case, "logits"), ATOL, RTOL)
        _explain_logits(task, model, x, name)
        _explain_returned_classifier_output(task, model, x, name, logits)
        _explain_parts(task, model, name)
        if rebuild is not None:
            explain_activation(task, name, rebuild, x, len(case["attention"]))
        explain_classifier(task, name, model, x)
    expect_close(task, f"{name} logits", logits, case["logits"], ATOL, RTOL)
    _expect_attention_maps(task, model, case, x, name)
    if not torch.allclose(_logits(task, model, x[1:], name, num_classes, "x[1:]"), logits[1:], atol=ATOL):
        task.fail("the logits of one sequence depend on the other sequences in the batch: is [CLS] expanded "
                  "over the batch dimension and concatenated along the sequence axis (dim=1)?")
    _expect_cls_token_used(task, model, x, logits, name)
    inputs = x.clone().requires_grad_(True)
    expect_gradients_everywhere(task, model, _logits(task, model, inputs, name, num_classes).pow(2).sum(), inputs, name)


def _explain_batch_axis(task, model, x, name):
    """Fail when forward raises in an operation that reads the [CLS] token expanded with the batch size on another
    axis than the first (it works for a batch of one only)."""
    failed, cls_token = failing_operation(model, x), getattr(model, "cls_token", None)
    if failed is None or not isinstance(cls_token, torch.Tensor):
        return
    operation, operands = failed
    token = cls_token.detach().flatten()
    for operand in operands:
        if operand.numel() == x.size(0) * token.numel() and operand.dim() == 3 and operand.size(0) != x.size(0) \
                and torch.equal(operand.detach().reshape(-1, token.numel()), token.expand(x.size(0), -1)):
            single = outcome(model, x[:1])[0] == "ok"
            task.fail(f"{name}.forward raises in {operation} on the [CLS] token of shape {tuple(operand.shape)} for a "
                      f"batch of {x.size(0)}{' (a batch of one works)' if single else ''}: give every sequence its "
                      "own [CLS] at position 0, cls_token.expand(B, 1, embed_dim), then torch.cat along dim=1.")


def _logits(task, model, x, name, num_classes, shown="x"):
    """model(x) checked to be one tensor (batch_size, num_classes) of x's dtype."""
    logits = expect_output(task, f"{name}({shown})", call(task, f"{name}.forward", model, x), None, x.dtype,
                           attention_api=False)
    if tuple(logits.shape) != (x.size(0), num_classes):
        hint = ": apply the classifier to the [CLS] output hidden[:, 0] only" if logits.dim() == 3 else ""
        task.fail(f"{name}({shown}) has shape {tuple(logits.shape)}, expected (batch_size, num_classes) = "
                  f"({x.size(0)}, {num_classes}){hint}.")
    return logits


def _expect_attention_maps(task, model, case, x, name):
    """forward_attention(x): one (B, H, L + 1, L + 1) map per block, equal to the fixture's."""
    if not callable(getattr(model, "forward_attention", None)):
        task.fail(f"{name} has no method forward_attention.")
    maps = task.call(f"{name}.forward_attention", model.forward_attention, x)
    if not isinstance(maps, (list, tuple)) or len(maps) != len(case["attention"]):
        size = f" of length {len(maps)}" if isinstance(maps, (list, tuple)) else ""
        task.fail(f"{name}.{MAPS_PER_BLOCK} ({len(case['attention'])}), got {type(maps).__name__}{size}.",
                  MAPS_PER_BLOCK.slug)
    for layer, (got, expected) in enumerate(zip(maps, case["attention"])):
        expect_tensor(task, f"{name}.forward_attention(x)[{layer}]", got, expected.shape, x.dtype)
        if not matches(got, expected, ATOL, RTOL):
            expect_finite(task, f"{name}.forward_attention(x)[{layer}]", got)
            _explain_parts(task, model, name)
            _explain_chaining(task, model, x, name)
        expect_close(task, f"{name}.forward_attention(x)[{layer}]", got, expected, ATOL, RTOL)


def _recorded(module, run):
    """[(first positional input, first output)] of each call of module during run(), or None when run fails."""
    seen = []
    first = lambda value: value[0] if isinstance(value, (tuple, list)) else value
    hook = module.register_forward_hook(lambda _, inputs, output: seen.append(
        (first(inputs).detach() if inputs else None, first(output).detach())))
    try:
        run()
    except Exception:  # noqa: BLE001 -- only a probe: the caller reports the failure itself
        return None
    finally:
        hook.remove()
    return seen


def _explain_chaining(task, model, x, name):
    """Fail when forward_attention runs a block on something other than the previous block's output."""
    blocks = encoder_blocks(model)
    calls = [_recorded(block, lambda: model.forward_attention(x)) for block in blocks]
    if any(call is None or len(call) != 1 or call[0][0] is None for call in calls):
        return
    for layer in range(1, len(blocks)):
        given, previous = calls[layer][0][0], calls[layer - 1][0][1]
        if given.shape != previous.shape or not torch.allclose(given, previous, atol=ATOL):
            task.fail(f"{name}.forward_attention: encoder block {layer} does not read the output of block "
                      f"{layer - 1}: feed each block's output to the next, as forward does, and collect the weights.")


def _explain_returned_classifier_output(task, model, x, name, logits):
    """Fail when forward returns a function of the classifier's (B, num_classes) output instead of that output."""
    classifier = getattr(model, "classifier", None)
    calls = _recorded(classifier, lambda: model(x)) if isinstance(classifier, nn.Module) else None
    if calls and len(calls) == 1 and calls[0][1].shape == logits.shape \
            and not torch.allclose(calls[0][1], logits, atol=ATOL):
        task.fail(f"{name}: forward returns something other than the output of self.classifier in the same pass: "
                  "return the classifier's output as the logits, with nothing applied after it (the loss applies "
                  "the sigmoid or softmax itself).")


def _explain_parts(task, model, name):
    """Fail naming the positional encoding or encoder block class when it fails its own task's check."""
    blocks = encoder_blocks(model)
    linformer = bool(blocks) and hasattr(getattr(blocks[0], "attention", None), "e_proj")  # Task 7 checks its blocks
    explain_parts(task, name, [("its positional_encoding", 4, part_class(model, "positional_encoding")),
                               ("its encoder block class", 3, None if not blocks or linformer else type(blocks[0]))],
                  __package__)


def _explain_logits(task, model, x, name):
    """Fail naming a [CLS] token added rather than prepended, seen in the length of embed(x) or of the maps."""
    def length(method):
        try:
            result = getattr(model, method)(x)
            return (result[0] if method == "forward_attention" else result).size(-2)
        except Exception:  # noqa: BLE001 -- only a probe: the caller reports the wrong logits itself
            return None

    if x.size(1) in (length("embed"), length("forward_attention")):
        task.fail(f"{name}: {CLS_NOT_PREPENDED}", CLS_NOT_PREPENDED.slug)


def _expect_cls_token_used(task, model, x, logits, name):
    """Fail unless shifting cls_token changes the logits."""
    with torch.no_grad():
        model.cls_token.add_(1.0)
        try:
            changed = _logits(task, model, x, name, logits.size(1))
        finally:
            model.cls_token.sub_(1.0)
    if torch.allclose(changed, logits, atol=ATOL):
        task.fail(f"changing {name}.cls_token does not change the logits: prepend it to every sequence at position 0.")


def _expect_dropout_passed_on(task, cls, name, fixture):
    """With dropout=0.5 in train mode, two passes must differ: the blocks got the `dropout` argument."""
    model = build(task, cls, name, **dict(fixture["config"], dropout=0.5)).train()
    torch.manual_seed(0)
    num_classes = fixture["config"]["num_classes"]
    first, second = (_logits(task, model, fixture["x"], name, num_classes) for _ in range(2))
    if torch.equal(first, second):
        task.fail(f"{name}(dropout=0.5) in train mode gave the same logits twice: pass `dropout` on to every "
                  "EncoderBlock.")


def expect_max_len_used(task, make, name):
    """Fail when models built with two values of max_len hold the same parameters and buffers: max_len is unused.

    make: keyword arguments that change the check's config -> the model built with them.
    """
    if parts_unchanged_by(make, "max_len", (16, 24)):
        task.fail(f"{name} built with max_len=16 and with max_len=24 holds parameters and buffers of the same shapes: "
                  "max_len is not used; pass it on, PositionalEncoding(embed_dim, max_len), so that its table covers "
                  "max_len positions.")


def _expect_cls_start(task, cls, name, config):
    """Fail unless fresh models start cls_token with values that may be draws of N(0, 1) (see _cls_start)."""
    start = cls_start(cls, name, config, task)
    if start is not None and not like_standard_normal(*start):
        mean, std, count = start
        task.fail(f"{name}.cls_token starts with values of mean {mean:.2f} and standard deviation {std:.2f} (its "
                  f"{count} values in {MODELS} fresh models; N(0, 1) gives about 0 and 1): {CLS_NOT_STANDARD_NORMAL}",
                  CLS_NOT_STANDARD_NORMAL.slug)


def build_loaded(task, cls, name, config, case, activation, slots_of=classifier_slots, explain_shapes=None):
    """cls built with config (and activation), its structure checked, the case's weights loaded; explain_shapes(model)
    may first name why a weight's shape differs from the case's."""
    kwargs = {} if activation is None else {"activation": activation}
    model = build(task, cls, name, **config, **kwargs)
    expect_structure(task, model, config, name)
    if explain_shapes is not None:
        explain_shapes(model)
    return load(task, model, slots_of, case["weights"], name).eval()


@check_function(5)
def check_task_5(task, TransformerForSequenceClassification):
    """Check TransformerForSequenceClassification: structure, logits, attention maps, [CLS] and gradients."""
    cls, name = TransformerForSequenceClassification, "TransformerForSequenceClassification"
    expect_module_class(task, cls, name)
    fixture = load_fixture(__package__, 5)
    rebuild = lambda activation: build(task, cls, name, **fixture["config"], activation=activation).eval()
    for case_name, activation in (("GELU", None), ("ReLU", nn.ReLU)):
        model = build_loaded(task, cls, name, fixture["config"], fixture["cases"][case_name], activation)
        expect_classifier(task, model, fixture["cases"][case_name], fixture["x"], name, rebuild)
    num_classes = fixture["config"]["num_classes"]
    first, second = (_logits(task, model, fixture["x"], name, num_classes) for _ in range(2))
    if not torch.equal(first, second):
        task.fail(f"{name} in eval mode gave two different outputs for the same input.")
    _expect_dropout_passed_on(task, cls, name, fixture)
    expect_max_len_used(task, lambda **changed: build(task, cls, name, **dict(fixture["config"], **changed)), name)
    _expect_cls_start(task, cls, name, fixture["config"])
    case = fixture["cases"]["GELU"]
    single = build(task, cls, name, **fixture["config"], dtype=torch.float32, native=True)
    single = load(task, single, classifier_slots, case["weights"], name).eval()
    expect_native_output(task, single, name, f"{name} on float32 input",
                         lambda: task.call(f"{name}.forward", single, fixture["x"].float()), case["logits"],
                         attention_api=False)
    task.passed("[CLS] token, embedding, positions, encoder stack, read-out, attention maps and gradients are right.")
