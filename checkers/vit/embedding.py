"""Task 2: PatchEmbedding, images (B, C, H, W) -> tokens (B, N + 1, D): projected patches after a learned [CLS]
token, learned positions added."""
import torch
import torch.nn as nn

from .._compare import expect_close, expect_finite, expect_tensor, matches
from .._core import Diagnosis, CheckFailure, check_function, expect_module_class, load_fixture
from .._dependencies import attention_function, explain_parts
from .._modules import build, expect_gradients_everywhere, expect_native_output, load
from ._roles import patch_embedding_slots
from ._probes_shapes import size_rule, swapped_axes
from ._tokens import ATOL, RTOL, explain_tokens

NAME = "PatchEmbedding"
# Sentences the known mistakes' diagnoses quote (course/vit/mistakes.py).
N_ROWS = Diagnosis(
    "n-rows",
    "position_embedding has N rows, one per patch and none for the [CLS] token: make it (1, N + 1, embed_dim) "
    "and add it after putting the [CLS] token first.")
FIXED_TABLE = Diagnosis(
    "fixed-table",
    "a fixed table where ViT learns its positions: make position_embedding "
    "nn.Parameter(torch.zeros(1, N + 1, embed_dim)) (any initial values), trained with the rest.")
CLS_FIXED = Diagnosis(
    "cls-fixed",
    "not learned: make cls_token nn.Parameter(torch.zeros(embed_dim)) (any initial values), trained with "
    "the rest.")
PATCH_AXIS = Diagnosis(
    "patch-axis",
    "projection maps the patch axis, nn.Linear(num_patches, ...): it should map each patch's C·p·p pixels "
    "to embed_dim, nn.Linear(in_channels * patch_size**2, embed_dim), on the last axis of patchify's output.")
ONE_SIDE = Diagnosis(
    "one-side",
    "position_embedding has {rows} = {side} + 1 rows, {side} = image_size // patch_size being the patches "
    "along one side: the grid has N = (image_size // patch_size) ** 2 = {num_patches} patches, so make it "
    "(1, N + 1, embed_dim) = (1, {wanted}, {embed_dim}).")
ONE_CHANNEL = Diagnosis(
    "one-channel",
    "projection takes patch_size ** 2 = {area} values, one channel's: a patch holds "
    "in_channels * patch_size ** 2 = {size} values, so make it nn.Linear(in_channels * patch_size ** 2, "
    "embed_dim).")
BATCH_OF_ONE = Diagnosis(
    "batch-of-one",
    "it runs on one image but raises on a batch of {batch_size}: something in forward is built for a "
    "batch of one, such as a [CLS] token concatenated without being expanded over the batch, "
    "cls_token.expand(B, 1, embed_dim).")
OTHER_PATCH_SIZE = Diagnosis(
    "other-patch-size",
    "projection receives patches of {got} values = in_channels * {other} ** 2 where patch_size = "
    "{patch_size} gives {size}: patchify is called with patch size {other}; pass self.patch_size.")
PROJECTION_INPUT = Diagnosis(
    "projection-input",
    "projection receives an input of shape {shape}, whose last axis should hold a patch's "
    "in_channels * patch_size ** 2 = {size} values.")
IN_PLACE = Diagnosis(
    "in-place",
    "PatchEmbedding.forward modified its input `images` in place; build new tensors instead.")


# What a wrong size of the student's parts may follow (the right formula first): a size_rule probe builds the class at
# several sizes and names the one formula that gives what it built every time.
PATCH_VALUES = {"in_channels * patch_size ** 2": lambda in_channels, patch_size, **_: in_channels * patch_size ** 2,
                "(in_channels * patch_size) ** 2": lambda in_channels, patch_size, **_: (in_channels * patch_size) ** 2,
                "in_channels * patch_size * 2": lambda in_channels, patch_size, **_: in_channels * patch_size * 2,
                "in_channels ** 2 * patch_size": lambda in_channels, patch_size, **_: in_channels ** 2 * patch_size,
                "in_channels + patch_size ** 2": lambda in_channels, patch_size, **_: in_channels + patch_size ** 2}
