"""Every ✓ is worth its points: for every definition task of every assignment (course.toml), the instant check and
the grader's hidden cases agree on every known answer, right or wrong.

Each case is a student's answer to one task: the reference, a planted mistake (course/mistakes/<a>.py), a mistake of
the tests' unnamed lists, a correct alternative of the tests' variants, or a mistake written here. It runs through
the check cell's function (check ✓ or ✗) and through the grader's cases in process (tests/in_process_grading.py:
full points or 0), with the answer put in a fresh reference namespace under the check cell's names, so the later
classes use it as they would in the student's notebook. The test asserts: check ✓ <=> the task's full points.

SOURCES lists where the cases come from, one line per source; a module tests/<a>/unnamed_mistakes.py with a
MISTAKES or VARIANTS list of dict(task=, name=, objects={name: obj}, what=) is picked up without a line. Run this
file as a script to print the agreement matrix per assignment.
"""
import contextlib
import functools
import importlib
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/: in_process_grading and the slices' packages

from course.mutant import Mutant
from course.slices import slice_of
from course.reference import load_reference, reference_source
from course.registry import assignments
from in_process_grading import graded_cases_of, verdict_of

SEED = 0  # the global seed before every call: an answer that draws at random is judged on the same draws each run


@dataclass
class Case:
    """One answer to one task: its objects by the check cell's names, or edits of the reference source."""

    task: int
    name: str
    right: bool  # a correct answer (full points expected) or a mistake (0 expected)
    objects: dict = field(default_factory=dict)  # {check-cell name: student object}
    edits: tuple = ()  # Mutant edits of the reference source, when the answer is written that way


def mutants(right):
    """Cases from a list of Mutant (edits of the reference source)."""
    return lambda listed: [Case(m.task, m.name, right, edits=m.edits) for m in listed]


def by_names(task_objects, right):
    """Cases from (task, objects in the check cell's order) pairs."""
    return [Case(task, "-".join(getattr(o, "__name__", type(o).__name__) for o in objects), right,
                 objects=tuple(objects)) for task, objects in task_objects]


def dict_entries(entries, right):
    """Cases from dict(task=, name=, objects={name: obj}, what=) entries (tests/<a>/unnamed_mistakes.py)."""
    return [Case(e["task"], e["name"], right, objects=dict(e["objects"])) for e in entries]


def slice_module(name):
    """The module "<assignment>.<module>" of an assignment's own tests (course/<assignment>/tests/)."""
    assignment, module = name.split(".", 1)
    return importlib.import_module(f"course.{assignment}.tests.{module}")


# ----- where the cases come from, per assignment: (label, reference namespace -> [Case]) -----------------------

def _transformer_variants(ref):
    alt = slice_module("transformer.valid_variants")
    return by_names([(1, (f,)) for f in alt.ATTENTIONS] + [(2, (c,)) for c in alt.MULTIHEADS] +
                    [(3, (c,)) for c in alt.BLOCKS] + [(4, (c,)) for c in alt.POSITIONALS] +
                    [(5, (c,)) for c in alt.CLASSIFIERS] + [(7, classes) for classes in alt.LINFORMERS], True)


def _seq2seq_variants(ref):
    alt = slice_module("seq2seq.layers_variants")
    blocks = alt.make_decoder_blocks(ref["MultiheadAttention"], ref["LayerNorm"])
    return by_names([(1, (c,)) for c in alt.LAYER_NORMS] + [(2, pair) for pair in alt.MASKS] +
                    [(3, (c,)) for c in alt.MULTIHEADS] + [(4, (c,)) for c in blocks], True)


def _seq2seq_unnamed(ref):
    wrong = slice_module("seq2seq.layers_unnamed")
    blocks = wrong.make_unnamed_decoder_blocks(ref["MultiheadAttention"], ref["LayerNorm"])
    return by_names([(1, (c,)) for c in (wrong.LayerNormLastAxisHardCoded, wrong.LayerNormSequenceAxis,
                                         wrong.LayerNormWholeInput, wrong.LayerNormMeanWithoutGradient,
                                         wrong.LayerNormStdFromData, wrong.LayerNormOnesWeight)] +
                    [(2, (mask, ref["padding_mask"])) for mask in (wrong.causal_mask_float, wrong.causal_mask_on_cpu,
                                                                   wrong.causal_mask_batched)] +
                    [(2, (ref["causal_mask"], wrong.padding_mask_pad_is_zero_int)),
                     (3, (wrong.MultiheadAttentionUnscaled,)), (3, (wrong.MultiheadAttentionDroppedContext,))] +
                    [(4, (cls,)) for cls, _ in blocks.values()], False)


