"""Instant checks for the llm assignment: check_task_N(student_object) passes or says what is wrong."""
from .._core import CheckFailure, NotImplementedYet
from .gqa import check_task_5
from .layers import check_task_3, check_task_4
from .lora import check_task_8
from .tiled import check_task_6
from .tokenizer import check_task_2
from .trained import check_task_7
from .training import check_task_1


__all__ = ["CheckFailure", "NotImplementedYet", "check_task_1", "check_task_2", "check_task_3", "check_task_4",
           "check_task_5", "check_task_6", "check_task_7", "check_task_8"]
