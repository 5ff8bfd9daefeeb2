"""Instant checks for the vit assignment: check_task_N(student_object) passes or says what is wrong."""
from .._core import CheckFailure, NotImplementedYet
from .embedding import check_task_2
from .model import check_task_3
from .patches import check_task_1
from .rollout import check_task_5
from .trained import check_task_4

__all__ = ["CheckFailure", "NotImplementedYet", "check_task_1", "check_task_2", "check_task_3", "check_task_4",
           "check_task_5"]
