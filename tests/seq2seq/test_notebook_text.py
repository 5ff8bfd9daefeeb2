"""What the seq2seq notebooks say and show: each task's rhythm, the import cell, shapes in the glossary's names,
short cells, titled and labelled plots, seeded models, math that renders everywhere, supported claims.

The rules live in tests/notebook_text.py (shared with the transformer's notebook tests).
"""
import ast
import json
import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

from course.registry import ROOT, assignment  # noqa: E402
from course_lib import plot_attention_maps, plot_history, seq2seq_defaults  # noqa: E402
from course_lib.training import History  # noqa: E402
from notebook_text import (MEASURED, cell_length_problems, cells, check_cell_problems, code_cell,  # noqa: E402
                           glossary, grade_id, import_cell, import_problems, plot_problems, section,
                           seeded_model_problems, shape_name_problems, staff_note_problems, task_cell_order_problems,
                           task_text_problems, tasks_of, text_macro_problems, time_claim_problems)

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


def broken_copy(tmp_path, edit):
    """The reference notebook after edit(cells), written under tmp_path."""
    notebook = json.loads(SOURCE.read_text())
    edit(notebook["cells"])
    path = tmp_path / "broken.ipynb"
    path.write_text(json.dumps(notebook))
    return path


def index_of(notebook_cells, name):
    return next(index for index, cell in enumerate(notebook_cells) if grade_id(cell) == name)


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
        path = broken_copy(tmp_path, edit)
        problems = rule(path, 4, False, glossary(path)) if rule is task_text_problems else rule(path, 4, False)
        assert any(problem in found for found in problems), (edit.__name__, problems)


# ----------------------------------------------------------------------------- the import cell and names


@BOTH
def test_the_import_cell_imports_every_check(path):
    problems = import_problems(path, "seq2seq", TASKS)
    assert [problem for problem in problems if "checkers.seq2seq" in problem] == []


@BOTH
def test_the_import_cell_imports_nothing_unused(path):
    assert import_problems(path, "seq2seq", TASKS) == []


def test_the_import_cell_runs():
    """Every name the student's import cell asks for exists in checkers and course_lib."""
    namespace = {}
    exec(compile(import_cell(RELEASE)[1]["source"], "<import cell>", "exec"), namespace)
    assert all(f"check_task_{task}" in namespace for task in TASKS) and "seq2seq_defaults" in namespace


def test_the_glossary_names_the_shapes_of_both_sides():
    assert {"B", "D", "H", "head_dim", "S", "T", "L_q", "L_k"} <= glossary(SOURCE)


@BOTH
def test_shape_comments_use_the_glossary_s_names(path):
    assert shape_name_problems(path, allowed=SHAPE_FUNCTIONS) == []


# ----------------------------------------------------------------------------- cells, plots, seeds


@BOTH
def test_given_code_cells_are_short(path):
    assert cell_length_problems(path) == []


@BOTH
def test_plots_have_titles_and_labelled_axes(path):
    assert plot_problems(path) == []


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
    all_cells = cells(SOURCE)
    (training,) = [index for index, cell in enumerate(all_cells) if grade_id(cell).startswith("task_7_")]
    before = all_cells[training - 1]["source"]
    assert re.search(r"seed_everything\(\d+\)\s*\nmodel = Seq2SeqTransformer\(\*\*model_config\)", before), before
    after_model = before.split("Seq2SeqTransformer(**model_config)", 1)[1]
    assert not re.search(r"torch\.(rand|randn|randint|randperm|manual_seed)\b|ReversalDataset\(", after_model)


def checker_seeds():
    """Integer constants whose name holds SEED in checkers/seq2seq/ (the data Task 7 is judged on)."""
    seeds = {}
    for path in sorted((ROOT / "checkers" / "seq2seq").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            value = getattr(node, "value", None)
            if isinstance(node, ast.Assign) and isinstance(value, ast.Constant) and isinstance(value.value, int):
                seeds |= {target.id: node.value.value for target in node.targets
                          if isinstance(target, ast.Name) and "SEED" in target.id}
    return seeds


def test_the_notebook_never_draws_the_checker_s_data():
    """A seed of the notebook's data or models equal to the checker's would let a student train on what is judged."""
    seeds = checker_seeds()
    if not seeds:
        pytest.skip("checkers/seq2seq/ defines no *SEED* constant yet (Task 7's check is a stub)")
    text = "\n".join(cell["source"] for cell in cells(SOURCE) if cell["cell_type"] == "code")
    used = {int(n) for n in re.findall(r"\bseed(?:_everything\(|=)(\d+)", text)}
    assert used and not used & set(seeds.values()), (used, seeds)


# ----------------------------------------------------------------------------- text: math, staff notes, claims


@BOTH
def test_no_underscore_inside_text_macros(path):
    assert text_macro_problems(path) == []


def test_student_notebook_holds_no_note_for_course_staff():
    assert staff_note_problems(RELEASE) == []


def test_no_time_claim_outside_the_marked_sentences():
    assert time_claim_problems(SOURCE) == []


def test_no_placeholder_is_left_in_the_text():
    prose = [re.sub(r"`[^`]*`|\$[^$]*\$", "", cell["source"]) for cell in cells(SOURCE) if cell["cell_type"] == "markdown"]
    placeholders = [word for text in prose for word in re.findall(r"\b[A-Z]{2,}_[A-Z_]{2,}\b", text)]
    assert placeholders == []


def test_task_7_states_its_measured_time_in_one_marked_sentence():
    text = section(SOURCE, "## 7.")
    assert text.count(MEASURED) == 1
    sentence = text.split(MEASURED)[1].split("\n")[0]
    assert re.search(r"[\d,]+ steps", sentence) and re.search(r"\d+ s\b", sentence) and "load average" in sentence


def test_the_training_curves_draw_the_task_s_own_target():
    assert "LiveCurves(**seq2seq_defaults.CURVES)" in code_cell(SOURCE, "LiveCurves(")
    assert seq2seq_defaults.CURVES["target_accuracy"] == seq2seq_defaults.STOP_AT_ACCURACY


def test_the_training_curves_show_an_exact_match_run_from_zero():
    history = History(step=[0, 100, 200], seconds=[0.0, 2.0, 4.0], train_loss=[float("nan"), 1.2, 0.3],
                      val_loss=[2.6, 1.0, 0.1], val_accuracy=[0.0, 0.2, 0.999], lr=[0.0, 3e-3, 3e-3])
    figure = plot_history(history, **seq2seq_defaults.CURVES)
    loss_ax, accuracy_ax = figure.axes[:2]
    assert accuracy_ax.get_ylim()[0] <= 0.0
    assert not any("binary" in line.get_label() for line in loss_ax.get_lines())