def _gpt_variants(ref):
    layers, models = slice_module("gpt.layers_variants"), slice_module("gpt.model_variants")
    attentions = layers.make_attentions(ref["RotaryEmbedding"])
    return by_names([(1, (c,)) for c in layers.ROTARIES] + [(task, (c,)) for task in (2, 3) for c in attentions] +
                    [(4, (models.block_with_named_sublayers(ref),)), (4, (models.block_rebuilding_the_cache(ref),)),
                     (5, (models.model_tied_the_other_way(ref),)), (5, (models.model_tied_after_construction(ref),)),
                     (6, (models.sample_with_topk_scatter,)), (6, (models.sample_with_sort_and_log_softmax,)),
                     (8, (models.generate_with_while_loop(ref),)), (8, (models.generate_calling_forward(ref),))],
                    True)


def _gpt_unnamed(ref):
    wrong = slice_module("gpt.layers_unnamed")
    attentions = wrong.make_unnamed_attentions(ref["RotaryEmbedding"])
    rotaries = (wrong.RotarySquaredPositions, wrong.RotaryFullWidthTables, wrong.RotaryOneAngle,
                wrong.RotaryTablesInForward, wrong.RotaryTablesSwapped)
    return by_names([(1, (c,)) for c in rotaries] +
                    [(2, (attentions["sdpa_unmasked"],)), (3, (attentions["sdpa_causal_with_cache"],)),
                     (3, (attentions["cache_ignored"],)), (2, (attentions["rotated_before_transpose"],))], False)


def _vit_variants(ref):
    layers, models = slice_module("vit.layers_variants"), slice_module("vit.model_variants")
    return by_names([(1, (f,)) for f in layers.PATCHIFIES] + [(2, (c,)) for c in layers.EMBEDDINGS] +
                    [(3, (build(ref),)) for build in (models.model_with_a_shared_helper, models.model_with_hooks,
                                                      models.model_norming_every_token)] +
                    [(5, (f,)) for f in (models.rollout_half_and_half, models.rollout_from_the_identity,
                                         models.rollout_by_reduce)], True)


# Mistakes that only this test writes: each once passed a check (issue 21).
S2S_DECODE_STEP = "next_token = model.decode(tokens, memory, source)[:, -1].argmax(dim=-1)"
WRITTEN_HERE = {
    "seq2seq": [
        Mutant(6, "greedy by torch.multinomial", ((S2S_DECODE_STEP, "next_token = torch.multinomial(torch.softmax("
                                                   "model.decode(tokens, memory, source)[:, -1], dim=-1), 1)[:, 0]"),)),
        Mutant(5, "dropout given to the decoder blocks only", (
            ("nn.ModuleList(EncoderBlock(*sizes)", "nn.ModuleList(EncoderBlock(*sizes[:4])"),)),
    ],
}

SOURCES = {  # assignment: [(label, reference -> [Case])]; every assignment also gets COMMON_SOURCES
    "transformer": [
        ("unnamed", lambda ref: by_names([(t, o) for t, o, _ in slice_module("transformer.unnamed_mistakes").UNNAMED],
                                         False)),
        ("variants", _transformer_variants),
    ],
    "seq2seq": [("unnamed", _seq2seq_unnamed), ("variants", _seq2seq_variants),
                ("hidden-case variants", lambda ref: mutants(True)(slice_module("seq2seq.test_hidden_cases").VALID))],
    "gpt": [("unnamed", _gpt_unnamed), ("variants", _gpt_variants),
            ("hidden-case variants", lambda ref: mutants(True)(slice_module("gpt.test_hidden_cases").VALID))],
    "vit": [("unnamed", lambda ref: by_names([(t, (o,)) for t, o, _ in slice_module("vit.test_checks_layers").UNNAMED],
                                             False)),
            ("variants", _vit_variants),
            ("hidden-case variants", lambda ref: mutants(True)(slice_module("vit.test_hidden_cases").VALID))],
}


def _extra_module(name):
    """course/<name>/tests/unnamed_mistakes.py's MISTAKES and VARIANTS (dict entries), if the module has them."""
    if not (Path(__file__).parent.parent / "course" / name / "tests" / "unnamed_mistakes.py").exists():
        return []
    module = slice_module(f"{name}.unnamed_mistakes")
    return dict_entries(getattr(module, "MISTAKES", []), False) + dict_entries(getattr(module, "VARIANTS", []), True)


COMMON_SOURCES = [
    ("reference", lambda name, ref: [Case(task, "reference", True) for task in ASSIGNMENTS[name].definition_tasks]),
    ("planted", lambda name, ref: mutants(False)(slice_of(name).mistakes.MUTANTS)),
    ("written here", lambda name, ref: mutants(False)(WRITTEN_HERE.get(name, []))),
    ("unnamed_mistakes.py", lambda name, ref: _extra_module(name)),
]

ASSIGNMENTS = {a.name: a for a in assignments()}

# Disagreements known and not yet mended: (assignment, task, case name) -> reason. strict: a fix shows here.
BEING_FIXED = {}


