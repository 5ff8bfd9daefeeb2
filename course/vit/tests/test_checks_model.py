"""check_task_3 (VisionTransformer) both ways: the reference and valid variants pass, planted mistakes fail with their
names (the readout and block mistakes also without their stored outputs), a wrong PatchEmbedding or patchify is
blamed on Task 2, bad input is answered cleanly, a failure shows the calling line only, within a second."""
from unittest import mock

import pytest
import torch
import torch.nn as nn

from checkers.vit import CheckFailure, NotImplementedYet, check_task_3
from checkers.vit import _model_probes, model as model_check
from course.mutant import Mutant
from course.vit.mistakes import MUTANTS
from . import model_variants
from .checks import cpu_seconds, expect_named, failure_of, raised, reference, variant


PLANTED = [mutant for mutant in MUTANTS if mutant.task == 3]


@pytest.mark.fast
def test_reference_passes(capsys):
    check_task_3(reference()["VisionTransformer"])
    assert capsys.readouterr().out.startswith("✓ Task 3 passed")


@pytest.mark.fast
@pytest.mark.parametrize("mutant", PLANTED, ids=lambda m: m.name)
def test_planted_mistake_fails_with_its_name(mutant):
    expect_named(raised(3, variant(mutant)["VisionTransformer"]), mutant)


@pytest.mark.fast
def test_at_least_the_mistakes_the_brief_names_are_planted():
    assert {"mean of the patches", "mean of all tokens", "last token", "post-norm blocks", "missing final norm",
            "final norm before the blocks", "maps in reverse order", "only the last block's map",
            "maps averaged over heads", "dropout applied at eval", "blocks sharing one module",
            "head on every token"} <= {mutant.name for mutant in PLANTED}


PROBED = ["mean of the patches", "mean of all tokens", "last token", "missing final norm",
          "final norm before the blocks", "post-norm blocks", "forward_attention does not chain the blocks"]


@pytest.mark.fast
@pytest.mark.parametrize("name", PROBED)
def test_mistakes_are_named_without_stored_outputs(name):
    """The readout, flow and block probes name these from the student's own states, not from a stored signature."""
    mutant = next(m for m in PLANTED if m.name == name)
    with mock.patch.object(model_check, "signatures", lambda case, key: None):
        failure = raised(3, variant(mutant)["VisionTransformer"])
    expect_named(failure, mutant)


@pytest.mark.fast
@pytest.mark.parametrize("build", [model_variants.model_with_a_shared_helper, model_variants.model_with_hooks,
                                   model_variants.model_norming_every_token],
                         ids=lambda f: f.__name__)
def test_valid_variant_passes(build, capsys):
    check_task_3(build(reference()))
    assert capsys.readouterr().out.startswith("✓ Task 3 passed")


@pytest.mark.fast
def test_a_post_norm_block_of_the_students_own_class_is_named():
    message = failure_of(3, model_variants.model_with_its_own_blocks(reference(), post_norm=True))
    assert _model_probes.POST_NORM in message and "blocks[0]" in message, message


# ----- a wrong part of an earlier task is blamed on Task 2 ------------------------------------------------------

NO_POSITIONS = Mutant(2, "no position embedding added", (
    ("return torch.cat([cls, patches], dim=1) + self.position_embedding", "return torch.cat([cls, patches], dim=1)"),))
COLUMN_MAJOR = Mutant(1, "patches in column-major order", (
    ("patches.permute(0, 2, 4, 1, 3, 5)", "patches.permute(0, 4, 2, 1, 3, 5)"),))


@pytest.mark.fast
@pytest.mark.parametrize("mutant", [NO_POSITIONS, COLUMN_MAJOR], ids=lambda m: m.name)
def test_a_wrong_embedding_or_patchify_is_blamed_on_task_2(mutant):
    message = failure_of(3, variant(mutant)["VisionTransformer"])
    assert "does not pass check_task_2" in message and "fix Task 2 first" in message, message


# ----- bad input ----------------------------------------------------------------------------------------------------

def _with(ns, **methods):
    return type("VisionTransformer", (ns["VisionTransformer"],), methods)


def _after_init(change):
    """A subclass of the reference whose __init__ then applies change(self)."""
    def make(ns):
        def __init__(self, *args, **kwargs):
            ns["VisionTransformer"].__init__(self, *args, **kwargs)
            change(self)
        return _with(ns, __init__=__init__)
    return make


def _not_implemented(self, *args, **kwargs):
    raise NotImplementedError()


def _plain_list(model):
    """blocks kept in a Python list, so torch registers none of their parameters."""
    blocks = list(model.blocks)
    del model.blocks
    model.blocks = blocks


