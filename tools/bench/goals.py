"""The bench's table: each measured figure with the goal it is held to, PASS or MISS."""
from dataclasses import asdict, dataclass
from typing import Optional


@dataclass
class Goal:
    """One row of the bench's table: a measured figure, and the goal it is held to (if any).

    Args:
        section: part of the bench, e.g. "training step".
        name: what was measured.
        measured: the figure, as shown (already formatted, unit included).
        goal: the target in words, e.g. "<= 1.3"; "" for a figure reported without a goal.
        passed: True / False against the goal; None for a figure without one.
    """

    section: str
    name: str
    measured: str
    goal: str = ""
    passed: Optional[bool] = None

    @property
    def verdict(self) -> str:
        """PASS, MISS, or "-" for a figure without a goal."""
        return "-" if self.passed is None else ("PASS" if self.passed else "MISS")


def goals_as_dicts(goals):
    """The goals as JSON-ready dicts (verdict included)."""
    return [dict(asdict(goal), verdict=goal.verdict) for goal in goals]


def format_table(goals, title="Measured performance"):
    """Plain-text table of the goals, one row each, with PASS / MISS where a goal applies.

    Args:
        goals: list of Goal.
        title: line printed above the table.

    Returns:
        The table as one string.
    """
    header = ("section", "measurement", "measured", "goal", "result")
    rows = [header] + [(g.section, g.name, g.measured, g.goal or "-", g.verdict) for g in goals]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = [" | ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    rule = "-+-".join("-" * width for width in widths)
    return "\n".join([title, lines[0], rule, *lines[1:]])


def ms(seconds):
    """A duration in seconds, shown in ms to 3 significant digits."""
    return f"{seconds * 1e3:.3g} ms"


def seconds_or_not_reached(value):
    """Seconds to a target, or "not reached" for None."""
    return "not reached" if value is None else f"{value:.1f} s"


def seeds_to_target(runs):
    """"seed 0: 2.7 s (220 steps), ..." for training runs with seed, target_seconds and target_steps."""
    return ", ".join(f"seed {run['seed']}: {seconds_or_not_reached(run['target_seconds'])} "
                     f"({run['target_steps']} steps)" for run in runs)
