"""What a student who walked through the notebook met, each planted as an edit of the reference: a [CLS] token not
drawn from N(0, 1) (the check and the grader both reject it), an untrained Linformer given to Task 8, a Linformer
classifier that drops `activation` or builds its blocks one position short, projected queries, `activation` put in
nn.Sequential uncalled, and a LinformerBlock whose super().forward hands `mask` to an attention that takes none."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from checkers._traceback import render_traceback
from checkers.transformer import CheckFailure, check_task_3, check_task_5, check_task_6, check_task_7, check_task_8
from checkers.transformer.classifier import CLS_NOT_STANDARD_NORMAL
from checkers.transformer.linformer import QUERIES_PROJECTED
from course.reference import load_reference, reference_source
from course.registry import assignment
from course_lib import transformer as defaults
from course_lib.frames import source, student_frames
from grading.judge.expected import reference_namespace
from in_process_grading import graded_cases_of, verdict_of
from . import valid_variants as alt

pytestmark = pytest.mark.fast

TRANSFORMER = assignment("transformer")
SOURCE = reference_source(TRANSFORMER)
CLS = "self.cls_token = nn.Parameter(torch.randn(embed_dim))"
FEEDFORWARD = "nn.Linear(embed_dim, feedforward_dim), activation(),"
BLOCKS = "[LinformerBlock(embed_dim, num_heads, feedforward_dim, sequence_length, proj_dim, activation, dropout)"
QUERY = ("query = self.q_proj(x).view(heads_shape).transpose(1, 2)  # (B, H, L, head_dim)\n"
         "        key = self.k_proj(x).view(heads_shape).permute")
PROJECTED_QUERY = "query = self.e_proj(self.q_proj(x).view(heads_shape).permute(0, 2, 3, 1)).transpose(-2, -1)"
OWN_ATTENTION = "attended, attention = self.attention(x, return_attention=True)  # (B, L, D), (B, H, L, proj_dim)"
LINFORMER_FORWARD = f"""        {OWN_ATTENTION}
        x = self.norm1(x + self.dropout(attended))  # (B, L, D)
        x = self.norm2(x + self.dropout(self.feedforward(x)))  # (B, L, D)
        ### END SOLUTION
        if return_attention:
            return x, attention
        return x"""
LINFORMER = ("LinformerAttention", "LinformerBlock", "LinformerForSequenceClassification")


def edited(*edits):
    """The reference namespace with each (old, new) edit made once."""
    text = SOURCE
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return load_reference(text)


def as_student(tmp_path, *edits):
    """edited(...), run from a file of its own, as a notebook's cells are: the checks show its lines as the
    student's (the reference's own lines are not)."""
    text = SOURCE
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / "student_cells.py"
    path.write_text(text)
    namespace = {"math": math, "torch": torch, "nn": nn, "F": F}
    exec(compile(text, str(path), "exec"), namespace)
    return namespace


def failure_of(check, *objects):
    with pytest.raises(CheckFailure) as failure:
        check(*objects)
    return failure.value


def linformer(namespace):
    return [namespace[name] for name in LINFORMER]


@pytest.fixture(scope="module")
def graded_cases():
    return graded_cases_of(TRANSFORMER, reference_namespace(TRANSFORMER))


# ----- 1. cls_token drawn from N(0, 1) --------------------------------------------------------------

NOT_STANDARD_NORMAL = {
    "zeros": "self.cls_token = nn.Parameter(torch.zeros(embed_dim))",
    "small uniform": "self.cls_token = nn.Parameter(0.02 * torch.rand(embed_dim))",
    "uniform": "self.cls_token = nn.Parameter(torch.rand(embed_dim))",
    "N(0, 0.02)": "self.cls_token = nn.Parameter(nn.init.normal_(torch.empty(embed_dim), std=0.02))",
}
STANDARD_NORMAL = {
    "randn (1, 1, D)": "self.cls_token = nn.Parameter(torch.randn(1, 1, embed_dim))",
    "init.normal_": "self.cls_token = nn.Parameter(nn.init.normal_(torch.empty(embed_dim)))",
    "init.trunc_normal_": "self.cls_token = nn.Parameter(nn.init.trunc_normal_(torch.empty(embed_dim), std=1.0))",
}


@pytest.mark.parametrize("start", NOT_STANDARD_NORMAL.values(), ids=NOT_STANDARD_NORMAL)
def test_a_cls_token_not_drawn_from_n01_fails_task_5_and_scores_0(start, graded_cases):
    namespace = edited((CLS, start))
    failure = failure_of(check_task_5, namespace["TransformerForSequenceClassification"])
    assert failure.diagnosis == f"transformer.5.{CLS_NOT_STANDARD_NORMAL.slug}", str(failure)
    assert str(failure).startswith("Task 5: TransformerForSequenceClassification.cls_token starts with values of mean")
    verdict = verdict_of(5, namespace, graded_cases)
    assert verdict.score == 0 and "N(0, 1)" in verdict.message, verdict.message


@pytest.mark.parametrize("start", STANDARD_NORMAL.values(), ids=STANDARD_NORMAL)
def test_a_cls_token_drawn_from_n01_passes_task_5_and_scores(start, graded_cases, capsys):
    namespace = edited((CLS, start))
    check_task_5(namespace["TransformerForSequenceClassification"])
    assert capsys.readouterr().out.startswith("✓ Task 5 passed")
    verdict = verdict_of(5, namespace, graded_cases)
    assert verdict.score == TRANSFORMER.points[5], verdict.message


@pytest.mark.parametrize("cls", [alt.ClassifierTruncatedNormal, alt.ClassifierInitNormal], ids=lambda c: c.__name__)
def test_the_valid_variants_drawn_otherwise_pass(cls, capsys):
    check_task_5(cls)
    assert capsys.readouterr().out.startswith("✓ Task 5 passed")


# ----- 2. an untrained Linformer given to Task 8 ----------------------------------------------------

def fresh_linformer(namespace=None):
    namespace = namespace or load_reference(SOURCE)
    torch.manual_seed(0)
    return namespace["LinformerForSequenceClassification"](
        **dict(defaults.LINFORMER, sequence_length=defaults.SEQ_LEN + 1))


def test_an_untrained_linformer_is_told_it_was_never_trained():
    message = str(failure_of(check_task_8, fresh_linformer()))
    assert message.startswith("Task 8: the Linformer classifier was never trained: all 4 of its LayerNorms still hold "
                              "their initial weight 1 and bias 0"), message
    assert "`linformer_model`, the model built from Task 7's classes" in message and "tasks 1-5" not in message


def test_an_untrained_transformer_is_told_it_was_never_trained():
    namespace = load_reference(SOURCE)
    message = str(failure_of(check_task_6, namespace["TransformerForSequenceClassification"](**defaults.CLASSIFIER)))
    assert "never trained" in message and "`model`, the model built from Task 5's classes" in message, message


def test_a_linformer_whose_weights_moved_is_not_called_untrained():
    model = fresh_linformer()
    with torch.no_grad():
        model.encoder[0].norm1.bias.add_(1e-3)  # as one optimizer step would
    message = str(failure_of(check_task_8, model))
    assert "never trained" not in message and "tasks 1-5" not in message, message


# ----- 3. the Linformer classifier that drops `activation` ------------------------------------------

def test_the_activation_hint_names_the_block_class_the_classifier_builds():
    namespace = edited((BLOCKS, BLOCKS.replace("proj_dim, activation, dropout", "proj_dim, dropout=dropout")))
    message = str(failure_of(check_task_7, *linformer(namespace)))
    assert message.endswith("pass it on to every block, LinformerBlock(..., activation, dropout)."), message
    blocks = "[EncoderBlock(embed_dim, num_heads, feedforward_dim, activation, dropout)"
    namespace = edited((blocks, "[EncoderBlock(embed_dim, num_heads, feedforward_dim, dropout=dropout)"))
    message = str(failure_of(check_task_5, namespace["TransformerForSequenceClassification"]))
    assert message.endswith("pass it on to every block, EncoderBlock(..., activation, dropout)."), message


# ----- 4. blocks one position short: [CLS] forgotten ------------------------------------------------

def test_e_and_f_one_position_short_are_told_that_cls_is_prepended():
    namespace = edited((BLOCKS, BLOCKS.replace("sequence_length,", "sequence_length - 1,")))
    message = str(failure_of(check_task_7, *linformer(namespace)))
    assert message == ("Task 7: LinformerForSequenceClassification: `encoder.0.attention.e_proj.weight` has shape "
                       "(3, 6), expected (3, 7): E and F must cover all L + 1 = 7 positions the blocks see, because "
                       "[CLS] is prepended to the L = 6 tokens (the classifier's sequence_length already counts "
                       "[CLS])."), message


def test_e_and_f_two_positions_short_get_the_shapes_alone():
    namespace = edited((BLOCKS, BLOCKS.replace("sequence_length,", "sequence_length - 2,")))
    message = str(failure_of(check_task_7, *linformer(namespace)))
    assert message.endswith("has shape (3, 5), expected (3, 7)."), message


# ----- 5. projected queries: the line shown is the one that projects them ---------------------------

def test_projected_queries_show_the_line_that_projects_them(tmp_path):
    planted = (QUERY, QUERY.replace("query = self.q_proj(x).view(heads_shape).transpose(1, 2)", PROJECTED_QUERY))
    failure = failure_of(check_task_7, *linformer(as_student(tmp_path, planted)))
    assert failure.diagnosis == f"transformer.7.{QUERIES_PROJECTED.slug}", str(failure)
    frames = student_frames(failure.student_error.__traceback__)
    assert [frame[2] for frame in frames] == ["LinformerAttention.forward"]
    assert source(frames[-1][0], frames[-1][1], frames[-1][3]).startswith(PROJECTED_QUERY)
    shown = "\n".join(render_traceback(failure))
    assert PROJECTED_QUERY in shown and ".reshape(batch_size, seq_len" not in shown


def test_projected_queries_not_found_in_a_call_show_no_line(tmp_path):
    """Queries scaled before E: no call of E gets q_proj's values as they are, so no line is shown rather than the
    reshape that raised later."""
    scaled = PROJECTED_QUERY.replace("self.e_proj(self.q_proj(x)", "self.e_proj(2 * self.q_proj(x)")
    planted = (QUERY, QUERY.replace("query = self.q_proj(x).view(heads_shape).transpose(1, 2)", scaled))
    failure = failure_of(check_task_7, *linformer(as_student(tmp_path, planted)))
    assert failure.diagnosis == f"transformer.7.{QUERIES_PROJECTED.slug}", str(failure)
    assert getattr(failure, "student_error", None) is None


# ----- 6. `activation` uncalled, and super().forward handing `mask` on ------------------------------

def test_an_uncalled_activation_is_told_to_be_called():
    namespace = edited((FEEDFORWARD, FEEDFORWARD.replace("activation(),", "activation,")))
    message = str(failure_of(check_task_3, namespace["EncoderBlock"]))
    assert message.endswith("is not a Module subclass: `activation` is a class (nn.ReLU), not a module: call it, "
                            "activation(), to make the module that nn.Sequential holds."), message
    message = str(failure_of(check_task_5, namespace["TransformerForSequenceClassification"]))
    assert "`activation` is a class (nn.GELU), not a module: call it, activation()" in message, message


def test_super_forward_handing_mask_to_linformer_attention_names_the_call(tmp_path):
    super_forward = "        return super().forward(x, mask=mask, return_attention=return_attention)"
    planted = (LINFORMER_FORWARD, f"{super_forward}\n        ### END SOLUTION")
    message = str(failure_of(check_task_7, *linformer(as_student(tmp_path, planted))))
    assert message == (
        "Task 7: LinformerBlock.forward raised TypeError: LinformerAttention.forward() got an unexpected keyword "
        "argument 'mask': LinformerBlock.forward calls super().forward(...), so EncoderBlock.forward runs "
        "`attended, attention = self.attention(x, mask=mask, return_attention=True)`, but LinformerAttention.forward "
        "takes only (x, return_attention=False): write LinformerBlock.forward in full rather than handing the call "
        "on to super().forward(...)."), message


def test_a_forward_called_with_an_argument_it_does_not_take_names_the_line_and_the_parameters(tmp_path):
    planted = (OWN_ATTENTION, "attended, attention = self.attention(x, mask=mask, return_attention=True)")
    message = str(failure_of(check_task_7, *linformer(as_student(tmp_path, planted))))
    assert message.endswith(
        ": `attended, attention = self.attention(x, mask=mask, return_attention=True)` in LinformerBlock.forward "
        "calls LinformerAttention.forward, which takes (x, return_attention=False)."), message


def test_the_reference_and_its_variants_still_pass(capsys):
    namespace = load_reference(SOURCE)
    check_task_3(namespace["EncoderBlock"])
    check_task_5(namespace["TransformerForSequenceClassification"])
    check_task_7(*linformer(namespace))
    for classes in alt.LINFORMERS:
        check_task_7(*classes)
    assert capsys.readouterr().out.count("passed") == 3 + len(alt.LINFORMERS)
