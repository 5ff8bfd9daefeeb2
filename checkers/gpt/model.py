"""SKELETON (replaced by its owner before this branch lands): Task 5's check."""


def check_task_5(*objects):
    raise NotImplementedError("the check of Task 5 is not written yet")
