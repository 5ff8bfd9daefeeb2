"""Task 6: greedy decoding, run on scripted models whose every greedy choice is known."""
import torch
import torch.nn.functional as F

from course_lib.seq2seq import BOS_ID, EOS_ID
from .._compare import diagnose, signatures
from .._core import CheckFailure, Diagnosis, NotImplementedYet, check_function, expect_callable, load_fixture
from ._probes_spies import failed_elementwise, misaligned_reduction
from ._scripted import (FILLER, LOGIT, RUNNER_UP, RUNNER_UP_LOGIT, WRONG, ScriptedModel, idle_calls,
                        random_state_kept)

NAME = "greedy_decode"
TRAIN_MODE = Diagnosis(
    "train-mode",
    "the model ran in train mode, so dropout stays active while decoding: call model.eval() first "
    "(and restore the caller's mode before returning).")
MODE_NOT_RESTORED = Diagnosis(
    "mode-not-restored",
    "the model is left in {after} mode though the caller had it in {before} mode: note "
    "model.training before switching to eval mode, and give it back with model.train(...) at the end.")
BUILDS_GRAPH = Diagnosis(
    "builds-graph",
    "decode ran with gradients enabled, so every step builds an autograd graph: wrap the loop in "
    "`with torch.no_grad():`.")
NEVER_STOPS = Diagnosis(
    "never-stops",
    "it keeps calling decode after every sequence has produced EOS (it ran all max_len steps): stop "
    "the loop once every sequence is finished.")
FIRST_STOPS = Diagnosis(
    "first-stops",
    "it stops as soon as the first sequence produces EOS; stop only when every sequence has (keep a "
    "`finished` mask over the batch).")
KEEPS_BOS = Diagnosis(
    "keeps-bos",
    "the output starts with BOS: return the generated tokens without it (tokens[:, 1:]).")
DROPS_EOS = Diagnosis(
    "drops-eos",
    "each sequence's EOS is missing from the output: keep the EOS token, and pad only the positions after it.")
PADS_WITH_EOS = Diagnosis(
    "pads-with-eos",
    "the positions after a sequence's EOS hold EOS again; fill them with model.pad_id "
    "(e.g. next_token.masked_fill(finished, model.pad_id)).")
NOT_PADDED = Diagnosis(
    "not-padded",
    "the positions after a sequence's EOS hold whatever the model predicts there; replace them with "
    "model.pad_id once the sequence is finished.")
HARD_CODED_PAD = Diagnosis(
    "hard-coded-pad",
    "the positions after EOS hold {found}, but this model's pad_id is {pad_id}: use model.pad_id, "
    "not a fixed PAD id.")
PREFIX_NOT_FED = Diagnosis(
    "prefix-not-fed",
    "the model was not given BOS followed by the tokens chosen so far: each step must decode the "
    "whole prefix (BOS, then every chosen token) and take the logits of its last position.")
SAMPLES = Diagnosis(
    "samples",
    "it samples the next token: the call drew from the global random generator, and sequence {row} got "
    "token {token}, the runner-up, at output position {step} where the most likely token is {best}; greedy "
    "decoding takes the argmax, logits[:, -1].argmax(dim=-1), and draws nothing.")
DRAWS = Diagnosis(
    "draws",
    "the call changed the global random state (it drew from torch's default generator, or seeded it), though "
    "greedy decoding draws nothing: take the argmax of the logits, with no random call in greedy_decode.")
NOT_DETERMINISTIC = Diagnosis(
    "not-deterministic",
    "two calls on the same model and source gave different tokens ({first} and then {second} in "
    "sequence {row}): greedy decoding is deterministic, it takes the argmax and draws nothing.")
RUNNER_UP_CHOSEN = Diagnosis(
    "runner-up-chosen",
    "sequence {row} got token {token} at output position {step}, the runner-up (logit "
    "{runner_up:g}), where the most likely token is {best} (logit {logit:g}): take the token of the "
    "largest logit, logits[:, -1].argmax(dim=-1).")
