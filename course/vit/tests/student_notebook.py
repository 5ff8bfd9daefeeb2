"""What tests/test_student_dist.py needs of the vit assignment's untouched student notebook."""

# Text of the given cells (data, plots) that use no student code: they must run in the untouched notebook.
GIVEN_CELLS = ("digit_splits(",)