class Stub(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()


ARGS = (6, 2, 2, 5, 8, 2, 16, 3)
BAD = {
    "None": (lambda ns: None, "got None instead of the class"),
    "an instance": (lambda ns: ns["VisionTransformer"](*ARGS), "got an object of class"),
    "not a module": (lambda ns: dict, "not an nn.Module"),
    "NaN logits": (lambda ns: _with(ns, forward=lambda self, images: torch.full((len(images), 5), float("nan"),
                                                                                  dtype=torch.float64)), "NaN"),
    "forward returns None": (lambda ns: _with(ns, forward=lambda self, images: None), "is None"),
    "maps a tensor": (lambda ns: _with(ns, forward_attention=lambda self, images: torch.stack(
        ns["VisionTransformer"].forward_attention(self, images))), "should return a list of num_layers"),
    "maps scaled": (lambda ns: _with(ns, forward_attention=lambda self, images: [
        2 * attention for attention in ns["VisionTransformer"].forward_attention(self, images)]),
        "rows should sum to 1"),
    "blocks a plain list": (_after_init(_plain_list), "should be an nn.ModuleList"),
    "head of the wrong size": (_after_init(lambda self: setattr(self, "head", nn.Linear(8, 8))),
                               "should be nn.Linear(embed_dim, num_classes)"),
    "no final norm": (_after_init(lambda self: setattr(self, "final_norm", nn.Identity())),
                      "final_norm should be nn.LayerNorm(embed_dim)"),
    "torch's encoder layers": (_after_init(lambda self: setattr(self, "blocks", nn.ModuleList(
        nn.TransformerEncoderLayer(8, 2, 16, batch_first=True) for _ in range(3)))),
        "build every block with the provided PreNormBlock"),
    "logits detached": (lambda ns: _with(ns, forward=lambda self, images: ns["VisionTransformer"].forward(
        self, images).detach()), "do not require grad"),
    "an unused parameter": (_after_init(lambda self: setattr(self, "spare", nn.Parameter(torch.zeros(3)))),
                            "no gradient reaches `spare`"),
    "forward raises": (lambda ns: _with(ns, forward=lambda self, images: 1 / 0), "raised ZeroDivisionError"),
}


@pytest.mark.fast
@pytest.mark.parametrize("key", BAD)
def test_bad_input_fails_cleanly(key):
    make, words = BAD[key]
    message = failure_of(3, make(reference()))
    assert words in message, message


@pytest.mark.fast
@pytest.mark.parametrize("how", ["constructor creates no layers", "forward raises NotImplementedError",
                                 "forward_attention raises NotImplementedError"])
def test_not_implemented_is_reported_as_such(how):
    cls = Stub if how.startswith("constructor") else \
        _with(reference(), **{how.split()[0]: _not_implemented})
    with pytest.raises(NotImplementedYet, match="^Task 3 is not implemented yet"):
        check_task_3(cls)


@pytest.mark.fast
def test_a_failure_shows_the_calling_line_only():
    student = variant(next(m for m in PLANTED if m.name == "mean of the patches"))["VisionTransformer"]
    with pytest.raises(CheckFailure) as failure:
        check_task_3(student)  # the calling line
    text = "\n".join(failure.value._render_traceback_())
    assert "check_task_3(student)  # the calling line" in text and "test_checks_model.py" in text, text
    assert "checkers/" not in text and "_core" not in text, text


@pytest.mark.fast
def test_probe_sentences_are_the_mutants_diagnoses():
    """The planted readout mistakes quote the probes' own sentences, so the probes, not only signatures, name them."""
    quoted = {mutant.diagnosis for mutant in PLANTED}
    assert {_model_probes.MEAN_PATCHES, _model_probes.LAST_TOKEN, _model_probes.NO_FINAL_NORM,
            _model_probes.POST_NORM} <= quoted


@pytest.mark.full
@pytest.mark.parametrize("name", ["reference", "post-norm blocks", "mean of the patches", "dropout applied at eval",
                                  "forward_attention does not chain the blocks", "patches in column-major order"])
def test_check_takes_under_a_second(name):
    mutant = COLUMN_MAJOR if name == COLUMN_MAJOR.name else next((m for m in PLANTED if m.name == name), None)
    cls = reference()["VisionTransformer"] if name == "reference" else variant(mutant)["VisionTransformer"]

    def run():
        try:
            check_task_3(cls)
        except CheckFailure:
            pass
    assert cpu_seconds(run) <= 1.0


@pytest.mark.fast
def test_blocks_called_through_forward_are_not_said_to_be_skipped():
    """block.forward(x) runs no hooks: a wrong readout then is still reported, never as blocks not run."""
    mutant = next(m for m in PLANTED if m.name == "mean of the patches")
    direct = Mutant(3, "blocks called through .forward", mutant.edits + (("x = block(x)", "x = block.forward(x)"),))
    message = failure_of(3, variant(direct)["VisionTransformer"])
    assert "it ran blocks" not in message and mutant.diagnosis in message, message