# ----- running a case both ways -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def source_of(name):
    return reference_source(ASSIGNMENTS[name])


@functools.lru_cache(maxsize=None)
def reference_of(name):
    return load_reference(source_of(name))


@functools.lru_cache(maxsize=None)
def graded_cases(name):
    """The grader's cases and the reference's records, built once per assignment."""
    return graded_cases_of(ASSIGNMENTS[name], reference_of(name))


def cases_of(name):
    """Every case of the assignment, its definition tasks only (trained tasks: tests/test_trained_needs.py)."""
    found = [case for _, make in COMMON_SOURCES for case in make(name, reference_of(name))]
    found += [case for _, make in SOURCES.get(name, []) for case in make(reference_of(name))]
    return [case for case in found if case.task in ASSIGNMENTS[name].definition_tasks]


def stand_ins(name, namespace):
    """Objects a check cell passes that no definition task defines: gpt's check_task_8(generate, model) gets a GPT
    built from the namespace's own class, untrained."""
    if name == "gpt":
        from course_lib import gpt as gpt_defaults
        torch.manual_seed(SEED)
        return {"model": namespace["GPT"](**gpt_defaults.MODEL)}
    return {}


def namespace_of(name, case):
    """A fresh reference namespace with the case's answer in it, as the student's notebook would hold it."""
    names = graded_cases(name)[2][case.task]
    namespace = load_reference(Mutant(case.task, case.name, case.edits).apply(source_of(name)))
    objects = case.objects if isinstance(case.objects, dict) else dict(zip(names, case.objects))
    namespace.update(objects)
    namespace.update({key: value for key, value in stand_ins(name, namespace).items() if key not in namespace})
    return namespace


def check_says(name, case, namespace):
    """(passed, what the check printed or raised) of the task's check cell on the namespace's objects."""
    task = ASSIGNMENTS[name].tasks[case.task]
    check = getattr(importlib.import_module(task.check_module), task.check_function)
    printed = io.StringIO()
    torch.manual_seed(SEED)
    try:
        with contextlib.redirect_stdout(printed):
            check(*[namespace[key] for key in graded_cases(name)[2][case.task]])
    except AssertionError as failure:  # CheckFailure: the only exception a check lets out
        return False, str(failure)
    return True, printed.getvalue().strip()


def grader_says(name, case, namespace):
    """(points, verdict message) of the grader's cases on the namespace."""
    torch.manual_seed(SEED)
    verdict = verdict_of(case.task, namespace, graded_cases(name))
    return verdict.score, verdict.message


def outcome(name, case):
    """(check passed, check's words, grader's points, grader's words, the task's points)."""
    namespace = namespace_of(name, case)
    passed, said = check_says(name, case, namespace)
    score, verdict = grader_says(name, case, namespace)
    return passed, said, score, verdict, ASSIGNMENTS[name].tasks[case.task].points


def parameters():
    params = []
    for name in ASSIGNMENTS:
        for case in cases_of(name):
            reason = BEING_FIXED.get((name, case.task, case.name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            kind = "right" if case.right else "wrong"
            params.append(pytest.param(name, case, marks=marks, id=f"{name}-task{case.task}-{kind}-{case.name}"))
    return params


@pytest.mark.parametrize("name, case", parameters())
def test_check_and_grader_agree(name, case):
    passed, said, score, verdict, points = outcome(name, case)
    assert passed == (score == points), f"check {'✓' if passed else '✗'} ({said}) but the grader gave {score} of " \
                                        f"{points} ({verdict})"
    assert score in (0, points), verdict
    assert passed == case.right, f"a {'correct' if case.right else 'wrong'} answer: check said {said}"


def test_every_definition_task_has_mistakes_and_correct_answers():
    """The cases reach every definition task of every assignment, both ways."""
    for name, assignment in ASSIGNMENTS.items():
        cases = cases_of(name)
        for right in (True, False):
            assert {c.task for c in cases if c.right == right} == set(assignment.definition_tasks), (name, right)


def agreement_matrix():
    """{assignment: {(check ✓, grader paid): count}} and the off-diagonal cases, printed."""
    for name in ASSIGNMENTS:
        counts, off = {}, []
        for case in cases_of(name):
            passed, said, score, verdict, points = outcome(name, case)
            key = ("✓" if passed else "✗", "paid" if score == points else "0")
            counts[key] = counts.get(key, 0) + 1
            if passed != (score == points) or passed != case.right:
                off.append(f"  task {case.task} {case.name!r} ({'right' if case.right else 'wrong'}): check "
                           f"{key[0]} {said[:160]!r}; grader {score}/{points} {verdict[:160]!r}")
        print(name, {f"{c}/{g}": n for (c, g), n in sorted(counts.items())}, *off, sep="\n")


if __name__ == "__main__":
    agreement_matrix()
