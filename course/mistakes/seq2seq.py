"""Known student mistakes of the seq2seq assignment, each a few edits of the reference source (the solutions
notebook). See course/mistakes/transformer.py for how they are used. Instructor-side only: never shipped.
"""
from checkers.seq2seq.decoding import (BUILDS_GRAPH, DROPS_EOS, FIRST_STOPS, KEEPS_BOS, NEVER_STOPS, NOT_PADDED,
                                       PADS_WITH_EOS, PREFIX_NOT_FED, TRAIN_MODE)
from course.mistakes import Mutant

# Task 6: greedy_decode
STOP = "if finished.all():\n                    break"
RETURN = "return tokens[:, 1:]"
PAD_AFTER_EOS = "next_token.masked_fill(finished, model.pad_id)"
RESTORE = "model.train(was_training)"
LOOP = "for _ in range(max_len):"
DECODE_STEP = "model.decode(tokens, memory, source)"
MODEL_MUTANTS = []  # Task 5, below

MUTANTS = [
    # ---- Tasks 1-4 ----

    # ---- Tasks 5-7 ----
    *MODEL_MUTANTS,
    Mutant(6, "never stops", ((STOP, "pass"),), NEVER_STOPS),
    Mutant(6, "EOS dropped", ((RETURN, "return tokens[:, 1:].masked_fill(tokens[:, 1:] == eos_id, model.pad_id)"),),
           DROPS_EOS),
    Mutant(6, "BOS kept", ((RETURN, "return tokens"),), KEEPS_BOS),
    Mutant(6, "padded with EOS", ((PAD_AFTER_EOS, "next_token.masked_fill(finished, eos_id)"),), PADS_WITH_EOS),
    Mutant(6, "not padded after EOS", ((PAD_AFTER_EOS, "next_token"),), NOT_PADDED),
    Mutant(6, "PAD id hard-coded", ((PAD_AFTER_EOS, "next_token.masked_fill(finished, 0)"),), "model.pad_id"),
    Mutant(6, "train mode (dropout active)", (("    model.eval()\n    try:", "    try:"),), TRAIN_MODE),
    Mutant(6, "mode not restored", ((RESTORE, "pass"),), "remember model.training first"),
    Mutant(6, "train mode set afterwards", ((RESTORE, "model.train()"),), "remember model.training first"),
    Mutant(6, "gradients on", (("with torch.no_grad():", "with torch.enable_grad():"),), BUILDS_GRAPH),
    Mutant(6, "float tokens", (("bos_id, dtype=torch.long", "bos_id, dtype=torch.float"),), "torch.long"),
    Mutant(6, "one token short of max_len", ((LOOP, "for _ in range(max_len - 1):"),), "generate at most max_len"),
    Mutant(6, "one token over max_len", ((LOOP, "for _ in range(max_len + 1):"),), "generate at most max_len"),
    Mutant(6, "stops when the first sequence finishes", (("if finished.all():", "if finished.any():"),), FIRST_STOPS),
    Mutant(6, "only the last token fed back", ((DECODE_STEP, "model.decode(tokens[:, -1:], memory, source)"),),
           PREFIX_NOT_FED),
]
