"""The llm assignment, instructor side: fixture builders, known mistakes, grading cases, bench, tests."""
