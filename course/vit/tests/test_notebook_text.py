"""What the vit notebooks say and show: each task's rhythm, the check cells, the import cell, shapes in the glossary's
names, short cells, titled plots with labelled axes, seeded models, math that renders everywhere, supported claims.

The rules live in tests/notebook_text.py; the ones every notebook follows (the import cell, short cells, titled
plots, no staff notes, no stray times) are tested for every assignment in tests/test_notebook_rules.py. That every
check cell is locked with the registry's points, and that both notebooks are stored without outputs, is tested for
every registered assignment, vit included, in tests/test_release.py
(test_every_task_has_one_locked_check_cell_with_its_points, test_notebooks_are_stored_without_outputs) and
tests/test_registry.py; whether the student notebook is released from the current reference, in
tests/test_release.py; that it runs untouched and fails only with "not implemented yet", in
tests/test_student_dist.py.
"""
import re

import matplotlib

matplotlib.use("Agg")

import pytest

from course.registry import assignment
from course_lib import vit as vit_defaults
from notebook_text import (broken_copy, cells, check_cell_problems, checker_seeds, code_cell, glossary,
                           index_of, measured_sentences, notebook_seeds, plot_problems, plotters, seeded_model_problems,
                           shape_name_problems, task_cell_order_problems, task_text_problems, tasks_of,
                           titled_by_its_plotter)

pytestmark = pytest.mark.fast

VIT = assignment("vit")
SOURCE, RELEASE = VIT.source_notebook, VIT.release_notebook
TASKS = tasks_of("vit")  # {task: trains}
BOTH = pytest.mark.parametrize("path", [SOURCE, RELEASE], ids=["solutions", "notebooks"])
EACH_TASK = pytest.mark.parametrize("task", list(TASKS))
TRAINING_TASK = 4
# The names the pinned API (issue 14) and the notebook's shapes use: the glossary must define them.
PINNED_NAMES = {"B", "C", "H", "W", "D", "N", "T", "K", "head_dim", "patch_size", "num_patches"}


def glossary_or_fail(path):
    try:
        return glossary(path)
    except StopIteration:
        pytest.fail("the notebook has no '**Shapes.**' paragraph defining the names its shapes use")


# ----------------------------------------------------------------------------- the rhythm of a task


def test_the_registry_has_the_five_tasks_of_the_issue():
    """Tasks 1-3 and 5 are answered by definitions (their text needs a formula); Task 4 trains."""
    assert TASKS == {1: False, 2: False, 3: False, 4: True, 5: False}


@BOTH
@EACH_TASK
def test_each_task_gives_its_motivation_formula_with_shapes_then_what_to_implement(path, task):
    assert task_text_problems(path, task, TASKS[task], glossary_or_fail(path)) == []


@BOTH
@EACH_TASK
def test_each_task_has_its_todo_cell_then_its_check_cell_then_an_example(path, task):
    assert task_cell_order_problems(path, task, release=path == RELEASE) == []


@BOTH
def test_each_check_cell_calls_one_registered_check(path):
    assert check_cell_problems(path, TASKS) == []


def test_the_rhythm_rules_catch_a_task_that_breaks_them(tmp_path):
    """Each rhythm rule can fail: Task 5 without its formula label, its example code, or its check cell in place."""
    def drop_formula(notebook_cells):
        text = notebook_cells[index_of(notebook_cells, "task_5_attention_rollout") - 1]
        text["source"] = [line.replace("**Formula.**", "") for line in text["source"]]

    def drop_example_code(notebook_cells):
        start = index_of(notebook_cells, "check_task_5")
        end = next(index for index in range(start + 1, len(notebook_cells))
                   if "".join(notebook_cells[index]["source"]).startswith("## "))
        notebook_cells[start + 1:end] = [cell for cell in notebook_cells[start + 1:end] if cell["cell_type"] != "code"]

    def move_check(notebook_cells):
        notebook_cells.append(notebook_cells.pop(index_of(notebook_cells, "check_task_5")))

    for edit, rule, problem in ((drop_formula, task_text_problems, "Task 5 has no '**Formula.**'"),
                                (drop_example_code, task_cell_order_problems, "no example (text, then code)"),
                                (move_check, task_cell_order_problems, "not followed at once by its check cell")):
        path = broken_copy(SOURCE, tmp_path, edit)
        problems = rule(path, 5, False, glossary(path)) if rule is task_text_problems else rule(path, 5, False)
        assert any(problem in found for found in problems), (edit.__name__, problems)


