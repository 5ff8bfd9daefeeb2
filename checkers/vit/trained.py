"""Task 4 (skeleton: a helper writes this check)."""


def check_task_4(*args, **kwargs):
    raise RuntimeError("check_task_4 of vit is not written yet")