PATCH_COUNTS = {"(image_size // patch_size) ** 2": lambda image_size, patch_size, **_: (image_size // patch_size) ** 2,
                "image_size // patch_size ** 2": lambda image_size, patch_size, **_: image_size // patch_size ** 2,
                "image_size ** 2 // patch_size": lambda image_size, patch_size, **_: image_size ** 2 // patch_size,
                "image_size // patch_size * 2": lambda image_size, patch_size, **_: image_size // patch_size * 2}
PROBED_SIZES = (dict(image_size=8, patch_size=2, in_channels=3), dict(image_size=12, patch_size=3, in_channels=2))


def _size_formula(embedding, config, measure, formulas):
    """The wrong formula of formulas the student's class follows for measure on config and PROBED_SIZES, or None."""
    configs = [config] + [dict(config, **sizes) for sizes in PROBED_SIZES]
    rule = size_rule(lambda changed: type(embedding)(**changed), configs, measure, formulas)
    return None if rule == next(iter(formulas)) else rule


def describe(config):
    return f"{NAME}({', '.join(f'{key}={value}' for key, value in config.items())})"


def _kind(tensor, module, name):
    """How a tensor attribute is stored, when it is not a learned Parameter; None when it is one."""
    if isinstance(tensor, nn.Parameter):
        return None if tensor.requires_grad else "an nn.Parameter with requires_grad=False"
    return "a buffer (register_buffer)" if name in dict(module.named_buffers(recurse=False)) else \
        "a plain tensor attribute"


def _expect_projection(task, embedding, config, what):
    sizes = config["in_channels"] * config["patch_size"] ** 2, config["embed_dim"]
    num_patches = (config["image_size"] // config["patch_size"]) ** 2
    projection = getattr(embedding, "projection", None)
    if not isinstance(projection, nn.Linear):
        task.fail(f"{what}.projection should be nn.Linear(in_channels * patch_size**2, embed_dim) = "
                  f"nn.Linear{sizes}, found {'nothing' if projection is None else type(projection).__name__}.")
    if projection.in_features == num_patches != sizes[0]:
        task.fail(f"{what}: {PATCH_AXIS}", PATCH_AXIS.slug)
    if projection.in_features == config["patch_size"] ** 2 != sizes[0]:
        task.fail(f"{what}: " + ONE_CHANNEL.format(area=projection.in_features, size=sizes[0]))
    rule = projection.in_features != sizes[0] and _size_formula(
        embedding, config, lambda built: built.projection.in_features, PATCH_VALUES)
    if rule:
        task.fail(f"{what}.projection is nn.Linear({projection.in_features}, {projection.out_features}): its input "
                  f"width follows {rule} at every size tried, but a patch holds in_channels * patch_size ** 2 = "
                  f"{sizes[0]} values (** binds before *): make it nn.Linear(in_channels * patch_size ** 2, "
                  "embed_dim).")
    if (projection.in_features, projection.out_features) != sizes:
        task.fail(f"{what}.projection is nn.Linear({projection.in_features}, {projection.out_features}), expected "
                  f"nn.Linear(in_channels * patch_size**2, embed_dim) = nn.Linear{sizes}.")


def _expect_parameters(task, embedding, config, what):
    """cls_token: a learned (D,) or (1, 1, D); position_embedding: a learned (1, N + 1, D)."""
    embed_dim, num_patches = config["embed_dim"], (config["image_size"] // config["patch_size"]) ** 2
    for name in ("cls_token", "position_embedding"):
        tensor = getattr(embedding, name, None)
        if not isinstance(tensor, torch.Tensor):
            found = "nothing" if tensor is None else type(tensor).__name__
            task.fail(f"{what}.{name} should be an nn.Parameter, found {found}.")
        kind = _kind(tensor, embedding, name)
        if kind:
            fixed = CLS_FIXED if name == "cls_token" else FIXED_TABLE
            task.fail(f"{what}.{name} is {kind}, {fixed}", fixed.slug)
    cls_shape, position_shape = tuple(embedding.cls_token.shape), tuple(embedding.position_embedding.shape)
    if embedding.cls_token.numel() != embed_dim or embedding.cls_token.squeeze().dim() != 1:
        task.fail(f"{what}.cls_token has shape {cls_shape}, expected (embed_dim,) = ({embed_dim},) or "
                  f"(1, 1, {embed_dim}).")
    if position_shape in ((1, num_patches, embed_dim), (num_patches, embed_dim)):
        task.fail(f"{what}: {N_ROWS}", N_ROWS.slug)
    side = config["image_size"] // config["patch_size"]
    if position_shape in ((1, side + 1, embed_dim), (side + 1, embed_dim)) and side + 1 != num_patches + 1:
        task.fail(f"{what}: " + ONE_SIDE.format(rows=side + 1, side=side, num_patches=num_patches,
                                                 wanted=num_patches + 1, embed_dim=embed_dim))
    _explain_position_shape(task, embedding, config, what, position_shape)


def _explain_position_shape(task, embedding, config, what, position_shape):
    """Fail when position_embedding is not (1, N + 1, D), naming swapped axes or the formula its rows follow."""
    embed_dim, num_patches = config["embed_dim"], (config["image_size"] // config["patch_size"]) ** 2
    expected = (1, num_patches + 1, embed_dim)
    if position_shape == expected:
        return
    order = swapped_axes(position_shape, expected, ("1", "N + 1", "embed_dim"))
    if order:
        task.fail(f"{what}.position_embedding has shape {position_shape} = {order}, its axes in another order: make "
                  f"it (1, N + 1, embed_dim) = {expected}, so that it adds to the (B, N + 1, embed_dim) tokens.")
    rule = len(position_shape) == 3 and _size_formula(
        embedding, config, lambda built: built.position_embedding.shape[-2] - 1, PATCH_COUNTS)
    if rule:
        binding = " (** binds before //)" if "// patch_size **" in rule else ""
        task.fail(f"{what}.position_embedding has {position_shape[-2]} rows: its number of patches follows {rule} "
                  f"at every size tried{binding}, where the grid has N = (image_size // "
                  f"patch_size) ** 2 = {num_patches} patches: make it (1, N + 1, embed_dim) = {expected}.")
    task.fail(f"{what}.position_embedding has shape {position_shape}, expected (1, N + 1, embed_dim) = "
              f"(1, {num_patches + 1}, {embed_dim}) for N = {num_patches} patches.")


def loaded(task, PatchEmbedding, case, dtype=torch.float64):
    """The student's PatchEmbedding built with the case's arguments, its parts checked, the case's weights loaded."""
    config, what = case["config"], describe(case["config"])
    embedding = build(task, PatchEmbedding, NAME, **config, dtype=dtype, native=dtype != torch.float64)
    _expect_projection(task, embedding, config, what)
    _expect_parameters(task, embedding, config, what)
    return load(task, embedding, patch_embedding_slots, case["weights"], what)


def tokens_of(task, embedding, images, config):
    """embedding(images), checked to leave images alone and to be a (B, N + 1, D) tensor of their dtype; a failure
    is first blamed on the student's patchify when that fails its own check."""
    try:
        return _checked_tokens(task, embedding, images, config)
    except CheckFailure:
        _blame_patchify(task, type(embedding), describe(config))
        raise


def _checked_tokens(task, embedding, images, config):
    before = images.detach().clone()
    try:
        result = task.call(f"{NAME}.forward", embedding, images)
    except CheckFailure as failure:
        if " raised " in str(failure):
            _explain_raise(task, embedding, images, config, str(failure).split(": ", 1)[1].rstrip("."))
        raise
    if not torch.equal(before, images.detach()):
        task.fail(IN_PLACE)
    num_patches = (config["image_size"] // config["patch_size"]) ** 2
    shape = (images.size(0), num_patches + 1, config["embed_dim"])
    return expect_tensor(task, f"{describe(config)}'s output", result, shape, images.dtype)


def _explain_raise(task, embedding, images, config, raised):
    """Fail naming why forward raised when a probe shows it: the size of what projection receives, or a forward that
    runs on one image only; otherwise return."""
    size, patch_size, channels = config["in_channels"] * config["patch_size"] ** 2, config["patch_size"], \
        config["in_channels"]
    received = _projection_input(embedding, images)
    if received is not None and received[-1] != size:
        other = round((received[-1] / channels) ** 0.5)
        if other != patch_size and channels * other ** 2 == received[-1]:
            task.fail(f"{raised}: " + OTHER_PATCH_SIZE.format(got=received[-1], other=other, patch_size=patch_size,
                                                              size=size))
        task.fail(f"{raised}: " + PROJECTION_INPUT.format(shape=received, size=size))
    if images.size(0) > 1 and _runs(embedding, images[:1]):
        task.fail(f"{raised}: " + BATCH_OF_ONE.format(batch_size=images.size(0)))


def _projection_input(embedding, images):
    """The shape of the first input embedding.projection receives during embedding(images), or None."""
    projection, seen = getattr(embedding, "projection", None), []
    if not isinstance(projection, nn.Module):
        return None
    hook = projection.register_forward_pre_hook(
        lambda module, args: seen.append(tuple(args[0].shape)) if args else None)
    try:
        _runs(embedding, images)
    finally:
        hook.remove()
    return seen[0] if seen else None


def _runs(embedding, images):
    """Whether embedding(images) returns a tensor (a probe: never raises)."""
    try:
        with torch.no_grad():
            return isinstance(embedding(images), torch.Tensor)
    except Exception:  # noqa: BLE001 -- only a probe
        return False


def _blame_patchify(task, PatchEmbedding, what):
    explain_parts(task, what, [("its patchify", 1, attention_function(PatchEmbedding, "patchify"))], __package__)


def _expect_tokens(task, PatchEmbedding, embedding, case):
    """The tokens of the case's images, and of the first image alone (nothing may depend on the batch size)."""
    what = describe(case["config"])
    got = tokens_of(task, embedding, case["images"], case["config"])
    if not matches(got, case["tokens"], ATOL, RTOL):
        expect_finite(task, what, got)
        _blame_patchify(task, PatchEmbedding, what)
        explain_tokens(task, got, case, what)
    expect_close(task, what, got, case["tokens"], ATOL, RTOL)
    alone = tokens_of(task, embedding, case["images"][:1], case["config"])
    expect_close(task, f"{what} on the first image alone", alone, case["tokens"][:1], ATOL, RTOL)


@check_function(2)
def check_task_2(task, PatchEmbedding):
    """Check PatchEmbedding(image_size, patch_size, in_channels, embed_dim): its projection, [CLS] token and learned
    positions, and its tokens with fixed weights in two configurations; gradients and float32."""
    expect_module_class(task, PatchEmbedding, NAME)
    cases = list(load_fixture(__package__, 2)["cases"].values())
    for case in cases:
        _expect_tokens(task, PatchEmbedding, loaded(task, PatchEmbedding, case), case)
    case = cases[-1]
    embedding, images = loaded(task, PatchEmbedding, case), case["images"].clone().requires_grad_(True)
    loss = tokens_of(task, embedding, images, case["config"]).pow(2).sum()
    try:
        expect_gradients_everywhere(task, embedding, loss, images, NAME)
    except CheckFailure:
        _blame_patchify(task, PatchEmbedding, describe(case["config"]))
        raise
    single = loaded(task, PatchEmbedding, case, dtype=torch.float32)
    expect_native_output(task, single, NAME, f"{describe(case['config'])} on float32 images",
                         lambda: tokens_of(task, single, case["images"].float(), case["config"]), case["tokens"],
                         attention_api=False)
    task.passed("a learned [CLS] token first, learned positions for all N + 1 tokens, the patches of your patchify "
                "projected by nn.Linear(C·p·p, embed_dim); values, gradients and float32 are right.")
