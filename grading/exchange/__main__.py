"""`python -m grading.exchange release|collect|feedback --assignment NAME`: see grading/exchange/__init__.py."""
import sys

from . import main

sys.exit(main())
