"""What the llm notebook says and shows: each task's rhythm (Tasks 1 and 2's designed exception: one answer cell per
function), the import cell, shapes in the glossary's names, short cells, titled plots whose axes name their units,
seeded models, math that renders everywhere, claims that follow from the code they describe.

The rules live in tests/notebook_text.py; the ones every notebook follows (the import cell, short cells, titled
plots, no staff notes, no stray times) are tested for every assignment in tests/test_notebook_rules.py. Whether the
student notebook is released from the current reference, and holds no solution, is tested for every registered
assignment in tests/test_release.py; that it runs untouched and fails only with "not implemented yet", in
tests/test_student_dist.py.
"""
import ast
import re

import matplotlib

matplotlib.use("Agg")

import pytest

from checkers.llm.trained import TARGET_BPB
from checkers.llm.training import SPEED_LIMIT
from course.registry import assignment
from course_lib import llm as llm_defaults
from notebook_text import (axis_labels, broken_copy, cells, check_cell_problems, checker_seeds, code_cell,
                           glossary_or_fail, grade_id, index_of, measured_sentences, names_its_unit, notebook_seeds,
                           seeded_model_problems, shape_name_problems, task_cell_order_problems, task_cells,
                           task_text_problems, tasks_of, training_seed_problems)

pytestmark = pytest.mark.fast

LLM = assignment("llm")
SOURCE, RELEASE = LLM.source_notebook, LLM.release_notebook
TASKS = tasks_of("llm")  # {task: trains}
BOTH = pytest.mark.parametrize("path", [SOURCE, RELEASE], ids=["solutions", "notebooks"])
# Designed: the BPE tasks' answers are several functions, one answer cell each in the order the text builds them, so
# that a student runs each helper before the next; the check cell follows the last.
ONE_CELL_PER_FUNCTION = {1: ["merge_word", "add_pairs", "best_pair", "train_bpe"], 2: ["encode_word", "BPETokenizer"]}
# The tokenizer tasks work on strings and lists of ids, no tensors: their text states the algorithm (with its math)
# where the other definition tasks give a formula with shapes.
ALGORITHM = {1: "**The algorithm.**", 2: "**Encode.**"}
WITH_ONE_ANSWER_CELL = pytest.mark.parametrize("task", [task for task in TASKS if task not in ONE_CELL_PER_FUNCTION])

# The names the pinned API (issue 26) and the notebook's shapes use: the glossary must define them.
PINNED_NAMES = {"B", "L", "D", "H", "H_kv", "head_dim", "V", "L_past", "L_all", "block", "r", "in", "out"}
# n: the head count of Task 5's `heads` lambda, a parameter that parameter_names (function definitions) does not read.
LAMBDA_PARAMETERS = {"n"}


# ----------------------------------------------------------------------------- the rhythm of a task


@BOTH
@pytest.mark.parametrize("task", list(TASKS))
def test_each_task_gives_its_motivation_formula_with_shapes_then_what_to_implement(path, task):
    formula_rule_applies = not TASKS[task] and task not in ALGORITHM  # task_text_problems skips it for `trains`
    assert task_text_problems(path, task, not formula_rule_applies, glossary_or_fail(path)) == []


@pytest.mark.parametrize("task", list(ALGORITHM))
def test_the_tokenizer_tasks_state_their_algorithm_with_math_before_what_to_implement(task):
    text = task_cells(SOURCE, task)[1][0][1]["source"]
    algorithm, implement = text.find(ALGORITHM[task]), text.find("**Implement")
    assert 0 <= algorithm < implement and "$" in text[algorithm:implement]


@BOTH
@WITH_ONE_ANSWER_CELL
def test_each_task_has_its_answer_cell_then_its_check_cell_then_an_example(path, task):
    assert task_cell_order_problems(path, task, release=path == RELEASE) == []


def defined_names(source):
    """The functions and classes a cell defines at its top level, in order (the nbgrader markup is comments)."""
    return [node.name for node in ast.parse(source).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]


