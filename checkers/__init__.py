"""Instant checks for the course's assignments: `from checkers.<assignment> import check_task_N`.

Each assignment's checks live in their own subpackage (checkers/<assignment>/), with their fixtures and pinned
signatures; the modules here are the shared core: comparison and diagnosis (_compare, _probes, _block_probes,
_dependencies), building and loading student modules (_modules, _weights), the torch functions a call makes (_calls),
and failures that render as the student's own line (_core, _traceback).
"""
from ._core import CheckFailure, NotImplementedYet

__all__ = ["CheckFailure", "NotImplementedYet"]
