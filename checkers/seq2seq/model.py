"""Task 5: the encoder-decoder Transformer, loaded with fixed weights by role and compared on padded batches."""
import torch
import torch.nn as nn

from .._compare import diagnose, expect_close, expect_finite, expect_tensor, matches, signatures
from .._core import Diagnosis, CheckFailure, NotImplementedYet, check_function, expect_module_class, load_fixture
from .._dependencies import attention_function, explain_parts, part_class
from .._modules import build, expect_native_output, load
from ._model_explain import expect_depths, explain_encoder_reads_all, explain_mask_size, explain_stacks
from ._weights import MissingPart, seq2seq_slots

NAME = "Seq2SeqTransformer"
ATOL, RTOL = 1e-5, 1e-5  # a float32 `pe` table, converted to float64, costs up to ~1e-6 here
ATTENTION_KEYS = ("encoder", "decoder_self", "decoder_cross")
SEPARATE_EMBEDDINGS = Diagnosis(
    "separate-embeddings",
    "the model holds {count} nn.Embedding layers; source and target share one vocabulary, so "
    "use the single self.embedding for both (in encode and in decode).")
READS_FUTURE = Diagnosis(
    "reads-future",
    "the logits at position {position} change when only a later token of target_input changes: the "
    "decoder reads the future; pass causal_mask(T) as the self-attention mask in decode.")
ENCODER_PADDING = Diagnosis(
    "encoder-padding",
    "the memory of the real source tokens changes when PAD tokens are appended to the source: the "
    "encoder attends to padding; pass padding_mask(source, self.pad_id) to every encoder block.")
MEMORY_PADDING = Diagnosis(
    "memory-padding",
    "the logits change when PAD tokens are appended to the source: the cross-attention attends to "
    "padded source positions; pass padding_mask(source, self.pad_id) as the decoder's memory_mask.")
NOT_COMPOSED = Diagnosis(
    "not-composed",
    "forward(source, target_input) differs from decode(target_input, encode(source), source): forward "
    "should be exactly that composition.")
NO_OUTPUT_LAYER = Diagnosis(
    "no-output-layer",
    "decode returns {shape}, one embed_dim-wide vector per target position: apply self.output to "
    "the decoder's last hidden states to get vocab_size logits.")
OUTPUT_ON_MEMORY = Diagnosis(
    "output-on-memory",
    "decode returns {shape}, one row per source position: apply self.output to the decoder's "
    "hidden states (one per target position), not to the memory.")

PAD_ID_NOT_STORED = Diagnosis(
    "pad-id-not-stored",
    "Seq2SeqTransformer.pad_id should store the pad_id argument ({pad_id} here), found {found}.")
PAD_ID_HARD_CODED = Diagnosis(
    "pad-id-hard-coded",
    "the masks are built with pad id {found} hard-coded although the model's pad_id is {pad_id}: "
    "use the stored one, padding_mask(source, self.pad_id).")
MEMORY_MASK_FROM_TARGET = Diagnosis(
    "memory-mask-from-target",
    "the decoder's memory_mask is built from target_input: it marks the real source positions "
    "the cross-attention may read, memory_mask = padding_mask(source, self.pad_id).")
BLOCK_MEMORY_IS_X = Diagnosis(
    "block-memory-is-x",
    "the decoder blocks get their own input x as the memory: pass the encoder's output, "
    "block(x, memory, self_mask, memory_mask), so that cross-attention reads the source.")
BLOCK_MEMORY_NOT_GIVEN = Diagnosis(
    "block-memory-not-given",
    "the decoder blocks are not given decode's memory argument as their memory: call "
    "block(x, memory, self_mask, memory_mask) with the memory passed to decode.")
DROPOUT_MISSING = Diagnosis(
    "dropout-missing",
    "{method} of Seq2SeqTransformer(dropout=0.5) in train mode gave the same output twice, though "
    "forward's logits vary: pass `dropout` on to every {stack} block too.")

NO_PADDING_IDX = Diagnosis(
    "no-padding-idx",
    "create it with padding_idx=pad_id so the PAD embedding stays zero and gets no gradient.")
DROPOUT_NOT_PASSED = Diagnosis(
    "dropout-not-passed-on",
    f"{NAME}(dropout=0.5) in train mode gave the same logits twice: pass `dropout` on to every "
    "encoder and decoder block.")
