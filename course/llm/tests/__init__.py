"""The llm assignment's own tests (work in progress: Tasks 1 and 2)."""
