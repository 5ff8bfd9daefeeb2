"""Task 7's scored data, hidden from the grading sandbox: the held-out help topics, replaced there by stand-ins.

The grader scores the trained Llama on the first EVAL_CHARS characters of the held-out help topics, which ship with
every Python (`pydoc_data.topics`). Inside the sandbox that package is covered (grading/sandbox/covers.py) by one
whose held-out topics hold stand-in text: docstrings of the standard library's packages (their modules below the
top level, so none of the LoRA demo's docstrings), cut to each topic's length. The training topics are the
originals, so the tokenizer and an honest training run are what the student ran at home; the judge still scores on
the real held-out text, outside the sandbox.

The stand-ins come in two texts drawn alike, alternate docstrings: `shown` (in the sandbox's held-out topics) and
`unseen` (never in the sandbox as held-out text). A model trained on what the sandbox calls the held-out text has
fitted the scored part of `shown`; an honest one knows both equally well. The judge measures the difference
(`fitted_share`); the thresholds come from `python -m course.llm.stand_ins_study`.
"""
import ast
import shutil
import sysconfig
from functools import cache
from pathlib import Path

import torch
import torch.nn.functional as F

from course_lib import llm as llm_defaults
from course_lib.device import cpu_threads
from course_lib.llm import help_topics, is_held_out, split_topics

SKIPPED = {"test", "tests", "idlelib", "lib2to3", "site-packages"}  # test suites and tools, not library prose
BLOCK_TOKENS = 32  # predictions per block of fitted_share


def package_docstrings():
    """The module, class and function docstrings of the standard library's modules below its top level, in the order
    of their sorted paths, each once (stdlib_docstrings of course_lib.llm reads the top-level modules)."""
    root, seen = Path(sysconfig.get_paths()["stdlib"]), set()
    for path in sorted(root.glob("*/**/*.py")):
        if SKIPPED & set(path.relative_to(root).parts[:-1]):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            text = isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and ast.get_docstring(node)
            if text and text not in seen:  # a docstring copied between modules is given once
                seen.add(text)
                yield text


@cache
def stand_in_topics():
    """{"shown": {topic name: text}, "unseen": the same}: every help topic, the held-out ones' texts replaced by
    alternate docstrings (package_docstrings), cut to the lengths of the texts they stand in for."""
    topics = help_topics()
    lengths = {name: len(text) for name, text in topics.items() if is_held_out(name)}
    texts, needed = ([], []), sum(lengths.values()) + len(lengths)
    for index, docstring in enumerate(package_docstrings()):
        texts[index % 2].append(docstring)
        if all(sum(map(len, side)) + 2 * len(side) >= needed for side in texts):
            break
    versions = {}
    for name, side in zip(("shown", "unseen"), texts):
        text, start, replaced = "\n\n".join(side), 0, dict(topics)
        for topic, length in lengths.items():
            replaced[topic], start = text[start:start + length], start + length + 1
        versions[name] = replaced
    return versions


def stand_in_package(folder):
    """A copy of pydoc_data in folder/pydoc_data whose topics.py holds the shown stand-ins (compiled); its path."""
    import pydoc_data
    installed = Path(pydoc_data.__file__).parent
    package = Path(folder) / "pydoc_data"
    shutil.copytree(installed, package, ignore=shutil.ignore_patterns("__pycache__", "topics.py"))
    source = "# The grading sandbox's stand-in: the held-out topics hold other text.\ntopics = "
    (package / "topics.py").write_text(source + repr(stand_in_topics()["shown"]) + "\n", encoding="utf-8")
    return installed, package


def scored_parts():
    """{"shown": the scored part (EVAL_CHARS) of the sandbox's held-out text, "unseen": its twin}."""
    return {name: split_topics(topics)[1][:llm_defaults.EVAL_CHARS] for name, topics in stand_in_topics().items()}


@torch.no_grad()
def block_losses(model, ids, max_len):
    """Mean next-token cross-entropy (nats) of each BLOCK_TOKENS predictions, over bits_per_byte's windows."""
    ids = torch.as_tensor(ids, dtype=torch.long)  # (N,)
    full = (len(ids) - 1) // max_len
    windows = ids[:full * max_len + 1].unfold(0, max_len + 1, max_len)  # (full, max_len + 1)
    logits, _ = model(windows[:, :-1])  # (full, max_len, V)
    losses = F.cross_entropy(logits.flatten(0, 1).float(), windows[:, 1:].flatten(), reduction="none")  # (full L,)
    usable = len(losses) // BLOCK_TOKENS * BLOCK_TOKENS
    return losses[:usable].reshape(-1, BLOCK_TOKENS).mean(dim=-1)  # (blocks,)


def fitted_share(model, encode):
    """The share of (shown, unseen) block pairs in which the shown block has the lower loss (ties count half): about
    0.5 for a model that saw neither scored part, near 1 for one trained on the shown one.

    Args:
        model: maps tokens (B, L) to (logits, cache); encode: text -> token ids (the notebook's tokenizer).
    """
    was_training = model.training
    model.eval()
    try:
        with cpu_threads(1):
            parts = scored_parts()
            shown, unseen = (block_losses(model, encode(parts[name]), llm_defaults.MODEL["max_len"])
                             for name in ("shown", "unseen"))
    finally:
        model.train(was_training)
    shown, unseen = shown[:, None], unseen[None, :]  # (S, 1), (1, U)
    return ((shown < unseen).float().mean() + 0.5 * (shown == unseen).float().mean()).item()


STAND_IN_NOTE = ("In the grader's run the held-out help topics were stand-ins (other text of the standard library's "
                 "docstrings), so that no notebook can train on the text it is scored on: what the cells that use "
                 "the held-out text printed there (the training curves, Task 7's scores, your own Task 7 check, the "
                 "LoRA comparison) differs from your own run. Task 7's score comes from your saved weights and "
                 "merges, measured on the real held-out topics.")
# Honest runs of the reference (seeds 0-2; 250, 500 and 1,100 steps) gave 0.477-0.512; the same runs with the shown
# scored part added four times to the training ids 0.556-0.565 (250 steps: not flagged), 0.653-0.666 (500) and
# 0.804-0.824 (1,100), and a hundred times, 250 steps, 0.79 (`python -m course.llm.stand_ins_study`, a 2-core CPU at a
# load of 1.5-4.6; docs/instructors.md, "Training on the test data")
FITTED_SHARE = 0.60


def stand_ins(folder):
    """[(the installed pydoc_data package, its stand-in written in folder)]."""
    return [stand_in_package(folder)]


def stand_in_flag(model, reference, notebook=None):
    """Why a person must look at the loaded reference Llama ('' when nothing): it fits the scored part of the shown
    stand-ins far better than its unseen twin (fitted_share at least FITTED_SHARE), cut by the reference tokenizer
    with the notebook's merges; raises InvalidModel for merges that are not valid (the score says why)."""
    from .trained_model import valid_merges
    merges = valid_merges((notebook or {}).get("merges"), model.token_embedding.num_embeddings)
    share = fitted_share(model, reference["BPETokenizer"](merges).encode)
    if share < FITTED_SHARE:
        return ""
    return (f"the model fits the stand-ins that the grader's sandbox holds in place of the held-out topics far better "
            f"than their unseen twin ({share:.0%} of block pairs, honest models about 50%, flagged from "
            f"{FITTED_SHARE:.0%}): it trained on what it was told is the held-out text, the text it is scored on "
            "(in the sandbox the stand-ins buy nothing; at home the real text would): check by hand what the "
            "notebook trains on")
