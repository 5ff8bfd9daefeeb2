"""What the gpt notebooks say and show: each task's rhythm (Task 3's designed exception included), the import cell,
shapes in the glossary's names, short cells, titled plots whose axes name their units, seeded models, math that
renders everywhere, supported claims.

The rules live in tests/notebook_text.py; the ones every notebook follows (the import cell, short cells, titled
plots, no staff notes, no stray times) are tested for every assignment in tests/test_notebook_rules.py. Whether the
student notebook is released from the current reference, and holds no solution, is tested for every registered
assignment in tests/test_release.py; that it runs untouched and fails only with "not implemented yet", in
tests/test_student_dist.py.
"""
import re

import matplotlib

matplotlib.use("Agg")

import pytest

from course.registry import assignment
from course_lib import plot_history
from course_lib import gpt as gpt_defaults
from course_lib.training import History
from notebook_text import (axis_labels, broken_copy, cells, check_cell_problems, checker_seeds, code_cell,
                           glossary_or_fail, grade_id, index_of, is_answer, measured_sentences, names_its_unit,
                           notebook_seeds, seeded_model_problems, shape_name_problems, task_cell_order_problems,
                           task_cells, task_text_problems, tasks_of, training_seed_problems)

pytestmark = pytest.mark.fast

GPT = assignment("gpt")
SOURCE, RELEASE = GPT.source_notebook, GPT.release_notebook
TASKS = tasks_of("gpt")  # {task: trains}
CACHE_TASK = 3  # designed without an answer cell: its answer is the cache branch of Task 2's class
BOTH = pytest.mark.parametrize("path", [SOURCE, RELEASE], ids=["solutions", "notebooks"])
WITH_ANSWER_CELL = pytest.mark.parametrize("task", [task for task in TASKS if task != CACHE_TASK])


# The names the pinned API (issue 13) and the notebook's shapes use: the glossary must define them.
PINNED_NAMES = {"B", "L", "D", "H", "head_dim", "V", "P", "N", "L_past"}


# ----------------------------------------------------------------------------- the rhythm of a task


@BOTH
@pytest.mark.parametrize("task", list(TASKS))
def test_each_task_gives_its_motivation_formula_with_shapes_then_what_to_implement(path, task):
    assert task_text_problems(path, task, TASKS[task], glossary_or_fail(path)) == []


@BOTH
@WITH_ANSWER_CELL
def test_each_task_has_its_todo_cell_then_its_check_cell_then_an_example(path, task):
    assert task_cell_order_problems(path, task, release=path == RELEASE) == []


def cache_section_problems(path):
    """Task 3's designed shape: its text, at once its check cell (called on Task 2's class), then an example (text,
    then code); no answer cell of its own, and an Implement paragraph that sends the student to Task 2's class."""
    start, section_cells = task_cells(path, CACHE_TASK)
    kinds = [cell["cell_type"] for _, cell in section_cells]
    problems = []
    if any(grade_id(cell).startswith("task_") or is_answer(cell) for _, cell in section_cells):
        problems.append(f"Task {CACHE_TASK}'s section holds an answer cell (its answer is Task 2's class)")
    check = section_cells[1][1]["source"].strip() if len(section_cells) > 1 else ""
    if check != f"check_task_{CACHE_TASK}(CausalSelfAttention)":
        problems.append(f"Task {CACHE_TASK}'s text is not followed at once by "
                        f"check_task_3(CausalSelfAttention): {check!r}")
    if kinds[2:4] != ["markdown", "code"]:
        problems.append(f"no example (text, then code) after Task {CACHE_TASK}'s check cell: {kinds}")
    implement = section_cells[0][1]["source"].split("**Implement", 1)[-1]
    if "Task 2" not in implement:
        problems.append(f"Task {CACHE_TASK}'s Implement paragraph does not say the answer goes in Task 2's class")
    return problems


@BOTH
def test_task_3_is_text_then_its_check_on_task_2_s_class_then_an_example(path):
    assert cache_section_problems(path) == []


def test_task_3_s_answer_is_the_cache_branch_of_task_2_s_answer_cell():
    """The reference's Task 2 cell holds the cache branch Task 3 checks; the student's is one TODO for both."""
    reference, student = code_cell(SOURCE, "class CausalSelfAttention"), code_cell(RELEASE, "class CausalSelfAttention")
    assert re.search(r"torch\.cat\(\[cache\[0\], key\]", reference) and "tril(past)" in reference
    assert "cache" not in student.split("def forward", 1)[1].split('"""', 2)[2]  # the body is the TODO alone
    assert "raise NotImplementedError()" in student.split("def forward", 1)[1]


def test_the_task_3_rule_catches_a_section_that_breaks_it(tmp_path):
    """The Task 3 rule can fail: an answer cell of its own, its check cell moved away, or its example code dropped."""
    def add_answer(notebook_cells):
        answer = dict(notebook_cells[index_of(notebook_cells, "task_2_causal_self_attention")])
        answer["metadata"] = {"nbgrader": dict(answer["metadata"]["nbgrader"], grade_id="task_3_cache")}
        notebook_cells.insert(index_of(notebook_cells, "check_task_3"), answer)

    def move_check(notebook_cells):
        notebook_cells.append(notebook_cells.pop(index_of(notebook_cells, "check_task_3")))

    def drop_example_code(notebook_cells):
        del notebook_cells[index_of(notebook_cells, "check_task_3") + 2]

    for edit, problem in ((add_answer, "holds an answer cell"), (move_check, "not followed at once"),
                          (drop_example_code, "no example (text, then code)")):
        problems = cache_section_problems(broken_copy(SOURCE, tmp_path, edit))
        assert any(problem in found for found in problems), (edit.__name__, problems)


