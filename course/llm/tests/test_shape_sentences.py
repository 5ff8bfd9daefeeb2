"""Shape errors a student walking through llm met (RMSNorm without keepdim or over dim 2; GQA's cache joined on the
wrong axis, keys repeated by the number of kv heads, RoPE over embed_dim): each is said as the shapes on the student's
failing line and what met (checkers/_shapes.py), never torch's message alone. The answers run as a notebook cell
would (a cell's file name, its source in linecache), so their frames are the student's."""
import linecache
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from checkers.llm import CheckFailure, check_task_3, check_task_5
from course.reference import reference_source
from course.registry import assignment

pytestmark = pytest.mark.fast
CELL = "<ipython-input-7-walkthrough>"
RMS = "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)"
CACHE = "torch.cat([cache[0], key], dim=2), torch.cat([cache[1], value], dim=2)"
REPEAT = "key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)"
ROPE = "RotaryEmbedding(self.head_dim, max_len)"


def as_cell(old, new):
    """The reference answers with old replaced by new, run as a notebook cell: its namespace."""
    source = reference_source(assignment("llm"))
    assert source.count(old) == 1
    source = source.replace(old, new)
    linecache.cache[CELL] = (len(source), None, source.splitlines(True), CELL)
    namespace = {"math": math, "torch": torch, "nn": nn, "F": F}
    exec(compile(source, CELL, "exec"), namespace)
    return namespace


@pytest.mark.parametrize("check, name, old, new, shapes, met", [
    (check_task_3, "RMSNorm", RMS, RMS.replace(", keepdim=True", ""), "`x` (2, 4, 6)", "met at dimension 2"),
    (check_task_3, "RMSNorm", RMS, RMS.replace("dim=-1", "dim=2"), "`x` (5, 6)", "dimension 2 was asked"),
    (check_task_5, "GroupedQueryAttention", CACHE, CACHE.replace("dim=2", "dim=1"), "`key` (2, 2, 3, 4)",
     "tensors joined along dimension 1 differ in another dimension: 4 and 3"),
    (check_task_5, "GroupedQueryAttention", REPEAT, REPEAT.replace("group", "self.num_kv_heads"),
     "`keys` (2, 16, 7, 4)", "sizes 4 and 16 met at dimension 1"),
    (check_task_5, "GroupedQueryAttention", ROPE, ROPE.replace("self.head_dim", "embed_dim"), "`cos` (7, 8)",
     "sizes 2 and 8 met at dimension 3")],
    ids=["RMSNorm without keepdim", "RMSNorm over dim 2", "cache on dim 1", "repeated by kv heads",
         "RoPE of embed_dim"])
def test_each_shape_error_names_the_shapes_on_the_student_s_line(check, name, old, new, shapes, met):
    with pytest.raises(CheckFailure) as failure:
        check(as_cell(old, new)[name])
    said = str(failure.value)
    assert "shapes do not fit: your line" in said and shapes in said and met in said, said
    assert "must match the size of tensor" not in said and "Sizes of tensors must match" not in said
