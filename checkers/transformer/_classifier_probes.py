"""Property probes of a [CLS] sequence classifier whose logits are wrong (Tasks 5 and 7).

One forward pass is traced with hooks on the pinned submodules (positional_encoding, the encoder blocks,
classifier), then each probe says which step of embed -> blocks -> read-out departs from the task.
"""
import torch
import torch.nn as nn

from .._weights import encoder_blocks


def _first(value):
    return value[0] if isinstance(value, (tuple, list)) else value


def trace(model, x):
    """{part: [(input, output), ...]} for positional_encoding, each block ('block i') and classifier; or None."""
    parts = {"positional_encoding": getattr(model, "positional_encoding", None),
             "classifier": getattr(model, "classifier", None)}
    parts.update({f"block {index}": block for index, block in enumerate(encoder_blocks(model))})
    seen = {name: [] for name, part in parts.items() if isinstance(part, nn.Module)}
    hooks = [parts[name].register_forward_hook(
        lambda module, inputs, output, name=name: seen[name].append((_first(inputs).detach(), _first(output).detach())))
        for name in seen]
    try:
        with torch.no_grad():
            model(x)
    except Exception:  # noqa: BLE001 -- only a probe
        return None
    finally:
        for hook in hooks:
            hook.remove()
    return seen


def _same(a, b):
    return a.shape == b.shape and torch.allclose(a, b, atol=1e-9)


def explain_classifier(task, name, model, x):
    """Fail naming the first step of the classifier that departs from the task, as one traced pass shows."""
    seen = trace(model, x)
    if seen is None:
        return
    blocks = sorted((key for key in seen if key.startswith("block")), key=lambda key: int(key.split()[1]))
    for index, key in enumerate(blocks):
        if len(seen[key]) != 1:
            task.fail(f"{name}: encoder block {index} runs {len(seen[key])} times in one forward pass; run each of "
                      "the num_layers blocks once, in order.")
        if index and not _same(seen[key][0][0], seen[blocks[index - 1]][0][1]):
            task.fail(f"{name}: encoder block {index} does not read the output of block {index - 1}.")
    _explain_positions(task, name, model, x, seen, blocks)
    if len(seen.get("classifier", ())) != 1:
        task.fail(f"{name}: self.classifier runs {len(seen.get('classifier', ()))} times in one forward pass; apply "
                  "it once, to the [CLS] output hidden[:, 0].")
    classified, last = seen["classifier"][0][0], seen[blocks[-1]][0][1]  # (B, D), (B, L + 1, D)
    rows = [position for position in range(last.size(1)) if _same(classified, last[:, position])]
    if rows and rows[0] != 0:
        task.fail(f"{name}: the classifier reads position {rows[0]} of the last block's output; read the [CLS] "
                  "output at position 0, hidden[:, 0].")
    if not rows:
        task.fail(f"{name}: the classifier's input is none of the rows of the last block's output (a pooling or an "
                  "extra step?); apply the classifier to the [CLS] row alone, hidden[:, 0].")
    _explain_order(task, name, model, x)
    if "positional_encoding" in seen and not seen["positional_encoding"]:
        task.fail(f"{name}: self.positional_encoding never runs in a forward pass: are the positions added to the "
                  "embedded sequence?")


def _explain_order(task, name, model, x):
    """Fail when shifting every token one place along the sequence leaves the logits as they were."""
    try:
        with torch.no_grad():
            same = torch.allclose(model(x), model(x.roll(1, dims=1)), atol=1e-9)
    except Exception:  # noqa: BLE001 -- only a probe
        return
    if same:
        task.fail(f"{name}: the logits stay the same when the tokens are shifted one place along the sequence, so "
                  "no position information reaches the encoder: add pe[:, :L + 1] to the embedded sequence.")


def _explain_positions(task, name, model, x, seen, blocks):
    """Where [CLS] sits in the encoder's input, and how often and where the positional encoding is applied."""
    encoded = seen.get("positional_encoding", [])
    if len(encoded) > 1:
        task.fail(f"{name}: positional_encoding runs {len(encoded)} times in one forward pass; add positions once.")
    if encoded and encoded[0][0].size(1) == x.size(1) and seen[blocks[0]][0][0].size(1) == x.size(1) + 1:
        task.fail(f"{name}: the positions are added to the L tokens before [CLS] is prepended; prepend [CLS] first, "
                  "then add positional_encoding to all L + 1 positions, so that [CLS] takes position 0.")
    changed = trace(model, x + 0.5)  # every token embedding moves; [CLS] and its row of pe stay the same
    if changed is None or changed[blocks[0]][0][0].shape != seen[blocks[0]][0][0].shape:
        return
    before, after = seen[blocks[0]][0][0], changed[blocks[0]][0][0]  # (B, L + 1, D)
    fixed = [position for position in range(before.size(1)) if _same(before[:, position], after[:, position])]
    if fixed and fixed[0] != 0:
        task.fail(f"{name}: [CLS] sits at position {fixed[0]} of the encoder's input; prepend it at position 0, "
                  "before the first token.")


def explain_activation(task, name, make_model, x, num_layers):
    """Fail unless the `activation` given to the classifier runs in every block."""
    calls = []

    class Recording(nn.GELU):
        def forward(self, input):
            calls.append(input.shape)
            return super().forward(input)

    try:
        model = make_model(Recording)
        model(x)
        block = type(encoder_blocks(model)[0]).__name__  # the block class this classifier builds, named as it is
    except Exception:  # noqa: BLE001 -- only a probe
        return
    if len(calls) != num_layers:
        task.fail(f"{name}: the `activation` argument runs {len(calls)} times in one forward pass through "
                  f"{num_layers} blocks: pass it on to every block, {block}(..., activation, dropout).")
