"""The visible checks' own cases, rebuilt from checkers/seq2seq/fixtures/*.pt as recipes.

They run in the grader too, so a notebook that fools its own check cell (a monkeypatched checker, an edited check
cell) is still held to them; their expected values are recomputed from the reference like every other case's, not
read from the fixture.
"""
from checkers._core import load_fixture

from ..parts import called, recipe
from .hidden import scripted


def decoding_cases():
    """Task 6: greedy_decode on the check's scripted models, in the mode each case starts in."""
    cases = []
    for name, case in load_fixture("checkers.seq2seq", 6)["cases"].items():
        ids = (case["pad_id"], case["bos_id"], case["eos_id"])
        model = scripted(ids, "train" if case["training"] else "eval")
        cases.append(recipe(6, f"check: {name}", True,
                            call=called(model, case["source"], case["max_len"], case["bos_id"], case["eos_id"])))
    return cases


VISIBLE = {1: list, 2: list, 3: list, 4: list, 5: list, 6: decoding_cases}  # Tasks 1-5: when their fixtures land