def multi_cell_section_problems(path, task, functions):
    """A task answered in several cells: after its text (code cells it gives aside), one run of answer cells defining
    functions in order, at once its check cell, then an example (text, then code); the Implement bullets name each."""
    start, section_cells = task_cells(path, task)
    later = section_cells[1:]
    positions = [position for position, (_, cell) in enumerate(later) if grade_id(cell).startswith(f"task_{task}_")]
    if not positions:
        return [f"Task {task}'s section holds no answer cell"]
    first, last = positions[0], positions[-1]
    problems = []
    if positions != list(range(first, last + 1)):
        problems.append(f"Task {task}'s answer cells are not one run of cells")
    if any(cell["cell_type"] == "markdown" for _, cell in later[:first]):
        problems.append(f"text between Task {task}'s instructions and its first answer cell")
    defined = [name for position in positions for name in defined_names(later[position][1]["source"])]
    if defined != functions:
        problems.append(f"Task {task}'s answer cells define {defined}, not {functions}")
    bullets = section_cells[0][1]["source"].split("**Implement", 1)[-1]
    unnamed = [name for name in functions if not re.search(rf"^- .*`{name}\(", bullets, re.M)]
    if unnamed:
        problems.append(f"Task {task}'s Implement bullets do not name {unnamed}")
    after = later[last + 1:]
    if not after or after[0][1]["source"].strip() != f"check_task_{task}({functions[-1]})":
        problems.append(f"Task {task}'s last answer cell is not followed at once by check_task_{task}({functions[-1]})")
    kinds = [cell["cell_type"] for _, cell in after[1:]]
    if "markdown" not in kinds or "code" not in kinds[kinds.index("markdown"):]:
        problems.append(f"no example (text, then code) after Task {task}'s check cell")
    return problems


@BOTH
@pytest.mark.parametrize("task", list(ONE_CELL_PER_FUNCTION))
def test_the_bpe_tasks_give_one_answer_cell_per_function_then_their_check_then_an_example(path, task):
    assert multi_cell_section_problems(path, task, ONE_CELL_PER_FUNCTION[task]) == []


def test_the_one_cell_per_function_rule_catches_a_section_that_breaks_it(tmp_path):
    """The rule can fail: text between two answer cells, the check cell moved away, a function left out of the
    bullets, the example's code dropped."""
    def text_between(notebook_cells):
        notebook_cells.insert(index_of(notebook_cells, "task_1_train_bpe"),
                              {"cell_type": "markdown", "metadata": {}, "source": ["A note."]})

    def move_check(notebook_cells):
        notebook_cells.append(notebook_cells.pop(index_of(notebook_cells, "check_task_1")))

    def unnamed_helper(notebook_cells):
        (heading,) = [cell for cell in notebook_cells if "".join(cell["source"]).startswith("## 1.")]
        heading["source"] = ["".join(heading["source"]).replace("`best_pair(counts", "`the_best_pair(counts")]

    def drop_example_code(notebook_cells):
        del notebook_cells[index_of(notebook_cells, "check_task_1") + 2]

    for edit, problem in ((text_between, "not one run"), (move_check, "not followed at once"),
                          (unnamed_helper, "do not name ['best_pair']"), (drop_example_code, "no example")):
        problems = multi_cell_section_problems(broken_copy(SOURCE, tmp_path, edit), 1, ONE_CELL_PER_FUNCTION[1])
        assert any(problem in found for found in problems), (edit.__name__, problems)


@BOTH
def test_each_check_cell_calls_one_registered_check(path):
    assert check_cell_problems(path, TASKS) == []


# ----------------------------------------------------------------------------- the import cell and names


@BOTH
def test_the_glossary_names_the_shapes_the_notebook_uses(path):
    assert PINNED_NAMES <= glossary_or_fail(path)


@BOTH
def test_shape_comments_use_the_glossary_s_names(path):
    glossary_or_fail(path)
    assert shape_name_problems(path, allowed=LAMBDA_PARAMETERS) == []


# ----------------------------------------------------------------------------- plots, seeds


# Axis labels that measure nothing with a unit: a category on the axis.
UNITLESS = re.compile(r"^(token id .*|text encoded|held-out text scored)$")


def test_every_axis_names_its_unit():
    """A label measuring something says its unit in parentheses, e.g. "token length (bytes)"; "(no unit)" says so."""
    labels = [(index, label) for index, cell in enumerate(cells(SOURCE)) if cell["cell_type"] == "code"
              for label in axis_labels(cell["source"])]
    missing = [(index, label) for index, label in labels if not names_its_unit(label, UNITLESS)]
    assert len(labels) >= 10 and missing == []


