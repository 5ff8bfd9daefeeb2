"""Tests of the transformer assignment's slice: its checks (planted mistakes fail with their names, valid variants
pass, bad input is answered cleanly, each check is fast), its hidden grading cases and its notebook's text.
Course-wide tests live in tests/."""