# Sentences the known mistakes' diagnoses quote (course/seq2seq/mistakes.py): a mistake's outputs stored in the
# fixture are keyed by its sentence (checkers._compare.diagnose).
DECODER_SEES_NEXT = Diagnosis(
    "decoder-sees-the-next-token",
    "the decoder's self-attention mask lets position t see position t + 1: use causal_mask(T), True where "
    "key j <= query i.")
NO_CAUSAL_MASK = Diagnosis(
    "no-causal-mask-in-decode",
    "decode gives the decoder blocks no causal mask, so every target position sees the whole target: pass "
    "causal_mask(T) as self_mask.")
EMBEDDING_NOT_SCALED = Diagnosis(
    "embedding-not-scaled",
    "the embeddings are not multiplied by √embed_dim before the positional encoding: use "
    "self.embedding(tokens) * math.sqrt(embed_dim).")
EMBEDDING_SCALED_BY_D = Diagnosis(
    "embedding-scaled-by-embed-dim",
    "the embeddings are multiplied by embed_dim (or by √embed_dim twice); multiply them by √embed_dim once.")
EMBEDDING_DIVIDED = Diagnosis(
    "embedding-divided-by-sqrt-embed-dim",
    "the embeddings are divided by √embed_dim; multiply them by √embed_dim.")
TARGET_NOT_SCALED = Diagnosis(
    "target-embedding-not-scaled",
    "the target embeddings in decode are not multiplied by √embed_dim: scale them as the source's in encode.")
NO_TARGET_POSITIONS = Diagnosis(
    "positional-encoding-missing-on-the-target",
    "decode adds no positional encoding to the target embeddings: apply self.positional_encoding there as "
    "in encode.")
NO_SOURCE_POSITIONS = Diagnosis(
    "positional-encoding-missing-on-the-source",
    "encode adds no positional encoding to the source embeddings: apply self.positional_encoding to "
    "the scaled embeddings.")
POSITIONS_SCALED = Diagnosis(
    "positional-encoding-before-the-scaling",
    "the positional encoding is scaled by √embed_dim too: scale the embeddings first, then add the "
    "positions.")
ACTIVATION_NOT_PASSED = Diagnosis(
    "activation-not-passed-on",
    "the blocks ignore the `activation` argument: pass activation on to every encoder and decoder block.")


def _expect_structure(task, model, config):
    """pad_id stored, one shared embedding with padding_idx, distinct blocks of the right counts, the output layer."""
    if getattr(model, "pad_id", None) != config["pad_id"]:
        found = repr(model.pad_id) if hasattr(model, "pad_id") else "nothing"
        task.fail(PAD_ID_NOT_STORED.format(pad_id=config["pad_id"], found=found))
    embedding = getattr(model, "embedding", None)
    if not isinstance(embedding, nn.Embedding):
        task.fail(f"{NAME}.embedding should be an nn.Embedding, found {type(embedding).__name__}.")
    embeddings = [module for module in model.modules() if isinstance(module, nn.Embedding)]
    if len(embeddings) > 1:
        task.fail(SEPARATE_EMBEDDINGS.format(count=len(embeddings)))
    sizes = (config["vocab_size"], config["embed_dim"])
    if (embedding.num_embeddings, embedding.embedding_dim) != sizes:
        task.fail(f"{NAME}.embedding is nn.Embedding({embedding.num_embeddings}, {embedding.embedding_dim}), "
                  f"expected nn.Embedding(vocab_size, embed_dim) = nn.Embedding{sizes}.")
    if embedding.padding_idx != config["pad_id"]:
        task.fail(f"{NAME}.embedding has padding_idx={embedding.padding_idx}; {NO_PADDING_IDX}", NO_PADDING_IDX.slug)
    for stack, key in (("encoder", "num_encoder_layers"), ("decoder", "num_decoder_layers")):
        blocks = getattr(model, stack, None)
        count = len(list(blocks)) if isinstance(blocks, (nn.ModuleList, nn.Sequential)) else None
        if count is not None and count != config[key]:
            task.fail(f"{NAME}.{stack} holds {count} blocks, expected {key} = {config[key]}.")
    try:
        seq2seq_slots(model)
    except MissingPart as missing:
        task.fail(f"{NAME}: {missing}.", missing.diagnosis)
    output = model.output
    if (output.in_features, output.out_features) != sizes[::-1]:
        task.fail(f"{NAME}.output is nn.Linear({output.in_features}, {output.out_features}), expected "
                  f"nn.Linear(embed_dim, vocab_size) = nn.Linear{sizes[::-1]}.")


