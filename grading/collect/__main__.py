"""`python -m grading.collect ZIP [--assignment NAME]`: see grading/collect/unpack.py."""
from .unpack import main

main()
