"""Provided cells tagged "demo" are not run by the grader (grading/match/program.py): a measurement or a plot before a
later check cell, seconds of every probe. Each must be one that nothing graded depends on, in every registered
assignment's source notebook: a provided cell, binding no name a later cell reads, and followed by a provided cell
that seeds the random generators again before the next answer or check cell (a demo that draws random numbers
would otherwise change what the cells after it draw).
"""
import ast

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from course.registry import assignments
from grading.match.notebook import DEMO_TAG, read, release_layout
from grading.match.program import build_program

pytestmark = pytest.mark.fast

REGISTERED = assignments()


def code_cells(notebook):
    """[(index, role, syntax tree)] of the notebook's code cells; magics and shell lines as IPython runs them."""
    manager = TransformerManager()
    return [(cell.index, cell.kind, ast.parse(manager.transform_cell(cell.source)))
            for cell in release_layout(notebook)]


def bound(tree):
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    names |= {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    return names | {(alias.asname or alias.name).split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}


def read_names(tree):
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def seeds(tree):
    return any(isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in
               ("seed_everything", "manual_seed") for node in ast.walk(tree))


def demo_cells(notebook):
    return [index for index, cell in enumerate(notebook["cells"])
            if DEMO_TAG in cell.get("metadata", {}).get("tags", [])]


@pytest.mark.parametrize("registered", REGISTERED, ids=lambda registered: registered.name)
def test_a_demo_cell_is_provided_binds_nothing_read_later_and_is_followed_by_a_seed(registered):
    notebook = read(registered.source_notebook)
    cells = code_cells(notebook)
    roles = {index: role for index, role, _ in cells}
    for demo in demo_cells(notebook):
        assert roles.get(demo) == "given", f"{registered.name}: cell {demo} is tagged {DEMO_TAG} but is not provided"
        tree = next(tree for index, _, tree in cells if index == demo)
        later = [(index, role, other) for index, role, other in cells if index > demo]
        read_later = bound(tree) & set().union(*(read_names(other) for _, _, other in later))
        assert not read_later, f"{registered.name}: demo cell {demo} binds {sorted(read_later)}, read later"
        before_graded = [(role, other) for _, role, other in later][:next(
            (position for position, (_, role, _) in enumerate(later) if role != "given"), len(later))]
        assert any(seeds(other) for _, other in before_graded) or len(before_graded) == len(later), \
            f"{registered.name}: no provided cell seeds again between demo cell {demo} and the next graded cell"


def test_the_grader_leaves_demo_cells_out_and_runs_the_provided_cells_around_them():
    tagged = [registered for registered in REGISTERED if demo_cells(read(registered.source_notebook))]
    assert tagged, "no assignment tags a demo cell: this test would test nothing"
    for registered in tagged:
        release = read(registered.release_notebook)
        demos = set(demo_cells(release))
        assert demos == set(demo_cells(read(registered.source_notebook))), "the release lost a demo tag: make release"
        program, _ = build_program(release, release_layout(release), lambda source: 60)
        ran = {cell.release_index for cell in program if cell.kind == "given"}
        assert not demos & ran, registered.name
        assert any(index > min(demos) for index in ran), f"{registered.name}: nothing provided ran after the demo"