def _tensor(task, what, value, shape, dtype):
    """A (B, ., .) output checked for type, shape and dtype, with the usual wrong-shape causes named."""
    expect_tensor(task, what, value)
    if what.startswith(f"{NAME}.decode") and value.dim() == 3 and tuple(value.shape) != tuple(shape):
        if value.size(1) == shape[1] and value.size(2) != shape[2]:
            task.fail(NO_OUTPUT_LAYER.format(shape=tuple(value.shape)))
        if value.size(1) != shape[1] and value.size(2) == shape[2]:
            task.fail(OUTPUT_ON_MEMORY.format(shape=tuple(value.shape)))
    return expect_tensor(task, what, value, shape, dtype)


def _explain_wiring(task, model, case):
    """Name a decoder block given the wrong memory or memory_mask: a probe with source and target of one length (where
    a swapped mask or memory runs without a size mismatch) records what the first decoder block receives."""
    blocks = getattr(model, "decoder", None)
    block = next(iter(blocks), None) if isinstance(blocks, (nn.ModuleList, nn.Sequential)) else None
    if not isinstance(block, nn.Module):
        return
    length, pad_id = case["target_input"].size(1), case["config"]["pad_id"]
    source, target_input = case["source"][:, :length], case["target_input"]  # padded source rows, a full target
    memory = case["memory"][:, :length]
    received = []

    def record(module, args, kwargs):
        values = list(args) + [None] * 4
        received.append((values[0] if args else kwargs.get("x"),
                         values[1] if len(args) > 1 else kwargs.get("memory"),
                         values[3] if len(args) > 3 else kwargs.get("memory_mask")))
    hook = block.register_forward_pre_hook(record, with_kwargs=True)
    try:
        with torch.no_grad():
            model.decode(target_input, memory, source)
    except Exception:  # noqa: BLE001 -- only a probe: what the block received before a crash still counts
        pass
    finally:
        hook.remove()
    if not received:
        return
    x, given, mask = received[0]
    if isinstance(given, torch.Tensor) and not (given is memory or (given.shape == memory.shape
                                                                    and torch.equal(given, memory))):
        task.fail(BLOCK_MEMORY_IS_X if given is x else BLOCK_MEMORY_NOT_GIVEN)
    if isinstance(mask, torch.Tensor) and mask.numel() == source.numel():
        mask = mask.reshape(source.shape)
        if torch.equal(mask, target_input != pad_id) and not torch.equal(mask, source != pad_id):
            task.fail(MEMORY_MASK_FROM_TARGET)


def _run(task, model, case):
    """(memory, logits from decode, logits from forward) of the loaded model on the case's batch."""
    source, target_input = case["source"], case["target_input"]
    memory = _tensor(task, f"{NAME}.encode(source)", task.call(f"{NAME}.encode", model.encode, source),
                     case["memory"].shape, case["memory"].dtype)
    try:
        decoded = task.call(f"{NAME}.decode", model.decode, target_input, memory, source)
    except NotImplementedYet:
        raise
    except CheckFailure:  # e.g. a size mismatch from a swapped memory or mask: say which argument is wrong
        _explain_wiring(task, model, case)
        explain_mask_size(task, model, case)
        raise
    decoded = _tensor(task, f"{NAME}.decode(target_input, memory, source)", decoded, case["logits"].shape,
                      case["logits"].dtype)
    logits = _tensor(task, f"{NAME}(source, target_input)", task.call(f"{NAME}.forward", model, source, target_input),
                     case["logits"].shape, case["logits"].dtype)
    return memory, decoded, logits


def _explain_parts(task, model):
    """Fail naming a Task 1-4 part of the model that fails its own task's check."""
    blocks = list(getattr(model, "decoder", []))
    block = blocks[0] if blocks else None
    masks = tuple(attention_function(type(model), name) for name in ("causal_mask", "padding_mask"))
    explain_parts(task, NAME, [
        ("its LayerNorm class", 1, part_class(block, "norm1") if block is not None else None),
        ("causal_mask and padding_mask", 2, masks),
        ("its MultiheadAttention class", 3, part_class(block, "self_attention") if block is not None else None),
        ("its DecoderBlock class", 4,
         None if block is None or type(block).__module__.startswith("torch") else type(block)),
    ], __package__)


def _quietly(run):
    try:
        return run()
    except Exception:  # noqa: BLE001 -- only a probe: the caller reports the failure itself
        return None