@BOTH
def test_each_check_cell_calls_one_registered_check(path):
    assert check_cell_problems(path, TASKS) == []


# ----------------------------------------------------------------------------- the import cell and names


def test_the_glossary_names_the_shapes_the_notebook_uses():
    assert PINNED_NAMES <= glossary_or_fail(SOURCE)


@BOTH
def test_shape_comments_use_the_glossary_s_names(path):
    glossary_or_fail(path)
    assert shape_name_problems(path) == []


# ----------------------------------------------------------------------------- cells, plots, seeds


# Axis labels that measure nothing with a unit: a category on the axis, or a fraction.
UNITLESS = re.compile(r"^(token id|answer digit|fraction (of|right)\b.*)$")


def test_every_axis_names_its_unit():
    """A label measuring something says its unit in parentheses, e.g. "time per new token (ms)"; "(no unit)" says so."""
    missing = [(index, label) for index, cell in enumerate(cells(SOURCE)) if cell["cell_type"] == "code"
               for label in axis_labels(cell["source"]) if not names_its_unit(label, UNITLESS)]
    assert missing == []


def test_the_unit_rule_tells_a_label_with_its_unit_from_one_without():
    source = 'ax.set(xlabel="sequence length (tokens)", ylabel="time")\nax.set_ylabel("answer digit")'
    labels = sorted(axis_labels(source))
    assert labels == ["answer digit", "sequence length (tokens)", "time"]
    assert [names_its_unit(label, UNITLESS) for label in labels] == [True, True, False]


@BOTH
def test_every_default_model_is_built_right_after_a_seed(path):
    assert seeded_model_problems(path, "GPT") == []


def test_training_starts_from_the_seed_of_the_cell_before_it():
    """Nothing random runs between the seed and the training cell: the DataLoader's shuffle draws from the seed too."""
    assert training_seed_problems(SOURCE, "GPT", "AdditionDataset") == []


def test_the_notebook_never_draws_the_checker_s_data():
    """A seed of the notebook's data or models equal to the checker's would let a student train on what is judged."""
    seeds = checker_seeds("gpt")
    if not seeds:
        pytest.skip("checkers/gpt/ defines no *SEED* constant yet (Task 7's check is a stub)")
    used = notebook_seeds(SOURCE)
    assert used and not used & set(seeds.values()), (used, seeds)


# ----------------------------------------------------------------------------- text: math, staff notes, claims


def test_task_7_states_its_measured_time_in_one_marked_sentence():
    (sentence,) = measured_sentences(SOURCE, "## 7.")
    assert re.search(r"[\d,]+ steps", sentence) and re.search(r"\d+ s\b", sentence) and "load average" in sentence


def test_task_8_states_its_measured_speed_up_in_one_marked_sentence():
    (sentence,) = measured_sentences(SOURCE, "## 8.")
    assert re.search(r"\d\s?(×|x\b|times)", sentence) and "load average" in sentence


def test_the_training_curves_draw_the_task_s_own_target():
    assert "LiveCurves(**gpt_defaults.CURVES)" in code_cell(SOURCE, "LiveCurves(")
    assert gpt_defaults.CURVES["target_accuracy"] == gpt_defaults.STOP_AT_ACCURACY


def test_the_training_curves_show_an_exact_answer_run_from_zero():
    """The accuracy axis reaches down to an untrained model's 0% and the loss's reference line is a digit's, not
    a binary logit's."""
    history = History(step=[0, 50, 100], seconds=[0.0, 0.5, 1.0], train_loss=[float("nan"), 2.0, 0.3],
                      val_loss=[25.0, 1.0, 0.1], val_accuracy=[0.0, 0.2, 0.995], lr=[0.0, 5e-3, 1e-2])
    figure = plot_history(history, **gpt_defaults.CURVES)
    loss_ax, accuracy_ax = figure.axes[:2]
    assert accuracy_ax.get_ylim()[0] <= 0.0
    assert [line.get_label() for line in loss_ax.get_lines()][-1] == gpt_defaults.CURVES["chance_label"]
    assert not any("binary" in line.get_label() for line in loss_ax.get_lines())


SHIPPED = [SOURCE, RELEASE, *sorted((GPT.root / "checkers" / "gpt").glob("*.py")),
           *sorted((GPT.root / "course_lib").glob("*.py"))]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_no_shipped_text_cites_lecture_notes_students_do_not_have(path):
    text = path.read_text()
    assert not re.search(r"lecture notes|\b004\b|004_", text), path


def test_attention_maps_tick_whole_token_positions():
    """Token axes hold tokens: no tick at 2.5 or 7.5, and both axes and the figure are titled."""
    import torch
    from course_lib import plot_attention_maps
    figure = plot_attention_maps(torch.rand(2, 10, 10).softmax(-1), title="ten tokens")
    figure.canvas.draw()
    for ax in figure.axes[:2]:
        for ticks in (ax.get_xticks(), ax.get_yticks()):
            assert all(float(tick).is_integer() for tick in ticks), ticks
        assert "token" in ax.get_xlabel()
    assert "token" in figure.axes[0].get_ylabel() and figure.get_suptitle() == "ten tokens"


def test_the_curves_draw_the_check_s_bar_beside_the_stop():
    """The accuracy plot labels the 99% stop as the stop and draws the 95% that check_task_7 asks as its own line."""
    from checkers.gpt.trained import TARGET_ACCURACY
    assert gpt_defaults.CURVES["check_accuracy"] == TARGET_ACCURACY
    assert gpt_defaults.CURVES["target_label"] == "training stops at"
