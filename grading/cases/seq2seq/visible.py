"""The visible checks' own cases, rebuilt from checkers/seq2seq/fixtures/*.pt as recipes (none until they land)."""

VISIBLE = {task: list for task in range(1, 7)}