# ----------------------------------------------------------------------------- the import cell and names


def test_the_glossary_names_the_shapes_the_notebook_uses():
    assert PINNED_NAMES <= glossary_or_fail(SOURCE)


@BOTH
def test_shape_comments_use_the_glossary_s_names(path):
    glossary_or_fail(path)
    assert shape_name_problems(path) == []


# ----------------------------------------------------------------------------- cells, plots, seeds


def test_the_plot_rule_catches_an_untitled_picture_and_unlabelled_values(tmp_path):
    """The plot rule can fail: the rollout figure (pictures, axes off) without its titles, or with values plotted
    against its axes (no longer pictures only), or a plotter that does not title its figure itself."""
    def rollout_cell(notebook_cells):
        return next(cell for cell in notebook_cells if "fig.suptitle(" in "".join(cell["source"])
                    and ".axis(\"off\")" in "".join(cell["source"]))

    def drop_title(notebook_cells):
        cell = rollout_cell(notebook_cells)
        cell["source"] = [line for line in cell["source"] if not re.search(r"suptitle\(|set_title\(", line)]

    def plot_values(notebook_cells):
        rollout_cell(notebook_cells)["source"].append("\naxes[0, 0].plot(range(8))")

    for edit, problem in ((drop_title, "a plot without a title"), (plot_values, "axes are not both labelled")):
        problems = plot_problems(broken_copy(SOURCE, tmp_path, edit))
        assert any(problem in found for found in problems), (edit.__name__, problems)

    def untitled(values):
        return values

    assert not titled_by_its_plotter("plot_similarity(x)", {"plot_similarity": untitled})
    assert not titled_by_its_plotter("plot_elsewhere(x)", {})  # a plot_* function not of the course's packages
    assert titled_by_its_plotter("plot_position_similarity(x)", plotters(SOURCE))


@BOTH
def test_every_default_model_is_built_right_after_a_seed(path):
    assert seeded_model_problems(path, "VisionTransformer") == []


def test_the_training_cell_trains_the_model_seeded_just_before_it():
    """Task 4's given cell seeds, then builds the default model, and draws nothing random after that; the answer
    cell trains that model (the DataLoader's shuffle draws from the seed too)."""
    given = code_cell(SOURCE, "model = VisionTransformer(**model_config)")
    assert re.search(r"seed_everything\(\d+\)\s*\nmodel = VisionTransformer\(\*\*model_config\)", given)
    after = given.split("VisionTransformer(**model_config)", 1)[1]
    assert not re.search(r"torch\.(rand|randn|randint|randperm|manual_seed)\b|DataLoader\(|digit_datasets\(", after)
    notebook_cells = cells(SOURCE)
    answer = index_of(notebook_cells, f"task_{TRAINING_TASK}_training")
    assert notebook_cells[answer - 1]["source"] == given
    assert re.search(r"\btrain\(model, train_loader, val_loader\b", notebook_cells[answer]["source"])


def test_the_notebook_never_draws_the_checker_s_data():
    """The test split is course_lib's, fixed by its own seed; no seed of the notebook may equal a checker's."""
    seeds = checker_seeds("vit")
    if not seeds:
        pytest.skip("checkers/vit/ defines no *SEED* constant")
    used = notebook_seeds(SOURCE)
    assert used and not used & set(seeds.values()), (used, seeds)


# ----------------------------------------------------------------------------- text: math, staff notes, claims


def test_task_4_states_its_measured_time_in_one_marked_sentence():
    (sentence,) = measured_sentences(SOURCE, f"## {TRAINING_TASK}.")
    assert re.search(r"[\d,]+ steps", sentence) and re.search(r"\d+(\.\d+)? s\b", sentence) and "load" in sentence


def test_the_training_curves_draw_the_task_s_own_target():
    assert "LiveCurves(**vit_defaults.CURVES)" in code_cell(SOURCE, "LiveCurves(")
    assert vit_defaults.CURVES["target_accuracy"] == vit_defaults.TARGET_ACCURACY
