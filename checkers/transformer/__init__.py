"""Instant checks for the Transformer encoder assignment: check_task_N(student_object) passes or says what is wrong."""
from .._core import CheckFailure, NotImplementedYet
from .attention import check_task_1
from .classifier import check_task_5
from .encoder import check_task_3
from .linformer import check_task_7
from .multihead import check_task_2
from .positional import check_task_4
from .trained import check_task_6, check_task_8

__all__ = ["CheckFailure", "NotImplementedYet", "check_task_1", "check_task_2", "check_task_3", "check_task_4",
           "check_task_5", "check_task_6", "check_task_7", "check_task_8"]