def test_the_unit_rule_tells_a_label_with_its_unit_from_one_without():
    source = 'ax.set(xlabel="text encoded", ylabel="peak memory")\nax.set_ylabel("token length (bytes)")'
    labels = sorted(axis_labels(source))
    assert labels == ["peak memory", "text encoded", "token length (bytes)"]
    assert [names_its_unit(label, UNITLESS) for label in labels] == [False, True, True]


def test_every_default_model_is_built_right_after_a_seed():
    assert seeded_model_problems(SOURCE, "Llama") == []


def test_training_starts_from_the_seed_of_the_cell_before_it():
    """Nothing random runs between the seed and the training cell (TextWindows draws from a seed of its own)."""
    assert training_seed_problems(SOURCE, "Llama", "TextWindows") == []


def test_the_notebook_never_draws_the_checker_s_data():
    """A seed of the notebook's data or models equal to the checker's would let a student train on what is judged."""
    seeds, used = checker_seeds("llm"), notebook_seeds(SOURCE) | {llm_defaults.WINDOWS_SEED}
    assert seeds and used and not used & set(seeds.values()), (used, seeds)


# ----------------------------------------------------------------------------- claims the code supports


def test_the_task_table_gives_each_task_its_points():
    rows = dict(re.findall(r"^\| (\d+) \|.*\| (\d+(?:\.\d+)?) \|$", cells(SOURCE)[0]["source"], re.M))
    assert {int(task): float(points) for task, points in rows.items()} == {
        number: task.points for number, task in LLM.tasks.items()}


@pytest.mark.parametrize("heading", ["## 2.", "## 6.", "## 7.", "## After the tasks"])
def test_each_measured_sentence_states_the_load_it_was_measured_under(heading):
    (sentence,) = measured_sentences(SOURCE, heading)
    assert re.search(r"load average [\d.]+", sentence) and re.search(r"\d\s?(s|MiB)\b", sentence), sentence


def test_task_1_states_the_check_s_speed_limit():
    text = task_cells(SOURCE, 1)[1][0][1]["source"]
    assert re.search(rf"at most {SPEED_LIMIT:g} times", text)


def test_task_7_states_the_check_s_bound():
    text = task_cells(SOURCE, 7)[1][0][1]["source"].split("**Implement", 1)[1]
    assert f"at most {TARGET_BPB:.2f}" in text


def llama_parameters(vocab_size, embed_dim, num_heads, num_kv_heads, hidden_dim, num_layers, max_len):
    """The parameters of the given Llama, counted from its layout: a tied embedding, per block two RMSNorm weights,
    q/o (D × D), k/v (D × H_kv·head_dim) and SwiGLU's three D × F projections, a final RMSNorm."""
    kv_dim = num_kv_heads * embed_dim // num_heads
    block = 2 * embed_dim + 2 * embed_dim * embed_dim + 2 * embed_dim * kv_dim + 3 * embed_dim * hidden_dim
    return vocab_size * embed_dim + num_layers * block + embed_dim


def lora_parameters(model, rank, targets):
    """A and B of rank `rank` on each target projection of every block: rank · (in + out) each."""
    kv_dim = model["num_kv_heads"] * model["embed_dim"] // model["num_heads"]
    outputs = dict(q_proj=model["embed_dim"], k_proj=kv_dim, v_proj=kv_dim, o_proj=model["embed_dim"])
    return model["num_layers"] * sum(rank * (model["embed_dim"] + outputs[name]) for name in targets)


def test_the_defaults_task_7_states_are_the_defaults_it_runs():
    model, training = llm_defaults.MODEL, llm_defaults.TRAINING
    text = task_cells(SOURCE, 7)[1][0][1]["source"].split("**What happens.**", 1)[1].split("**Measured:**")[0]
    stated = (f"{model['num_layers']} blocks of width {model['embed_dim']} with {model['num_heads']} query heads "
              f"sharing {model['num_kv_heads']} key/value heads and a SwiGLU width of {model['hidden_dim']} "
              f"({llama_parameters(**model):,} parameters, {model['vocab_size'] * model['embed_dim']:,} of them the "
              f"embedding")
    assert stated in text
    learning_rate = f"{training['lr']:.0e}".replace("e-0", "e-")  # 6e-3, as the text writes it
    assert (f"peak learning rate of {learning_rate} with {training['warmup_steps']} warm-up steps and a cosine "
            f"decay over {llm_defaults.STEPS:,} steps of {llm_defaults.BATCH_SIZE} windows") in text


