"""Tasks 1-4's checks both ways: the reference and valid variants pass; planted and unnamed mistakes fail, named where
the evidence identifies them; bad input fails cleanly; every check stays within a second."""

import pytest
import torch
import torch.nn as nn

import checkers.seq2seq as checkers
from checkers.seq2seq import CheckFailure, NotImplementedYet
from course.seq2seq.mistakes import MUTANTS
from . import layers_unnamed as unnamed
from .checks import cpu_seconds, expect_named, reference, variant
from .layers_support import LAYER_OBJECTS, run_layer_check
from .layers_variants import LAYER_NORMS, MASKS, MULTIHEADS, make_decoder_blocks


LAYER_MUTANTS = [m for m in MUTANTS if m.task in LAYER_OBJECTS]


def check(task):
    return getattr(checkers, f"check_task_{task}")


def expect_pass(capsys, task, *objects):
    check(task)(*objects)
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


def failure_of(task, *objects):
    """The one-line message of the CheckFailure that check_task_<task>(*objects) must raise."""
    with pytest.raises(CheckFailure) as failure:
        check(task)(*objects)
    message = str(failure.value)
    assert message.startswith(f"Task {task}"), message
    assert "\n" not in message and "the check itself could not run" not in message, message
    return message


# ----- The reference ----------------------------------------------------------------------------------

@pytest.mark.fast
@pytest.mark.parametrize("task", sorted(LAYER_OBJECTS))
def test_reference_passes(task, capsys):
    run_layer_check(task, reference())
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


# ----- Planted mistakes: each fails, and is named when it has a diagnosis --------------------------------

@pytest.mark.fast
def test_every_layer_task_has_planted_mistakes():
    for task in LAYER_OBJECTS:
        assert sum(m.task == task for m in LAYER_MUTANTS) >= 5, task


@pytest.mark.fast
@pytest.mark.parametrize("mutant", LAYER_MUTANTS, ids=lambda m: f"task{m.task}-{m.name}")
def test_planted_mistake_fails_with_its_diagnosis(mutant):
    namespace = variant(mutant.apply)
    with pytest.raises(CheckFailure) as failure:
        run_layer_check(mutant.task, namespace)
    message = str(failure.value)
    assert message.startswith(f"Task {mutant.task}") and "\n" not in message, message
    if mutant.diagnosis:
        expect_named(failure.value, mutant)


@pytest.mark.fast
def test_diagnoses_are_distinct_per_task():
    """Two mistakes sharing one diagnosis would make a named mistake ambiguous (SHARED names both on purpose)."""
    from checkers.seq2seq.decoder import SHARED
    named = [(m.task, m.diagnosis) for m in LAYER_MUTANTS if m.diagnosis and m.diagnosis != SHARED]
    repeated = {pair for pair in named if named.count(pair) > 1}
    assert repeated <= {(2, checkers.masks.PADDING_NO_AXES), (3, checkers.attention.KV_FROM_X)}, repeated


# ----- Valid variants pass ------------------------------------------------------------------------------

@pytest.mark.fast
@pytest.mark.parametrize("cls", LAYER_NORMS, ids=lambda c: c.__name__)
def test_task_1_accepts(cls, capsys):
    expect_pass(capsys, 1, cls)


@pytest.mark.fast
@pytest.mark.parametrize("cls", unnamed.TORCH_NORMS, ids=lambda c: c.__name__)
def test_task_1_rejects_torch_s_own_layer_norm(cls):
    """The task is layer normalisation by hand: a forward that calls torch's (nn.LayerNorm, F.layer_norm,
    torch.layer_norm, F.rms_norm of the centred input, F.group_norm) fails naming what it called, right values or
    not."""
    called = unnamed.TORCH_NORMS[cls]
    assert failure_of(1, cls) == f"Task 1: LayerNorm.forward called {called}: {checkers.layer_norm.BY_HAND}"


@pytest.mark.fast
@pytest.mark.parametrize("name", ["no cross-attention", "no residual around cross-attention", "activation ignored",
                                  "memory as the queries"])
def test_task_4_does_not_blame_a_layer_norm_that_is_only_not_by_hand(name):
    """A DecoderBlock mistake on nn.LayerNorm is named as on a hand-written LayerNorm: nn.LayerNorm fails Task 1 for
    its method, but its values are right, so Task 4 does not send the student back to Task 1 for them."""
    attention, norm = reference()["MultiheadAttention"], reference()["LayerNorm"]
    by_hand = unnamed.make_unnamed_decoder_blocks(attention, norm)[name][0]
    on_torch_s = unnamed.make_unnamed_decoder_blocks(attention, unnamed.LayerNormOfTorch)[name][0]
    assert failure_of(4, on_torch_s) == failure_of(4, by_hand)


