"""The vit assignment's slice tests: its checks both ways, bad input, speed, notebook text, hidden cases."""