FIRST_TOKEN = Diagnosis(
    "first-token",
    "the first token it gives the model is {first}{which}, not bos_id = {bos_id}: start every sequence "
    "from a (B, 1) column of bos_id.")
FIRST_POSITION = Diagnosis(
    "first-position",
    "every step repeats the first token of its sequence (sequence {row}: {tokens}): the next token is "
    "read from the first position's logits; take the last position's, logits[:, -1].argmax(dim=-1).")
POSITIONS = Diagnosis(
    "positions",
    "the tokens it generated are 0, 1, 2, …, the positions of the prefix (sequence {row}: {tokens}): the "
    "argmax is taken over the positions axis; take it over the vocabulary (the last axis) of the last "
    "position, logits[:, -1].argmax(dim=-1).")
EOS_CONSTANT = Diagnosis(
    "eos-constant",
    "it stops at token {course}, the course's EOS_ID, though this call's eos_id is {eos_id} (with "
    "eos_id={course} it is right): use the eos_id argument, not a constant.")
BOS_CONSTANT = Diagnosis(
    "bos-constant",
    "the first token it gives the model is {course}, the course's BOS_ID, though this call's bos_id is "
    "{bos_id} (with bos_id={course} it is right): use the bos_id argument, not a constant.")
IDS_CONSTANT = Diagnosis(
    "ids-constant",
    "it starts with the course's BOS_ID ({bos}) and stops at its EOS_ID ({eos}), though this call's bos_id "
    "is {bos_id} and eos_id is {eos_id}: use the bos_id / eos_id arguments, not constants.")
MAX_LEN_OFF = Diagnosis(
    "max-len-off",
    "it generated {width} tokens with max_len = {max_len}: generate at most max_len tokens "
    "(EOS included, BOS not counted).")

FLOAT_TOKENS = Diagnosis(
    "float-tokens",
    "{name} gave decode tokens of dtype {dtype}; token ids must be torch.long "
    "(e.g. torch.full(..., bos_id, dtype=torch.long)).")
FLOAT_TOKENS_RETURNED = Diagnosis(
    "float-tokens-returned",
    "{name} returned tokens of dtype {dtype}; token ids are torch.long.")


def _run(task, greedy_decode, case):
    """(output, scripted model) after greedy_decode on the case's scripted model, in the case's starting mode."""
    model = ScriptedModel(case["pad_id"], case["bos_id"], case["eos_id"]).train(case["training"])
    source = case["source"].clone()
    try:
        tokens = task.call(f"{NAME}(model, source, max_len={case['max_len']}, bos_id={case['bos_id']}, "
                           f"eos_id={case['eos_id']})", greedy_decode, model, source, case["max_len"],
                           case["bos_id"], case["eos_id"])
    except NotImplementedYet:
        raise
    except CheckFailure:
        _explain_error(task, greedy_decode, model, case)
        raise
    if not torch.equal(source, case["source"]):
        task.fail(f"{NAME} modified `source` in place; build new tensors instead.")
    return tokens, model


