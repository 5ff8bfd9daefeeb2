"""Task 5's probes of a Seq2SeqTransformer that fails: the size of the decoder's mask, whether the encoder reads
the whole source, which blocks of a stack count, and the depth of each stack.

Each runs only after an output differs from the expected one (or a call fails, or as the last structural check), and
fails only when what it measured identifies the cause; otherwise it returns and the comparison that follows says
what differs.
"""
import torch.nn as nn

from ._probes_behaviour import inert_children, later_positions_read
from ._probes_spies import square_masks

NAME = "Seq2SeqTransformer"
DEPTHS = {"num_encoder_layers": 1, "num_decoder_layers": 3}  # unequal, so that one cannot stand for the other


def explain_mask_size(task, model, case):
    """After decode failed with S != T: name a square mask sized by the source length given to the decoder."""
    source, target_input, memory = case["source"], case["target_input"], case["memory"]
    source_len, target_len = source.size(1), target_input.size(1)
    if source_len == target_len:
        return

    def run():
        return model.decode(target_input, memory, source)
    if square_masks(model, run, source_len) and not square_masks(model, run, target_len):
        task.fail(f"{NAME}.decode gives its blocks a ({source_len}, {source_len}) mask, sized by the source length "
                  f"S = {source_len}, for a target of T = {target_len} positions: the decoder's causal mask is "
                  "sized by the target, causal_mask(target_input.size(1)).")


def explain_encoder_reads_all(task, model, case):
    """Name an encoder whose earlier positions do not read a later source token (a causal encoder)."""
    source, pad_id, vocab_size = case["source"], case["config"]["pad_id"], case["config"]["vocab_size"]
    last = source.size(1) - 1
    rows = (source[:, last] != pad_id) & ((source[:, last] + 1) % vocab_size != pad_id)  # a real token stays one
    read = later_positions_read(model.encode, source, last, vocab_size)
    if read is None or not rows.any() or read[rows].any():
        return
    task.fail(f"{NAME}.encode: the memory at source positions 0 to {last - 1} does not change when only the source "
              f"token at position {last} changes: the encoder lets each position see only earlier ones; every "
              "source position may attend to every real source token, so mask only the padding, "
              "padding_mask(source, self.pad_id).")


def explain_stacks(task, model, case):
    """Name encoder or decoder blocks whose weights do not change the output (not chained, or never called)."""
    source, target_input, memory = case["source"], case["target_input"], case["memory"]
    runs = {"encoder": ("encode", lambda: model.encode(source)),
            "decoder": ("decode", lambda: model.decode(target_input, memory, source))}
    for stack, (method, run) in runs.items():
        blocks = getattr(model, stack, None)
        if not isinstance(blocks, (nn.ModuleList, nn.Sequential)) or len(blocks) < 2:
            continue
        inert = inert_children(blocks, run)
        if not inert:
            continue
        if len(inert) == len(blocks):
            task.fail(f"{NAME}.{method}: changing the weights of any {stack} block changes nothing: the output does "
                      f"not go through the {stack} blocks; run each block in turn and use the last one's output.")
        if inert == list(range(len(blocks) - 1)):
            task.fail(f"{NAME}.{method}: changing the weights of every {stack} block but the last changes nothing: "
                      f"only the last block counts; feed each block the previous block's output, x = block(x, ...), "
                      "starting from the embedded tokens.")
        task.fail(f"{NAME}.{method}: changing the weights of {stack} block {inert[0]} changes nothing: call every "
                  "block in turn, each on the previous block's output.")


def expect_depths(task, build_model):
    """Build with unequal depths: each stack holds, and forward_attention reports, its own number of blocks.

    Args:
        build_model: config overrides -> the student's model.
    """
    model = build_model(**DEPTHS).eval()
    built = f"{NAME}(num_encoder_layers={DEPTHS['num_encoder_layers']}, " \
            f"num_decoder_layers={DEPTHS['num_decoder_layers']})"
    for stack, key in (("encoder", "num_encoder_layers"), ("decoder", "num_decoder_layers")):
        blocks = getattr(model, stack, None)
        count = len(list(blocks)) if isinstance(blocks, (nn.ModuleList, nn.Sequential)) else None
        other = "num_decoder_layers" if key == "num_encoder_layers" else "num_encoder_layers"
        if count is not None and count != DEPTHS[key]:
            follows = f": its depth follows {other}" if count == DEPTHS[other] else ""
            task.fail(f"{built} has {count} {stack} block(s){follows}; build the {stack} with {key} blocks.")
    return model