def _explain_logits(task, model, case):
    """Fail naming why the logits differ, from the model's behaviour on changed inputs."""
    source, target_input = case["source"], case["target_input"]
    base = _quietly(lambda: model(source, target_input))
    if not isinstance(base, torch.Tensor) or base.shape != case["logits"].shape:
        return
    for position in range(target_input.size(1) - 1, 0, -1):
        changed = target_input.clone()
        changed[:, position] = (changed[:, position] + 1) % case["config"]["vocab_size"]
        moved = _quietly(lambda: model(source, changed))
        if isinstance(moved, torch.Tensor) and not torch.allclose(moved[:, :position], base[:, :position], atol=ATOL):
            earliest = int((moved[:, :position] - base[:, :position]).abs().amax(dim=(0, 2)).gt(ATOL).nonzero()[0])
            task.fail(READS_FUTURE.format(position=earliest))
    padded = torch.nn.functional.pad(source, (0, 2), value=case["config"]["pad_id"])  # (B, S + 2)
    memory, longer = _quietly(lambda: model.encode(source)), _quietly(lambda: model.encode(padded))
    if isinstance(memory, torch.Tensor) and isinstance(longer, torch.Tensor) and longer.shape[:2] == padded.shape:
        real = (source != case["config"]["pad_id"]).unsqueeze(-1)  # (B, S, 1)
        if not torch.allclose((longer[:, : source.size(1)] - memory) * real, torch.zeros_like(memory), atol=ATOL):
            task.fail(ENCODER_PADDING)
    moved = _quietly(lambda: model(padded, target_input))
    if isinstance(moved, torch.Tensor) and moved.shape == base.shape and not torch.allclose(moved, base, atol=ATOL):
        task.fail(MEMORY_PADDING)


def _expect_outputs(task, model, case):
    """encode, decode and forward against the fixture, naming a known mistake or a failing part."""
    memory, decoded, logits = _run(task, model, case)
    for what, got, key in (("encode(source)", memory, "memory"), ("decode(target_input, memory, source)", decoded,
                                                                  "logits")):
        if not matches(got, case[key], ATOL, RTOL):
            expect_finite(task, f"{NAME}.{what}", got)
            _explain_parts(task, model)
            diagnose(task, f"{NAME}.{what}", got, signatures(case, key), ATOL, RTOL)
            _explain_wiring(task, model, case)
            _explain_logits(task, model, case)
            explain_encoder_reads_all(task, model, case)
            explain_stacks(task, model, case)
        expect_close(task, f"{NAME}.{what}", got, case[key], ATOL, RTOL)
    if not matches(logits, decoded, ATOL, RTOL):
        expect_finite(task, f"{NAME}(source, target_input)", logits)
        task.fail(NOT_COMPOSED)


def _explain_swapped_maps(task, maps, expected):
    """Name decoder_self and decoder_cross filled with each other's maps."""
    def holds(key, other):
        got, want = maps[key], expected[other]
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(
            isinstance(a, torch.Tensor) and a.shape == b.shape and matches(a.detach().to(b.dtype), b, ATOL, RTOL)
            for a, b in zip(got, want))
    if holds("decoder_self", "decoder_cross") and holds("decoder_cross", "decoder_self"):
        task.fail(f"{NAME}.forward_attention(...) holds the cross-attention maps under 'decoder_self' and the "
                  "self-attention maps under 'decoder_cross': append each block's self-attention weights to "
                  "attention['decoder_self'] and its cross-attention weights to attention['decoder_cross'].")


def _expect_attention(task, model, case):
    """forward_attention: a dict of one (B, H, ., .) map per block for each of its three keys, as in the fixture."""
    if not callable(getattr(model, "forward_attention", None)):
        task.fail(f"{NAME} has no method forward_attention.")
    maps = task.call(f"{NAME}.forward_attention", model.forward_attention, case["source"], case["target_input"])
    if not isinstance(maps, dict) or set(maps) != set(ATTENTION_KEYS):
        keys = sorted(maps) if isinstance(maps, dict) else type(maps).__name__
        task.fail(f"{NAME}.forward_attention should return a dict with the keys {list(ATTENTION_KEYS)}, got {keys}.")
    _explain_swapped_maps(task, maps, case["attention"])
    for key in ATTENTION_KEYS:
        expected = case["attention"][key]
        if not isinstance(maps[key], (list, tuple)) or len(maps[key]) != len(expected):
            size = f" of length {len(maps[key])}" if isinstance(maps[key], (list, tuple)) else ""
            task.fail(f"{NAME}.forward_attention(...)[{key!r}] should be a list with one attention tensor per "
                      f"block ({len(expected)}), got {type(maps[key]).__name__}{size}.")
        for layer, (got, want) in enumerate(zip(maps[key], expected)):
            what = f"{NAME}.forward_attention(...)[{key!r}][{layer}]"
            expect_tensor(task, what, got, want.shape, want.dtype)
            expect_close(task, what, got, want, ATOL, RTOL)