def _explain_error(task, greedy_decode, model, case):
    """After greedy_decode raised: name decoder input with another batch size, or a reduction's misaligned axis."""
    batch_size, source_len = case["source"].shape
    shapes = [call["shape"] for call in model.calls if len(call["shape"]) == 2]
    if shapes and shapes[0][0] != batch_size:
        which = ", the source length source.size(1)" if shapes[0][0] == source_len else ""
        task.fail(f"{NAME} gave model.decode first tokens of shape {shapes[0]}, {shapes[0][0]} rows{which}, for a "
                  f"batch of {batch_size} sources (source has shape {tuple(case['source'].shape)}): the BOS column "
                  "and every per-sequence tensor (e.g. the finished flags) have one row per sequence, "
                  "source.size(0).")
    grown = next((shape for shape in shapes if shape[0] != batch_size), None)
    if grown:
        task.fail(f"{NAME} gave model.decode tokens of shape {shapes[0]} first, then {grown}: the prefix keeps one "
                  "row per sequence and grows by one column per step; append each step's tokens along dim=1.")
    def run():
        fresh = ScriptedModel(case["pad_id"], case["bos_id"], case["eos_id"]).train(case["training"])
        return greedy_decode(fresh, case["source"].clone(), case["max_len"], case["bos_id"], case["eos_id"])
    problem = misaligned_reduction(run)
    if problem:
        task.fail(f"{NAME} fails: {problem}")
    shapes = failed_elementwise(run) or []
    if batch_size != source_len and {(batch_size,), (source_len,)} <= {shape[:1] for shape in shapes}:
        task.fail(f"{NAME} fails: a tensor with {source_len} rows meets one with {batch_size} (shapes "
                  f"{' and '.join(map(str, shapes))}) for a batch of {batch_size} sources of length {source_len}: "
                  "a per-sequence tensor (the BOS column, the finished flags) is sized by the source length, "
                  "source.size(1); give it one row per sequence, source.size(0).")


def _runner_up(tokens, case):
    """Where a sequence first departs from its script by taking the runner-up token: dict(row, step, token, best)."""
    got, want = _padded(tokens, case["tokens"], case["pad_id"])  # (B, width) each
    for row in range(got.size(0)):
        wrong = (got[row] != want[row]).nonzero()
        step = int(wrong[0]) if len(wrong) else None
        if step is not None and got[row, step] == RUNNER_UP and want[row, step] != case["pad_id"]:
            return dict(row=row, step=step, token=RUNNER_UP, best=int(want[row, step]))
    return None


def _expect_no_draws(task, tokens, model, case):
    """Greedy decoding draws nothing: the global random state is kept; a draw with a runner-up token is sampling."""
    if random_state_kept(model):
        return
    departure = _runner_up(tokens, case)
    task.fail(SAMPLES.format(**departure) if departure else DRAWS)


def _expect_deterministic(task, greedy_decode, tokens, case):
    """A second call on the same case gives the same tokens."""
    again, _ = _run(task, greedy_decode, case)
    _expect_output_type(task, again, case)
    first, second = _padded(tokens, again, case["pad_id"])
    if not torch.equal(first, second):
        row = int((first != second).any(dim=1).nonzero()[0])
        task.fail(NOT_DETERMINISTIC.format(first=tokens[row].tolist(), second=again[row].tolist(), row=row))


def _expect_calls(task, model, case):
    """The decoder inputs, mode and gradients seen by the model, and how many steps ran."""
    calls = model.calls
    if not calls:
        task.fail(f"{NAME} never called model.decode (or model(source, tokens)): generate the tokens with the model.")
    for call in calls:
        if call["dtype"] != torch.long:
            task.fail(FLOAT_TOKENS.format(name=NAME, dtype=call["dtype"]))
        if call["device"] != case["source"].device:
            task.fail(f"{NAME} gave decode tokens on {call['device']}, but source is on {case['source'].device}: "
                      "create them with device=source.device.")
    if any(call["training"] for call in calls):
        task.fail(TRAIN_MODE)
    if model.training != case["training"]:
        modes = {True: "train", False: "eval"}
        task.fail(MODE_NOT_RESTORED.format(after=modes[model.training], before=modes[case["training"]]))
    if any(call["grad"] for call in calls):
        task.fail(BUILDS_GRAPH)


