"""Instant checks for the llm assignment (work in progress): check_task_N(student_object) passes or says what is
wrong. Task 5 has no check yet: its check says so and fails."""
from .._core import CheckFailure, NotImplementedYet, check_function
from .layers import check_task_3, check_task_4
from .lora import check_task_8
from .tiled import check_task_6
from .tokenizer import check_task_2
from .training import check_task_1


def _not_written(number):
    @check_function(number)
    def check(task, *args, **kwargs):
        task.fail("this check is not written yet (the llm assignment is work in progress); nothing was tested.")
    check.__name__ = f"check_task_{number}"
    return check


check_task_5 = _not_written(5)

__all__ = ["CheckFailure", "NotImplementedYet", "check_task_1", "check_task_2", "check_task_3", "check_task_4",
           "check_task_5", "check_task_6", "check_task_8"]
