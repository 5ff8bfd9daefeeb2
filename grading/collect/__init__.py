"""Stage 1, collection: an LMS download -> submitted/<student>/<assignment>/<assignment>.ipynb, nbgrader's layout.

Entry points: `collect` (`make collect`, `python -m grading.collect`: unpack.py, with naming.py's rules for
who sent what) and `discover` (the submissions a grading run finds there, submissions.py).
"""
from .submissions import Submission, discover
from .unpack import collect

__all__ = ["Submission", "collect", "discover"]
