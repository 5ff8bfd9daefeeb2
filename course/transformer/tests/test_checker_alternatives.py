"""No false rejections: correct solutions written differently from the reference pass every checker.

The solutions are the independent implementations of valid_variants.py. Then each known mistake is
planted and its checker must say the mistake's diagnosis, so a mistake with a diagnosis is always named, never only
flagged; and the wrong implementations at the end, which no stored output describes, must be named too.
"""
import math

import pytest
import torch
import torch.nn.functional as F
from slice_reference import diagnosis_id

import checkers.transformer as checkers
from checkers.transformer import CheckFailure
from course.transformer.mistakes import MUTANTS
from .student_objects import run_check
from .valid_variants import (ATTENTIONS, BLOCKS, CLASSIFIERS, LINFORMERS, MULTIHEADS, POSITIONALS, ClassifierModuleList,
                             EncoderBlockTwoDropouts, LinformerAttentionEinsum, LinformerBlockInherited,
                             MultiheadAttentionPermute, attention_einsum)

pytestmark = pytest.mark.fast


def expect_pass(capsys, task, *student_objects):
    """Run check_task_N on the objects; it must not raise and must print '✓ Task N passed'."""
    getattr(checkers, f"check_task_{task}")(*student_objects)
    assert capsys.readouterr().out.startswith(f"✓ Task {task} passed")


@pytest.mark.parametrize("attention_fn", ATTENTIONS, ids=lambda f: f.__name__)
def test_task_1_accepts(attention_fn, capsys):
    expect_pass(capsys, 1, attention_fn)


@pytest.mark.parametrize("cls", MULTIHEADS, ids=lambda c: c.__name__)
def test_task_2_accepts(cls, capsys):
    expect_pass(capsys, 2, cls)


@pytest.mark.parametrize("cls", BLOCKS, ids=lambda c: c.__name__)
def test_task_3_accepts(cls, capsys):
    expect_pass(capsys, 3, cls)


@pytest.mark.parametrize("cls", POSITIONALS, ids=lambda c: c.__name__)
def test_task_4_accepts(cls, capsys):
    expect_pass(capsys, 4, cls)


@pytest.mark.parametrize("cls", CLASSIFIERS, ids=lambda c: c.__name__)
def test_task_5_accepts(cls, capsys):
    expect_pass(capsys, 5, cls)


@pytest.mark.parametrize("classes", LINFORMERS, ids=lambda c: "-".join(cls.__name__ for cls in c))
def test_task_7_accepts(classes, capsys):
    expect_pass(capsys, 7, *classes)


# ----- Every planted mistake with a diagnosis is named --------------------------------------------

@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m.diagnosis], ids=lambda m: f"task{m.task}-{m.name}")
def test_planted_mistake_is_named(mutant, load_variant):
    namespace = load_variant(mutant.apply)
    with pytest.raises(CheckFailure) as failure:
        run_check(mutant.task, namespace)
    assert str(failure.value).startswith(f"Task {mutant.task}")
    assert mutant.diagnosis in str(failure.value)
    assert failure.value.diagnosis == diagnosis_id("transformer", mutant), str(failure.value)


# ----- Mistakes that no stored output describes are still named, by the checkers' property checks ---

def attention_transposed_first_axes(query, key, value, mask=None):
    """Wrong: transpose(0, 1) is right for 2-D inputs only."""
    attention = torch.softmax(query @ key.transpose(0, 1) / math.sqrt(query.size(-1)), dim=-1)
    return attention @ value, attention


def attention_naive_softmax(query, key, value, mask=None):
    """Wrong: exp without subtracting the row maximum overflows in float32."""
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = torch.exp(scores)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ value, weights


class MultiheadAttentionMaskAxisFirst(MultiheadAttentionPermute):
    """Wrong: a (B, L, L) mask gets its new axis in front, (1, B, L, L)."""

    def forward(self, x, mask=None, return_attention=False):
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(0)  # (1, B, L, L): B is then matched against the heads
        return super().forward(x, mask, return_attention)


class EncoderBlockFunctionalDropout(EncoderBlockTwoDropouts):
    """Wrong: F.dropout's training flag defaults to True, so dropout stays on in eval mode."""

    def forward(self, x, mask=None, return_attention=False):
        attended, attention = self.attention(x, mask, True)
        x = self.norm1(x + F.dropout(attended, self.dropout.p))
        x = self.norm2(x + F.dropout(self.feedforward(x), self.dropout.p))
        return (x, attention) if return_attention else x


class ClassifierClsIntoFirstToken(ClassifierModuleList):
    """Wrong: [CLS] is added to the first token instead of being prepended."""

    def prepend(self, tokens):
        return torch.cat([tokens[:, :1] + self.cls_token, tokens[:, 1:]], dim=1)


class LinformerAttentionQueriesByF(LinformerAttentionEinsum):
    """Wrong: the queries are compressed too (with F), so the output has proj_dim rows."""

    def forward(self, x, mask=None, return_attention=False):
        batch_size, seq_len, embed_dim = x.shape
        heads = lambda t: t.reshape(batch_size, seq_len, self.num_heads, self.head_dim).permute(0, 2, 3, 1)
        query = self.f_proj(heads(self.q_proj(x))).transpose(-2, -1)
        key = self.e_proj(heads(self.k_proj(x))).transpose(-2, -1)
        value = self.f_proj(heads(self.v_proj(x))).transpose(-2, -1)
        res, attention = attention_einsum(query, key, value)
        outputs = self.o_proj(res.transpose(1, 2).reshape(batch_size, seq_len, embed_dim))
        return (outputs, attention) if return_attention else outputs


@pytest.mark.parametrize("task, student_objects, words", [
    (1, (attention_transposed_first_axes,), "key.transpose(-2, -1)"),
    (1, (attention_naive_softmax,), "subtract each row's maximum"),
    (2, (MultiheadAttentionMaskAxisFirst,), "mask.unsqueeze(1)"),
    (3, (EncoderBlockFunctionalDropout,), "dropout stays active in eval mode"),
    (5, (ClassifierClsIntoFirstToken,), "[CLS] is not prepended"),
    (7, (LinformerAttentionQueriesByF, LinformerBlockInherited, LINFORMERS[0][2]), "queries are compressed"),
], ids=lambda value: value.__name__ if callable(value) else None)
def test_unrecorded_mistake_is_named(task, student_objects, words):
    with pytest.raises(CheckFailure, match=f"^Task {task}") as failure:
        getattr(checkers, f"check_task_{task}")(*student_objects)
    assert words in str(failure.value)