def _expect_training_behaviour(task, cls, case):
    """Dropout passed on to the blocks, and a finite gradient for every parameter."""
    config = dict(case, config=dict(case["config"], dropout=0.5))
    model = _build(task, cls, config).train()
    torch.manual_seed(0)
    first, second = (task.call(f"{NAME}.forward", model, case["source"], case["target_input"]) for _ in range(2))
    if torch.equal(first, second):
        task.fail(DROPOUT_NOT_PASSED)
    for method, stack, run in (("encode", "encoder", lambda: model.encode(case["source"])),
                               ("decode", "decoder", lambda: model.decode(case["target_input"], case["memory"],
                                                                          case["source"]))):
        once, again = (task.call(f"{NAME}.{method}", run) for _ in range(2))
        if isinstance(once, torch.Tensor) and isinstance(again, torch.Tensor) and torch.equal(once, again):
            task.fail(DROPOUT_MISSING.format(method=method, stack=stack))
    model.zero_grad(set_to_none=True)
    task.call(f"backward through {NAME}", first.pow(2).sum().backward)
    for name, parameter in model.named_parameters():
        if parameter.requires_grad and (parameter.grad is None or not torch.isfinite(parameter.grad).all()):
            task.fail(f"no gradient reaches `{name}`: is it created but never used in encode or decode, or used "
                      "through .data / .detach()?")


def _expect_depths(task, cls, case):
    """Unequal encoder and decoder depths: each stack has its own, and forward_attention one map per block."""
    model = expect_depths(task, lambda **depths: _build(task, cls, dict(case, config=dict(case["config"], **depths))))
    maps = task.call(f"{NAME}.forward_attention", model.forward_attention, case["source"], case["target_input"])
    counts = {"encoder": model_depth(model, "encoder"), "decoder_self": model_depth(model, "decoder"),
              "decoder_cross": model_depth(model, "decoder")}
    for key, count in counts.items():
        got = maps.get(key) if isinstance(maps, dict) else None
        if count is not None and isinstance(got, (list, tuple)) and len(got) != count:
            task.fail(f"{NAME}.forward_attention(...)[{key!r}] holds {len(got)} maps for a model with {count} "
                      f"{key.split('_')[0]} blocks: run every block, and collect one map per block.")


def model_depth(model, stack):
    """The number of blocks of model.<stack>, or None when it is no list of modules."""
    blocks = getattr(model, stack, None)
    return len(list(blocks)) if isinstance(blocks, (nn.ModuleList, nn.Sequential)) else None


def _build(task, cls, case, **options):
    """The student's model built with the case's sizes and activation (stored by name in the fixture)."""
    return build(task, cls, NAME, **case["config"], activation=getattr(nn, case["activation"]), **options)


def _loaded(task, cls, case, **options):
    model = _build(task, cls, case, **options)
    _expect_structure(task, model, case["config"])
    return load(task, model, seq2seq_slots, case["weights"], NAME).eval()


@check_function(5)
def check_task_5(task, Seq2SeqTransformer):
    """Check Seq2SeqTransformer: structure, encode / decode / forward, attention maps, dropout and gradients."""
    cls = Seq2SeqTransformer
    expect_module_class(task, cls, NAME)
    fixture = load_fixture(__package__, 5)
    for case in fixture["cases"].values():
        model = _loaded(task, cls, case)
        _expect_outputs(task, model, case)
        _expect_attention(task, model, case)
    _expect_depths(task, cls, case)
    _expect_training_behaviour(task, cls, case)
    single = _loaded(task, cls, case, dtype=torch.float32, native=True)
    expect_native_output(task, single, NAME, f"{NAME} in float32",
                         lambda: task.call(f"{NAME}.forward", single, case["source"], case["target_input"]),
                         case["logits"], attention_api=False)
    task.passed("shared scaled embedding, positions, encoder and decoder stacks with their masks, output layer, "
                "attention maps, dropout and gradients are right.")
