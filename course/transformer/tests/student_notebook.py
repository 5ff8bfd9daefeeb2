"""What tests/test_student_dist.py needs of the transformer assignment's untouched student notebook."""

# Text of the given cells (data, plots) that use no student code: they must run in the untouched notebook.
GIVEN_CELLS = ("PalindromeDataset(", "plot_lr_schedule")