def _expect_steps(task, tokens, model, case):
    """BOS kept, max_len off by one, never stopping or stopping at the first EOS, from the width and the calls."""
    width, max_len, expected = tokens.size(1), case["max_len"], case["tokens"]
    if (width == expected.size(1) + 1 and (tokens[:, 0] == case["bos_id"]).all()
            and torch.equal(tokens[:, 1:], expected)):
        task.fail(KEEPS_BOS)
    if width > max_len or (expected.size(1) == max_len and width == max_len - 1):
        task.fail(MAX_LEN_OFF.format(width=width, max_len=max_len))
    right_so_far = width >= expected.size(1) and torch.equal(tokens[:, : expected.size(1)], expected)
    idle = idle_calls(model)
    if idle and right_so_far:
        longest = max(call["shape"][-1] for call in model.calls)  # BOS and the tokens fed at the last call
        task.fail(NEVER_STOPS if longest >= max_len else f"it called decode {idle} more time(s) after every sequence "
                  "had produced EOS: stop once every sequence is finished.")
    if len(model.calls) < int(case["steps"]) and width == int(case["first_finished"]):
        task.fail(FIRST_STOPS)


def _explain_departure(task, got, want, model, case):
    """Name a wrong first token fed to the model, logits read at the first position, or an argmax over positions."""
    firsts = {token for call in model.calls for token in call["first"]}
    if len(firsts) == 1 and firsts != {case["bos_id"]}:
        first = firsts.pop()
        which = " (eos_id)" if first == case["eos_id"] else " (pad_id)" if first == case["pad_id"] else ""
        task.fail(FIRST_TOKEN.format(first=first, which=which, bos_id=case["bos_id"]))
    steps = min(got.size(1), 3)
    if steps < 2:
        return
    positions = torch.arange(steps)
    if (got[:, :steps] == positions).all() and not (want[:, :steps] == positions).all():
        task.fail(POSITIONS.format(row=0, tokens=got[0].tolist()))
    open_rows = want[:, 0] != case["eos_id"]  # rows whose script is longer than EOS alone
    repeats = (got[:, :steps] == want[:, :1]).all(dim=1)
    if open_rows.any() and repeats[open_rows].all() and (want[open_rows, 1] != want[open_rows, 0]).any():
        row = int(open_rows.nonzero()[0])
        task.fail(FIRST_POSITION.format(row=row, tokens=got[row].tolist()))


def _expect_tokens(task, tokens, model, case):
    """Compare with the expected tokens (trailing all-PAD columns allowed), naming what differs."""
    expected, pad_id, eos_id = case["tokens"], case["pad_id"], case["eos_id"]
    got, want = _padded(tokens, expected, pad_id)  # (B, width) each
    if torch.equal(got, want):
        return
    wrong = got != want  # (B, width)
    departure = _runner_up(tokens, case)
    if departure:
        task.fail(RUNNER_UP_CHOSEN.format(**departure, runner_up=RUNNER_UP_LOGIT, logit=LOGIT))
    _explain_departure(task, got, want, model, case)
    if (got == WRONG).any():
        task.fail(PREFIX_NOT_FED)
    if (want[wrong] == eos_id).all() and (got[wrong] == pad_id).all():
        task.fail(DROPS_EOS)
    if (want[wrong] == pad_id).all():
        found = got[wrong]
        if (found == eos_id).all():
            task.fail(PADS_WITH_EOS)
        if (found == FILLER).all():
            task.fail(NOT_PADDED)
        if found.unique().numel() == 1:
            task.fail(HARD_CODED_PAD.format(found=int(found[0]), pad_id=pad_id))
    if tokens.size(1) == expected.size(1):
        diagnose(task, f"the output of {NAME}", tokens, signatures(case, "tokens"), 0, 0)
    row = int(wrong.any(dim=1).nonzero()[0])
    task.fail(f"sequence {row} of the output is {got[row].tolist()}, expected {want[row].tolist()} "
              f"(bos_id={case['bos_id']}, eos_id={eos_id}, pad_id={pad_id}, max_len={case['max_len']}).")


def _padded(tokens, expected, pad_id):
    """tokens and expected, both (B, width) with PAD columns appended to the narrower one."""
    width = max(tokens.size(1), expected.size(1))
    return (F.pad(tokens, (0, width - tokens.size(1)), value=pad_id),
            F.pad(expected, (0, width - expected.size(1)), value=pad_id))