def test_task_7_s_cells_run_the_defaults_its_text_states():
    """The text's defaults are llm_defaults' (the test above): the cells must build and train from those, unchanged."""
    data_cell, training_cell = code_cell(SOURCE, "TextWindows(train_ids"), code_cell(SOURCE, "\nhistory = train(")
    assert "model_config, train_config = dict(llm_defaults.MODEL), dict(llm_defaults.TRAINING)" in data_cell
    assert "llm_defaults.STEPS * llm_defaults.BATCH_SIZE" in data_cell
    assert "batch_size=llm_defaults.BATCH_SIZE" in data_cell
    assert "**train_config" in training_cell and "LiveCurves(**llm_defaults.CURVES)" in training_cell


def test_the_lora_demo_states_the_parameters_it_trains():
    lora, model = llm_defaults.LORA, llm_defaults.MODEL
    trainable, full = lora_parameters(model, lora["rank"], lora["targets"]), llama_parameters(**model)
    (sentence,) = measured_sentences(SOURCE, "## After the tasks")
    assert f"Training {trainable:,} parameters, {trainable / full:.1%} of the model's {full:,}" in sentence
    assert f"Rank-{lora['rank']} LoRA layers wrap the four projections" in "\n".join(
        cell["source"] for cell in cells(SOURCE) if cell["source"].startswith("## After the tasks"))


SHIPPED = [SOURCE, *sorted((LLM.root / "checkers" / "llm").glob("*.py")), LLM.root / "course_lib" / "llm.py"]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_no_shipped_text_cites_lecture_notes_students_do_not_have(path):
    assert not re.search(r"lecture notes|\b004\b|004_", path.read_text()), path


def test_the_training_curves_name_the_held_out_part_they_score():
    """The curves score the held-out part (EVAL_CHARS characters), not a validation set: their labels say so."""
    from course_lib import plot_history
    from course_lib.training import History

    history = History(step=[0, 100], seconds=[0.0, 1.0], train_loss=[float("nan"), 5.0], val_loss=[6.9, 5.0],
                      val_accuracy=[0.001, 0.2], lr=[1e-4, 6e-3])
    loss_panel, accuracy_panel, _ = plot_history(history, **llm_defaults.CURVES).axes
    texts = [accuracy_panel.get_title(), *(line.get_label() for line in loss_panel.get_lines())]
    assert "held-out part" in accuracy_panel.get_title()
    assert f"held-out part ({llm_defaults.EVAL_CHARS:,} characters)" in texts
    assert not any("validation" in text.lower() for text in texts), texts


def test_task_7_counts_the_cells_it_describes():
    """'The first cell below' defines the model, the second draws the windows, the third builds and scores it."""
    start, section_cells = task_cells(SOURCE, 7)
    text = section_cells[0][1]["source"]
    below = [cell["source"] for _, cell in section_cells[1:]]
    ordinals = {"first": 0, "second": 1, "third": 2}
    for ordinal, needle in (("first", "class Llama("), ("second", "TextWindows(train_ids"), ("third", "Llama(**")):
        assert needle in below[ordinals[ordinal]], (ordinal, needle)
    assert "The first cell below builds it" in text
    assert re.search(r"The second cell below tokenizes[^.]*draws[^;.]*\([^)]*\); the third builds the model", text)


@BOTH
def test_the_tokenizer_s_constructor_stub_says_what_to_build(path):
    """BPETokenizer builds no layers: its constructor's TODO names the ranks and the vocab instead."""
    todo = next(line for line in code_cell(path, "class BPETokenizer").splitlines()  # __init__'s, the first
                if "YOUR CODE HERE" in line or "BEGIN SOLUTION" in line)
    assert "layers" not in todo and "ranks" in todo and "vocab" in todo, todo
