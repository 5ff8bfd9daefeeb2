"""SKELETON (replaced by its owner before this branch lands): Task 2's check."""


def check_task_2(*objects):
    raise NotImplementedError("the check of Task 2 is not written yet")
