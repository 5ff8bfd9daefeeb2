"""A shape error inside the student's code, said in one sentence: the shapes of the tensors their failing line names,
and what torch found wrong with them, in words.

torch's own message ("The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 2")
names no variable; the student's innermost frame still holds them. The sentence reads the names on the failing line
(plain names and attribute chains such as `self.weight`, never a call), looks each up in that frame, and lists the
tensors' shapes, then says what met. Nothing is evaluated but attribute lookups on the frame's own objects.
"""
import linecache
import re

import torch

from course_lib.frames import entries, is_students

SHAPE_WORDS = ("size of tensor", "shapes cannot be multiplied", "dimension out of range", "sizes of tensors must match",
               "is invalid for input of size", "out of bounds for dimension", "expected size", "must match the size",
               "doesn't match the broadcast shape", "mismatch in shape", "number of dims", "expanded size")
NAMES = re.compile(r"(?<![\w.'\"])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
SHOWN = 6  # tensors listed at most
TRANSLATIONS = (  # (torch's words, what they mean, said of the numbers they hold)
    (r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton dimension (-?\d+)",
     "two tensors of sizes {0} and {1} met at dimension {2}, where broadcasting needs equal sizes or 1"),
    (r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)",
     "a matrix product met ({0}, {1}) and ({2}, {3}): the first's last size ({1}) must equal the second's first ({2})"),
    (r"Dimension out of range \(expected to be in range of \[(-?\d+), (-?\d+)\], but got (-?\d+)\)",
     "dimension {2} was asked of a tensor with dimensions {0} to {1}"),
    (r"Sizes of tensors must match except in dimension (\d+)\. Expected size (\d+) but got size (\d+)",
     "tensors joined along dimension {0} differ in another dimension: {1} and {2}"),
    (r"shape '\[([\d, -]+)\]' is invalid for input of size (\d+)",
     "a reshape to [{0}] was asked of a tensor of {1} values"),
    (r"index (-?\d+) is out of bounds for dimension (\d+) with size (\d+)",
     "index {0} was asked of dimension {1}, which has size {2}"),
)


def is_shape_error(error):
    """Whether error is torch's complaint about shapes (a RuntimeError, IndexError or ValueError naming sizes)."""
    text = str(error).lower()
    return isinstance(error, (RuntimeError, IndexError, ValueError)) and any(word in text for word in SHAPE_WORDS)


def innermost_student_frame(error):
    """The frame of the student's code nearest to where error was raised, or None."""
    frames = [entry for entry in entries(error.__traceback__) if is_students(entry.tb_frame.f_code.co_filename)]
    return (frames[-1].tb_frame, frames[-1].tb_lineno) if frames else (None, None)


def looked_up(frame, dotted):
    """The object a name or attribute chain stands for in frame (locals, then globals), or None."""
    first, *rest = dotted.split(".")
    value = frame.f_locals.get(first, frame.f_globals.get(first))
    for attribute in rest:
        try:
            value = getattr(value, attribute)  # an attribute chain: a property could run code, as the line did
        except Exception:  # noqa: BLE001 -- a name that does not resolve says nothing
            return None
    return value


def tensors_on_line(frame, lineno):
    """[(name, shape)] of the tensors the source line names, in the order they appear, at most SHOWN."""
    line = linecache.getline(frame.f_code.co_filename, lineno, frame.f_globals)
    found, seen = [], set()
    for dotted in NAMES.findall(line):
        parts = dotted.split(".")
        for name in (".".join(parts[:end]) for end in range(len(parts), 0, -1)):  # `x.pow` is a method of x
            value = looked_up(frame, name)
            if isinstance(value, torch.Tensor):
                if name not in seen:
                    seen.add(name)
                    found.append((name, tuple(value.shape)))
                break
    return found[:SHOWN]


def translated(error):
    """torch's message in words, or its first line where no translation fits."""
    text = str(error)
    for pattern, words in TRANSLATIONS:
        match = re.search(pattern, text)
        if match:
            return words.format(*match.groups())
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__


def shape_sentence(error):
    """One sentence for a shape error raised in the student's code: the shapes on their failing line and what met;
    '' when error is no shape error or no frame of theirs raised it."""
    if not is_shape_error(error):
        return ""
    frame, lineno = innermost_student_frame(error)
    if frame is None:
        return ""
    shapes = tensors_on_line(frame, lineno)
    listed = ", ".join(f"`{name}` {shape}" for name, shape in shapes)
    on_line = f"your line {lineno} works on {listed}; " if listed else f"at your line {lineno} "
    return f"shapes do not fit: {on_line}{translated(error)}."
