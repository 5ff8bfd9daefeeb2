"""Instant checks for the gpt assignment: check_task_N(student_object) passes or says what is wrong."""
from .._core import CheckFailure, NotImplementedYet
from .attention import check_task_2
from .block import check_task_4
from .cache import check_task_3
from .generation import check_task_8
from .model import check_task_5
from .rotary import check_task_1
from .sampling import check_task_6
from .trained import check_task_7

__all__ = ["CheckFailure", "NotImplementedYet", "check_task_1", "check_task_2", "check_task_3", "check_task_4",
           "check_task_5", "check_task_6", "check_task_7", "check_task_8"]