@pytest.mark.fast
def test_task_4_still_blames_a_layer_norm_of_wrong_values():
    """The counterpart: a LayerNorm whose values are wrong is named as the likely cause."""
    message = failure_of(4, make_decoder_blocks(reference()["MultiheadAttention"], unnamed.LayerNormSequenceAxis)[0])
    assert "does not pass check_task_1" in message and "fix Task 1 first" in message, message


@pytest.mark.fast
@pytest.mark.parametrize("name, refused", [
    ("torch.nn.functional.layer_norm", True), ("torch.layer_norm", True), ("torch.native_layer_norm", True),
    ("torch.ops.aten.native_layer_norm", True), ("torch.nn.functional.group_norm", True),
    ("torch.nn.functional.instance_norm", True), ("torch.batch_norm", True), ("torch.nn.functional.rms_norm", True),
    ("torch.norm", False), ("torch.linalg.vector_norm", False), ("torch.nn.functional.normalize", False),
    ("torch.var_mean", False), ("Tensor.var", False), ("torch.rsqrt", False)])
def test_task_1_refuses_torch_s_normalisations_and_nothing_else(name, refused):
    """Vector norms and F.normalize compute a length, not a layer norm: writing one by hand with them is fine."""
    problem = checkers.layer_norm.torch_norm_problem([{"Tensor.mean": 2, name: 1}])
    assert problem == (f"LayerNorm.forward called {name}: {checkers.layer_norm.BY_HAND}" if refused else None)


