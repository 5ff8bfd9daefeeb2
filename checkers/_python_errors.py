"""Python's own errors raised on the student's line, said in words with that line: a value called as if it were a
function, a tensor used as a truth value, a number of 256 or more made into bytes. What torch says about shapes is
checkers/_shapes.py's; anything else keeps Python's words.
"""
import linecache
import re

from ._shapes import innermost_student_frame

CALLED = re.compile(r"'(\w+)' object is not callable")
SAYINGS = (
    (CALLED, "your line {line} calls a {0} as if it were a function or a class: a value sits where a callable was "
             "expected (are the positional arguments in the order of the signature? was an object passed where its "
             "class belongs, or the other way round?)"),
    (re.compile(r"Boolean value of Tensor with more than one (value|element)s? is ambiguous"),
     "your line {line} uses a tensor as a truth value (`if t:`, `t or u`, `not t`), which has no single answer for "
     "several values: test `t is None`, or compare and reduce explicitly (e.g. `(t > 0).any()`)"),
    (re.compile(r"bytes must be in range\(0, 256\)"),
     "your line {line} makes bytes from a number of 256 or more: only ids below 256 are single bytes; a larger id's "
     "bytes have to be looked up"),
)


def error_sentence(error):
    """One sentence for an error SAYINGS knows, raised in the student's code, naming their line; '' otherwise."""
    frame, lineno = innermost_student_frame(error)
    if frame is None:
        return ""
    for pattern, words in SAYINGS:
        match = pattern.search(str(error))
        if match:
            code = linecache.getline(frame.f_code.co_filename, lineno).strip()
            line = f"{lineno} (`{code}`)" if code else str(lineno)
            return words.format(*match.groups(), line=line) + "."
    return ""
