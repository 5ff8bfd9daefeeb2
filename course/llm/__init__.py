"""The llm assignment's instructor side (work in progress, not in course.toml yet).

DESIGN (issue 26) keeps the assignment out of course.toml until every part of it exists; until then its tools and
tests find it through WORK_IN_PROGRESS, an Assignment built as the registry would build it from the entry it will
get (the same tasks and points), rooted in this checkout. Register it by moving TASKS into course.toml.
"""
from course import registry

TITLE = "A small Llama: byte-level BPE, RMSNorm, SwiGLU, grouped-query attention, tiled attention, LoRA"
TASKS = {  # the course.toml entry to be: {task: (points, trains, needs)}
    1: (2, False, ()), 2: (1, False, ()), 3: (1, False, ()), 4: (1, False, ()), 5: (2, False, ()),
    6: (2, False, ()), 7: (2, True, (3, 4, 5)), 8: (1, False, ()),
}
WORK_IN_PROGRESS = registry.Assignment(
    "llm", TITLE,
    {number: registry.Task(number, points, f"checkers.llm:check_task_{number}", trains, needs)
     for number, (points, trains, needs) in TASKS.items()},
    registry.limits(), registry.ROOT)
