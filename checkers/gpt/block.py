"""SKELETON (replaced by its owner before this branch lands): Task 4's check."""


def check_task_4(*objects):
    raise NotImplementedError("the check of Task 4 is not written yet")