def _right_with(greedy_decode, case, bos_id, eos_id):
    """Whether greedy_decode gets the case right once its bos_id and eos_id are replaced by these (a probe)."""
    pad_id = case["pad_id"]
    free = min(set(range(FILLER)) - {pad_id, bos_id, eos_id, case["bos_id"], case["eos_id"]})
    source = case["source"].masked_fill((case["source"] == bos_id) | (case["source"] == eos_id), free)  # (B, S)
    model = ScriptedModel(pad_id, bos_id, eos_id).train(case["training"])
    rows = [model.script(row)[: case["max_len"]] for row in source]
    width = max(map(len, rows))
    expected = torch.tensor([row + [pad_id] * (width - len(row)) for row in rows])  # (B, width)
    try:
        tokens = greedy_decode(model, source, case["max_len"], bos_id, eos_id)
        return tokens.dim() == 2 and torch.equal(*_padded(tokens.long(), expected, pad_id))
    except Exception:  # noqa: BLE001 -- only a probe: the case itself is reported by the checks that follow
        return False


def _expect_ids_used(task, greedy_decode, tokens, case):
    """If the case fails but the course's BOS_ID / EOS_ID in place of its ids make it right, name the constant."""
    bos_id, eos_id = case["bos_id"], case["eos_id"]
    if torch.equal(*_padded(tokens, case["tokens"], case["pad_id"])):
        return
    if eos_id != EOS_ID and _right_with(greedy_decode, case, bos_id, EOS_ID):
        task.fail(EOS_CONSTANT.format(course=EOS_ID, eos_id=eos_id))
    if bos_id != BOS_ID and _right_with(greedy_decode, case, BOS_ID, eos_id):
        task.fail(BOS_CONSTANT.format(course=BOS_ID, bos_id=bos_id))
    if bos_id != BOS_ID and eos_id != EOS_ID and _right_with(greedy_decode, case, BOS_ID, EOS_ID):
        task.fail(IDS_CONSTANT.format(bos=BOS_ID, eos=EOS_ID, bos_id=bos_id, eos_id=eos_id))


def _expect_output_type(task, tokens, case):
    if tokens is None:
        task.fail(f"{NAME} returned None: is the `return` statement missing?")
    if not isinstance(tokens, torch.Tensor):
        task.fail(f"{NAME} should return a (batch_size, T) tensor of token ids, got {type(tokens).__name__}.")
    if tokens.dim() != 2 or tokens.size(0) != case["source"].size(0):
        task.fail(f"{NAME} returned shape {tuple(tokens.shape)}, expected (batch_size, T) = "
                  f"({case['source'].size(0)}, T) with T <= max_len.")
    if tokens.dtype != torch.long:
        task.fail(FLOAT_TOKENS_RETURNED.format(name=NAME, dtype=tokens.dtype))
    if tokens.device != case["source"].device:
        task.fail(f"{NAME} returned tokens on {tokens.device}, but source is on {case['source'].device}.")
    if tokens.requires_grad:
        task.fail(BUILDS_GRAPH)


@check_function(6)
def check_task_6(task, greedy_decode):
    """Check greedy_decode on scripted models: tokens, stopping, padding, mode and gradients."""
    expect_callable(task, greedy_decode, NAME)
    fixture = load_fixture(__package__, 6)
    for index, case in enumerate(fixture["cases"].values()):
        tokens, model = _run(task, greedy_decode, case)
        _expect_output_type(task, tokens, case)
        _expect_no_draws(task, tokens, model, case)
        if index == 0:
            _expect_deterministic(task, greedy_decode, tokens, case)
        _expect_calls(task, model, case)
        _expect_ids_used(task, greedy_decode, tokens, case)
        _expect_steps(task, tokens, model, case)
        _expect_tokens(task, tokens, model, case)
    task.passed("tokens without BOS, EOS kept, PAD after it, stops when all sequences finish or at max_len, "
                "runs in eval mode and gives the caller's mode (train or eval) back afterwards, no gradients, "
                "uses the bos_id and eos_id it is given, takes the most likely token and draws nothing at random.")
