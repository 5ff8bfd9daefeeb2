"""Python's own errors raised on the student's line, said in words with that line: a value called as if it were a
function, a tensor used as a truth value, a number of 256 or more made into bytes, a float used as a size, arithmetic
with None or with a bool mask, min() or max() of nothing. What torch says about shapes is checkers/_shapes.py's;
anything else keeps Python's words.
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
    (re.compile(r"got float|'float' object cannot be interpreted as an integer|must be int, not float|"
                r"\(float(, \w+=\w+)*\), but expected one of"),
     "your line {line} passes a float where a whole number is needed (a size, a count, an index): `/` always gives "
     "a float in Python 3; divide sizes with `//`"),
    (re.compile(r"unsupported operand type\(s\) for [^:]+: '\w+' and 'NoneType'|"
                r"unsupported operand type\(s\) for [^:]+: 'NoneType' and '\w+'"),
     "your line {line} computes with None: a value it uses is None (an argument left at its default None, or "
     "arguments given in another order than the signature's?)"),
    (re.compile(r"same dtype, but got:? (Bool|bool)|same dtype, but got:? \w+ (and|!=) (Bool|bool)|"
                r"expected scalar type \w+ but found Bool"),
     "your line {line} computes with a bool tensor (a mask?) where numbers belong: is a mask passed in the place of "
     "another tensor (arguments in another order than the signature's)?"),
    (re.compile(r"(min|max)\(\) (arg|iterable argument) is (an )?empty"),
     "your line {line} takes {0}() of nothing: the sequence is empty there (does a loop run once more than it "
     "should, or not stop when nothing is left?)"),
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