@pytest.mark.fast
def test_task_1_accepts_a_student_s_own_torch_function_mode(capsys):
    """A LayerNorm computed by hand inside a mode of the student's own is still by hand, and the check's recording
    of the calls leaves no mode behind."""
    from torch.overrides import TorchFunctionMode

    class PassThrough(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class LayerNormInMode(LAYER_NORMS[0]):
        def forward(self, x):
            with PassThrough():
                return super().forward(x)
    expect_pass(capsys, 1, LayerNormInMode)
    assert torch._C._len_torch_function_stack() == 0


@pytest.mark.fast
@pytest.mark.parametrize("functions", MASKS, ids=lambda pair: pair[0].__name__)
def test_task_2_accepts(functions, capsys):
    expect_pass(capsys, 2, *functions)


@pytest.mark.fast
@pytest.mark.parametrize("cls", MULTIHEADS, ids=lambda c: c.__name__)
def test_task_3_accepts(cls, capsys):
    expect_pass(capsys, 3, cls)


@pytest.mark.fast
@pytest.mark.parametrize("parts", ["reference", "variants"])
@pytest.mark.parametrize("index", [0, 1])
def test_task_4_accepts(parts, index, capsys):
    attention, norm = (reference()["MultiheadAttention"], reference()["LayerNorm"]) if parts == "reference" else \
        (MULTIHEADS[index], LAYER_NORMS[index])
    expect_pass(capsys, 4, make_decoder_blocks(attention, norm)[index])


@pytest.mark.fast
def test_task_4_rejects_a_module_list_of_norms():
    """The API pins norm1, norm2, norm3: a ModuleList of norms cannot be loaded by role."""
    base = make_decoder_blocks(reference()["MultiheadAttention"], reference()["LayerNorm"])[0]

    class DecoderBlockNormList(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.norms = nn.ModuleList([self.norm1, self.norm2, self.norm3])
            del self.norm1, self.norm2, self.norm3

        def _add(self, norm, x, sublayer_output, index):
            return self.norms[index](x + self.dropouts[index](sublayer_output))

        def forward(self, x, memory, self_mask=None, memory_mask=None, return_attention=False):
            x = self._add(None, x, self.self_attention(x, mask=self_mask), 0)
            x = self._add(None, x, self.cross_attention(x, context=memory, mask=memory_mask), 1)
            return self._add(None, x, self.feedforward(x), 2)

    assert "`norm1` should be a LayerNorm module, found nothing" in failure_of(4, DecoderBlockNormList)


# ----- Mistakes no planted mistake describes still fail, by a property where one applies ---------------------

@pytest.mark.fast
def test_task_2_names_a_reference_causal_mask_that_ignores_its_device():
    """The reference with `device=device` dropped: right on the CPU, so no grading case sees it (the hidden cases
    compare values on the CPU), hence an edit here rather than a planted mistake that the grader must reject."""
    from course.seq2seq.mistakes import CAUSAL
    assert CAUSAL.count(", device=device") == 1
    namespace = variant(lambda source: source.replace(CAUSAL, CAUSAL.replace(", device=device", "")))
    message = failure_of(2, namespace["causal_mask"], namespace["padding_mask"])
    assert message == ("Task 2: causal_mask(3, device='cpu:0') never passed the device on to torch: "
                       f"{checkers.masks.DEVICE_IGNORED}")


def unnamed_cases():
    ref = reference()
    cases = [
        (1, (unnamed.LayerNormLastAxisHardCoded,), "on a 2-D input raised IndexError"),
        (1, (unnamed.LayerNormOnesWeight,), "should start as torch.ones(6)"),
        (1, (unnamed.LayerNormSequenceAxis,), "standardised along axis 1 (size 4), not along the last axis"),
        (1, (unnamed.LayerNormWholeInput,), "standardised along axes (0, 1, 2) together (sizes 2 x 4 x 6), not "
                                            "along the last axis alone: " + checkers.layer_norm.WRONG_AXIS),
        (1, (unnamed.LayerNormMeanWithoutGradient,), checkers.layer_norm.MEAN_DETACHED),
        (1, (unnamed.LayerNormStdFromData,), checkers.layer_norm.VARIANCE_DETACHED),
        *((1, (cls,), checkers.layer_norm.BY_HAND) for cls in unnamed.TORCH_NORMS),
        (1, (unnamed.LayerNormWithoutAffine,), "LayerNorm: `weight` and `bias` should be nn.Parameters, the learned "
                                               "per-feature scale and shift"),
        (2, (unnamed.causal_mask_on_cpu, ref["padding_mask"]), "never passed the device on to torch: "
                                                                + checkers.masks.DEVICE_IGNORED),
        (2, (unnamed.causal_mask_float, ref["padding_mask"]), "should be torch.bool"),
        (2, (unnamed.causal_mask_batched, ref["padding_mask"]), "has shape (1, 1, 5, 5), expected (5, 5)"),
        (2, (ref["causal_mask"], unnamed.padding_mask_pad_is_zero_int), "should be torch.bool"),
        (3, (unnamed.MultiheadAttentionUnscaled,), "the scores are not scaled: divide them by √head_dim = √4."),
        (3, (unnamed.MultiheadAttentionDroppedContext,), "with x's length L_q = 3: split the keys and values with "
                                                         "the context's own length"),
    ]
    for cls, words in unnamed.make_unnamed_decoder_blocks(ref["MultiheadAttention"], ref["LayerNorm"]).values():
        cases.append((4, (cls,), words))
    return cases


UNNAMED = unnamed_cases()


@pytest.mark.fast
@pytest.mark.parametrize("task, objects, words", UNNAMED, ids=lambda value: value[0].__name__
                         if isinstance(value, tuple) else None)
def test_unnamed_mistake_fails(task, objects, words):
    message = failure_of(task, *objects)
    assert words in message, message


@pytest.mark.fast
def test_cross_attention_sources_swapped_are_named_where_the_same_length_case_fails():
    """Queries from the context, keys and values from x: named at the first case that shows it, never only
    'differs', and never a merge mistake (the crash at L_k != L_q comes from the swap)."""
    swapped = next(mutant for mutant in MUTANTS if mutant.name == "queries from the context, keys and values from x")
    message = failure_of(3, variant(swapped)["MultiheadAttention"])
    assert "context as long as x" in message and checkers.attention.SWAPPED in message, message
    assert "differs from the expected values" not in message and "merge the heads" not in message, message


@pytest.mark.fast
def test_a_layer_norm_without_tensors_but_with_a_forward_is_not_called_unimplemented():
    """The stub creates no tensors and its forward raises NotImplementedError; a written forward is no stub."""
    with pytest.raises(CheckFailure) as failure:
        check(1)(unnamed.LayerNormWithoutAffine)
    assert not isinstance(failure.value, NotImplementedYet) and "not implemented" not in str(failure.value)


# ----- Bad input ----------------------------------------------------------------------------------------

def _nan(result):
    if isinstance(result, (tuple, list)):
        return type(result)(_nan(item) for item in result)
    return torch.full_like(result, float("nan")) if isinstance(result, torch.Tensor) else result


def _not_implemented(self, *args, **kwargs):
    raise NotImplementedError()


CLASS_TASKS = {1: "LayerNorm", 3: "MultiheadAttention", 4: "DecoderBlock"}
EXAMPLE_ARGS = {"LayerNorm": (6,), "MultiheadAttention": (8, 2), "DecoderBlock": (8, 2, 16)}
BROKEN_CLASSES = {
    "None": (lambda base: None, "got None"),
    "instance instead of the class": (lambda base: base(*EXAMPLE_ARGS[base.__name__]), "an object of class"),
    "class not an nn.Module": (lambda base: type(base.__name__, (), {}), "not an nn.Module"),
    "function": (lambda base: (lambda *args, **kwargs: None), "the function"),
    "forward returns NaN": (lambda base: type("Broken", (base,), {
        "forward": lambda self, *a, **k: _nan(base.forward(self, *a, **k))}), "NaN"),
    "forward returns None": (lambda base: type("Broken", (base,), {"forward": lambda self, *a, **k: None}), "None"),
    "forward raises NotImplementedError": (lambda base: type("Broken", (base,), {"forward": _not_implemented}), None),
    "__init__ creates no layers": (lambda base: type("Broken", (base,), {  # the notebook's stub: forward unwritten too
        "__init__": lambda self, *a, **k: nn.Module.__init__(self), "forward": _not_implemented}), None),
}
NOT_IMPLEMENTED = {"forward raises NotImplementedError", "__init__ creates no layers"}


@pytest.mark.fast
@pytest.mark.parametrize("kind", BROKEN_CLASSES)
@pytest.mark.parametrize("task", sorted(CLASS_TASKS))
def test_broken_class(task, kind):
    make, words = BROKEN_CLASSES[kind]
    with pytest.raises(CheckFailure) as failure:
        check(task)(make(reference()[CLASS_TASKS[task]]))
    message = str(failure.value)
    assert "\n" not in message and "the check itself could not run" not in message, message
    if kind in NOT_IMPLEMENTED:
        assert isinstance(failure.value, NotImplementedYet), message
        assert message.startswith(f"Task {task} is not implemented yet"), message
    else:
        assert not isinstance(failure.value, NotImplementedYet) and message.startswith(f"Task {task}"), message
        assert words in message, message


def _raises_not_implemented(*args, **kwargs):
    raise NotImplementedError()


BROKEN_FUNCTIONS = {
    "None": (None, "got None"),
    "a class": (nn.Linear, "got the class Linear"),
    "returns None": (lambda *args, **kwargs: None, "is None"),
    "returns a list": (lambda *args, **kwargs: [[True]], "should be a torch.Tensor"),
    "returns NaN floats": (lambda *args, **kwargs: torch.full((5, 5), float("nan")), "dtype"),
}


@pytest.mark.fast
@pytest.mark.parametrize("kind", BROKEN_FUNCTIONS)
@pytest.mark.parametrize("position", [0, 1])
def test_broken_mask_function(position, kind):
    objects = [reference()["causal_mask"], reference()["padding_mask"]]
    objects[position] = BROKEN_FUNCTIONS[kind][0]
    message = failure_of(2, *objects)
    assert BROKEN_FUNCTIONS[kind][1] in message, message


@pytest.mark.fast
@pytest.mark.parametrize("position", [0, 1])
def test_mask_function_not_implemented(position):
    objects = [reference()["causal_mask"], reference()["padding_mask"]]
    objects[position] = _raises_not_implemented
    with pytest.raises(NotImplementedYet, match="^Task 2 is not implemented yet"):
        check(2)(*objects)


# ----- Speed --------------------------------------------------------------------------------------------

def _failing(task, objects):
    def run():
        with pytest.raises(CheckFailure):
            check(task)(*objects)
    return run


@pytest.mark.full
@pytest.mark.parametrize("task", sorted(LAYER_OBJECTS))
def test_checks_take_under_a_second(task):
    objects = [reference()[name] for name in LAYER_OBJECTS[task]]
    assert cpu_seconds(lambda: check(task)(*objects)) <= 1.0


@pytest.mark.full
@pytest.mark.parametrize("mutant", LAYER_MUTANTS, ids=lambda m: f"task{m.task}-{m.name}")
def test_diagnosing_a_planted_mistake_takes_under_a_second(mutant):
    objects = [variant(mutant.apply)[name] for name in LAYER_OBJECTS[mutant.task]]
    assert cpu_seconds(_failing(mutant.task, objects), runs=3) <= 1.0


@pytest.mark.full
@pytest.mark.parametrize("task, objects, words", UNNAMED, ids=lambda value: value[0].__name__
                         if isinstance(value, tuple) else None)
def test_diagnosing_an_unnamed_mistake_takes_under_a_second(task, objects, words):
    assert cpu_seconds(_failing(task, objects), runs=3) <= 1.0
