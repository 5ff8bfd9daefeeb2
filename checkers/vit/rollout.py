"""Task 5 (skeleton: a helper writes this check)."""


def check_task_5(*args, **kwargs):
    raise RuntimeError("check_task_5 of vit is not written yet")
