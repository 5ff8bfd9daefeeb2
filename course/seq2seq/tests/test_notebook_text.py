"""What the seq2seq notebooks say and show: each task's rhythm, the import cell, shapes in the glossary's names,
short cells, titled and labelled plots, seeded models, math that renders everywhere, supported claims.

The rules live in tests/notebook_text.py; the ones every notebook follows (the import cell, short cells, titled
plots, no staff notes, no stray times) are tested for every assignment in tests/test_notebook_rules.py.
"""
import re

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from course.registry import assignment
from course_lib import plot_attention_maps, plot_history
from course_lib import seq2seq as seq2seq_defaults
from course_lib.training import History
from notebook_text import (broken_copy, check_cell_problems, checker_seeds, code_cell, glossary, index_of,
                           measured_sentences, notebook_seeds, seeded_model_problems, shape_name_problems,
                           task_cell_order_problems, task_text_problems, tasks_of, training_seed_problems)

pytestmark = pytest.mark.fast

SEQ2SEQ = assignment("seq2seq")
SOURCE, RELEASE = SEQ2SEQ.source_notebook, SEQ2SEQ.release_notebook
TASKS = tasks_of("seq2seq")  # {task: trains}
BOTH = pytest.mark.parametrize("path", [SOURCE, RELEASE], ids=["solutions", "notebooks"])
EACH_TASK = pytest.mark.parametrize("task", list(TASKS))
SHAPE_FUNCTIONS = ("ceil",)  # a function inside a shape comment, `(ceil(D / 2),)`, not a dimension


# ----------------------------------------------------------------------------- the rhythm of a task


@BOTH
@EACH_TASK
def test_each_task_gives_its_motivation_formula_with_shapes_then_what_to_implement(path, task):
    assert task_text_problems(path, task, TASKS[task], glossary(path)) == []


@BOTH
@EACH_TASK
def test_each_task_has_its_todo_cell_then_its_check_cell_then_an_example(path, task):
    assert task_cell_order_problems(path, task, release=path == RELEASE) == []


@BOTH
def test_each_check_cell_calls_one_registered_check(path):
    assert check_cell_problems(path, TASKS) == []


def test_the_rhythm_rules_catch_a_task_that_breaks_them(tmp_path):
    """Each rhythm rule can fail: Task 4 without its formula label, its example code, or its check cell in place."""
    def drop_formula(notebook_cells):
        text = notebook_cells[index_of(notebook_cells, "task_4_decoder_block") - 1]
        text["source"] = [line.replace("**Formula.** ", "") for line in text["source"]]

    def drop_example_code(notebook_cells):
        del notebook_cells[index_of(notebook_cells, "check_task_4") + 2]

    def move_check(notebook_cells):
        notebook_cells.append(notebook_cells.pop(index_of(notebook_cells, "check_task_4")))

    for edit, rule, problem in ((drop_formula, task_text_problems, "Task 4 has no '**Formula.**'"),
                                (drop_example_code, task_cell_order_problems, "no example (text, then code)"),
                                (move_check, task_cell_order_problems, "not followed at once by its check cell")):
        path = broken_copy(SOURCE, tmp_path, edit)
        problems = rule(path, 4, False, glossary(path)) if rule is task_text_problems else rule(path, 4, False)
        assert any(problem in found for found in problems), (edit.__name__, problems)


# ----------------------------------------------------------------------------- the import cell and names


def test_the_glossary_names_the_shapes_of_both_sides():
    assert {"B", "D", "H", "head_dim", "S", "T", "L_q", "L_k"} <= glossary(SOURCE)


@BOTH
def test_shape_comments_use_the_glossary_s_names(path):
    assert shape_name_problems(path, allowed=SHAPE_FUNCTIONS) == []


# ----------------------------------------------------------------------------- cells, plots, seeds


def test_the_attention_map_helper_labels_both_axes_and_shows_the_title():
    """Cells 20 and 49 hand their titles to plot_attention_maps: it must show them and label the axes itself."""
    figure = plot_attention_maps(torch.softmax(torch.randn(4, 13, 12), dim=-1), title="cross-attention")
    panels = [ax for ax in figure.axes if ax.images]
    assert figure._suptitle is not None and figure._suptitle.get_text() == "cross-attention"
    assert all(ax.get_xlabel() for ax in panels) and any(ax.get_ylabel() for ax in panels)


@BOTH
def test_every_default_model_is_built_right_after_a_seed(path):
    assert seeded_model_problems(path, "Seq2SeqTransformer") == []


def test_training_starts_from_the_seed_of_the_cell_before_it():
    """Nothing random runs between the seed and the training cell: the DataLoader's shuffle draws from the seed too."""
    assert training_seed_problems(SOURCE, "Seq2SeqTransformer", "ReversalDataset") == []


def test_the_notebook_never_draws_the_checker_s_data():
    """A seed of the notebook's data or models equal to the checker's would let a student train on what is judged."""
    seeds = checker_seeds("seq2seq")
    if not seeds:
        pytest.skip("checkers/seq2seq/ defines no *SEED* constant yet (Task 7's check is a stub)")
    used = notebook_seeds(SOURCE)
    assert used and not used & set(seeds.values()), (used, seeds)


# ----------------------------------------------------------------------------- text: math, staff notes, claims


def test_task_7_states_its_measured_time_in_one_marked_sentence():
    (sentence,) = measured_sentences(SOURCE, "## 7.")
    assert re.search(r"[\d,]+ steps", sentence) and re.search(r"\d+ s\b", sentence) and "load average" in sentence


def test_the_training_curves_draw_the_task_s_own_target():
    assert "LiveCurves(**seq2seq_defaults.CURVES)" in code_cell(SOURCE, "LiveCurves(")
    assert seq2seq_defaults.CURVES["target_accuracy"] == seq2seq_defaults.STOP_AT_ACCURACY


def test_the_training_curves_state_the_stop_and_the_check_s_bar_as_they_are():
    """The legend said "target 100%" for a stop at 99.8% and a check that asks 99%."""
    from checkers.seq2seq.trained import TARGET_ACCURACY
    assert seq2seq_defaults.CURVES["check_accuracy"] == TARGET_ACCURACY
    history = History(step=[0, 100], seconds=[0.0, 2.0], train_loss=[float("nan"), 1.2], val_loss=[2.6, 1.0],
                      val_accuracy=[0.0, 0.5], lr=[0.0, 3e-3])
    labels = [line.get_label() for line in plot_history(history, **seq2seq_defaults.CURVES).axes[1].get_lines()]
    assert "training stops at 99.8%" in labels and "the check needs 99%" in labels, labels
    assert not any("100%" in label for label in labels), labels


def test_the_training_curves_show_an_exact_match_run_from_zero():
    history = History(step=[0, 100, 200], seconds=[0.0, 2.0, 4.0], train_loss=[float("nan"), 1.2, 0.3],
                      val_loss=[2.6, 1.0, 0.1], val_accuracy=[0.0, 0.2, 0.999], lr=[0.0, 3e-3, 3e-3])
    figure = plot_history(history, **seq2seq_defaults.CURVES)
    loss_ax, accuracy_ax = figure.axes[:2]
    assert accuracy_ax.get_ylim()[0] <= 0.0
    assert not any("binary" in line.get_label() for line in loss_ax.get_lines())
