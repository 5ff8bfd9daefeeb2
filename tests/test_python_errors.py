"""checkers/_python_errors.py: Python's own errors on the student's line are said with that line; others keep their
words."""
import linecache

import pytest
import torch

from checkers._core import CheckFailure, Task

pytestmark = pytest.mark.fast

CELL = "<ipython-input-3-python-errors>"
SOURCE = '''
def called(rate):
    return rate(4)

def truth(mask):
    if mask:
        return 1

def as_bytes(a):
    return bytes([a])

def other():
    return {}["key"]

def sized(x):
    return x.view(2, x.numel() / 2)

def none(x, temperature=None):
    return x / temperature

def masked(x, mask):
    return torch.nn.functional.linear(mask, x)

def least(pairs):
    return min(pairs)
'''


def cell():
    linecache.cache[CELL] = (len(SOURCE), None, SOURCE.splitlines(True), CELL)
    namespace = {"torch": torch}
    exec(compile(SOURCE, CELL, "exec"), namespace)
    return namespace


@pytest.mark.parametrize("name, argument, said", [
    ("called", 0.5, "your line 3 (`return rate(4)`) calls a float as if it were a function or a class"),
    ("truth", torch.ones(3), "your line 6 (`if mask:`) uses a tensor as a truth value"),
    ("as_bytes", 300, "your line 10 (`return bytes([a])`) makes bytes from a number of 256 or more"),
    ("sized", torch.ones(4), "your line 16 (`return x.view(2, x.numel() / 2)`) passes a float where a whole number"),
    ("none", torch.ones(2), "your line 19 (`return x / temperature`) computes with None"),
    ("masked", torch.ones(2, 2), "your line 22 (`return torch.nn.functional.linear(mask, x)`) computes with a bool"),
    ("least", [], "your line 25 (`return min(pairs)`) takes min() of nothing"),
])
def test_a_known_python_error_is_said_with_the_students_line(name, argument, said):
    arguments = (argument, torch.ones(2, 2) > 0) if name == "masked" else (argument,)
    with pytest.raises(CheckFailure) as failure:
        Task(1).call(f"{name}(...)", cell()[name], *arguments)
    assert said in str(failure.value), str(failure.value)


def test_another_error_keeps_pythons_words():
    with pytest.raises(CheckFailure) as failure:
        Task(1).call("other()", cell()["other"])
    assert str(failure.value).endswith(": other() raised KeyError: 'key'"), str(failure.value)
