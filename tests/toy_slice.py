"""The throwaway assignment `toy` of tests/test_second_assignment.py, as the text of its slice.

Three tasks of the shapes the real assignments have: a function (`double(x)` returns 2x), a module class
(`LinearClassifier`, one nn.Linear named `linear`, with a fixture, a known mistake and a hidden case of another
shape) and a trained task (the class trained on points around three centres, judged by the grader from the weights
on data of its own). Every file lies inside a part of course/slices.py; task numbers are written as {n} fields
filled from the registry entry (NUMBERS), so this shared file names none.
"""
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course.registry import student_repo

NAME = "toy"
# The toy's tasks: number -> (what its answer cell's grade id ends with, points, trains)
TASKS = {1: ("double", 2, False), 2: ("classifier", 4, False), 3: ("training", 4, True)}
DOUBLE, CLASSIFIER, TRAINED = TASKS
NUMBERS = dict(double=DOUBLE, classifier=CLASSIFIER, trained=TRAINED)


def answer_id(task):
    """The grade id of a task's answer cell."""
    return f"task_{task}_{TASKS[task][0]}"


def filled(text):
    """A slice text with its task numbers ({double}, {classifier}, {trained}) filled in."""
    return text.replace("{double}", str(DOUBLE)).replace("{classifier}", str(CLASSIFIER)).replace(
        "{trained}", str(TRAINED))


DOUBLE_ANSWER = ('def double(x):\n    """Twice x, elementwise."""\n'
                 "    ### BEGIN SOLUTION\n    return torch.mul(x, 2)\n    ### END SOLUTION")
CLASSIFIER_ANSWER = '''class LinearClassifier(nn.Module):
    """Logits of num_classes classes from input_dim features: one linear layer."""

    def __init__(self, input_dim, num_classes):
        super().__init__()
        ### BEGIN SOLUTION (constructor)
        self.linear = nn.Linear(input_dim, num_classes)
        ### END SOLUTION

    def forward(self, x):
        """x (..., input_dim) -> logits (..., num_classes)."""
        ### BEGIN SOLUTION
        return self.linear(x)
        ### END SOLUTION'''
TRAINING_ANSWER = '''### BEGIN SOLUTION
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(100):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(train_x), train_y)
    loss.backward()
    optimizer.step()
### END SOLUTION'''
ANSWERS = {DOUBLE: DOUBLE_ANSWER, CLASSIFIER: CLASSIFIER_ANSWER, TRAINED: TRAINING_ANSWER}

CHECKS = filled('''"""Instant checks of the toy assignment."""
from course_lib.toy import INPUT_DIM, NUM_CLASSES, blobs

from .._compare import diagnose, expect_close, expect_tensor, signatures
from .._core import check_function, expect_callable, load_fixture
from .classifier import check_task_{classifier}
from .trained import check_task_{trained}

__all__ = ["INPUT_DIM", "NUM_CLASSES", "blobs", "check_task_{double}", "check_task_{classifier}",
           "check_task_{trained}"]


@check_function({double})
def check_task_{double}(task, double):
    """Check double(x) -> 2x."""
    expect_callable(task, double, "double")
    case = load_fixture(__package__, {double})["random"]
    got = expect_tensor(task, "double(x)", task.call("double(x)", double, case["x"]), case["x"].shape)
    diagnose(task, "double(x)", got, signatures(case, "res"), 1e-6, 1e-6)
    expect_close(task, "double(x)", got, case["res"], 1e-6, 1e-6)
    task.passed("double(x) is 2x.")
''')
DATA = '''"""The toy's data: points around three centres in four dimensions, one class per centre."""
import torch

INPUT_DIM, NUM_CLASSES = 4, 3
TARGET_ACCURACY = 0.9  # one bar for the notebook's check and the grade
CENTRES = 2.0 * torch.eye(NUM_CLASSES, INPUT_DIM)  # (NUM_CLASSES, INPUT_DIM)


def blobs(size, seed):
    """size points drawn from seed: (x (size, INPUT_DIM), labels (size,)), each point its centre plus N(0, 0.5^2)."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(NUM_CLASSES, (size,), generator=generator)
    return CENTRES[labels] + 0.5 * torch.randn(size, INPUT_DIM, generator=generator), labels
'''
WEIGHTS = '''"""The toy classifier's weights by role: its layer `linear`, so fixed weights load into any layout."""
import torch.nn as nn

from .._weights import _child, _linear


def linear_slots(model):
    """Role name -> parameter of a LinearClassifier: `linear.weight` and `linear.bias`."""
    return _linear(_child(model, "linear", nn.Linear, ""), "linear")
'''
CLASSIFIER_CHECK = filled('''"""The toy's module class: LinearClassifier, loaded with the fixture's weights and run."""
from .._compare import diagnose, expect_close, expect_tensor, signatures
from .._core import check_function, expect_module_class, load_fixture
from .._modules import build, load
from ._weights import linear_slots

ATOL, RTOL = 1e-6, 1e-6


@check_function({classifier})
def check_task_{classifier}(task, LinearClassifier):
    """Check LinearClassifier: its logits for a batch of vectors and a batch of sequences."""
    cls, name = LinearClassifier, "LinearClassifier"
    expect_module_class(task, cls, name)
    for case in load_fixture(__package__, {classifier})["cases"].values():
        model = load(task, build(task, cls, name, **case["config"]), linear_slots, case["weights"], name).eval()
        logits = task.call(f"{name}.forward", model, case["x"])
        expect_tensor(task, f"{name}(x)", logits, case["logits"].shape, case["x"].dtype)
        diagnose(task, f"{name}(x)", logits, signatures(case, "logits"), ATOL, RTOL)
        expect_close(task, f"{name}(x)", logits, case["logits"], ATOL, RTOL)
    task.passed("the logits of one linear layer, for a batch of vectors and a batch of sequences.")
''')
TRAINED_CHECK = filled('''"""The trained task: the model's class passes its task and it classifies fresh points."""
import torch

from .._compare import expect_finite, expect_tensor
from .._core import check_function
from .._trained import expect_class_passes, expect_trained_model, model_device
from .classifier import check_task_{classifier}
from course_lib.toy import NUM_CLASSES, TARGET_ACCURACY, blobs

CHECK_SEED, CHECK_SIZE = 31337, 500  # never the notebook's training seed


@check_function({trained})
def check_task_{trained}(task, model):
    """Check that the trained classifier's class passes its task and that it is right on 90% of fresh points."""
    expect_trained_model(task, model, "LinearClassifier")
    x, labels = blobs(CHECK_SIZE, seed=CHECK_SEED)
    was_training = model.training
    with torch.no_grad():
        logits = task.call("model(x)", model.eval(), x.to(model_device(model)))
    model.train(was_training)
    expect_tensor(task, "model(x)", logits, (CHECK_SIZE, NUM_CLASSES))
    expect_finite(task, "model(x)", logits)
    expect_class_passes(task, {classifier}, check_task_{classifier}, type(model))
    accuracy = (logits.argmax(-1).cpu() == labels).float().mean().item()
    if accuracy < TARGET_ACCURACY:
        task.fail(f"the classifier is right on {accuracy:.1%} of {CHECK_SIZE} fresh points; it needs at least "
                  f"{TARGET_ACCURACY:.0%}: train longer or with a larger learning rate.")
    task.passed(f"accuracy {accuracy:.1%} on {CHECK_SIZE} fresh points.")
''')
FIXTURES = filled('''"""How the toy assignment's fixtures are built."""
import torch

from checkers.toy._weights import linear_slots

OUTPUT_KEYS = ("res", "logits")


def double_fixture(ref, generator):
    x = torch.randn(3, 4, generator=generator)
    return {"random": {"x": x, "res": ref["double"](x)}}


def classifier_fixture(ref, generator):
    """LinearClassifier(4, 3) with random weights, on a batch of vectors and on a batch of sequences."""
    cases = {}
    for name, shape in (("vectors", (5, 4)), ("sequences", (2, 3, 4))):
        model = ref["LinearClassifier"](4, 3)
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
        x = torch.randn(shape, generator=generator)
        weights = {role: value.detach().clone() for role, value in linear_slots(model).items()}
        cases[name] = {"config": dict(input_dim=4, num_classes=3), "x": x, "weights": weights, "logits": model(x)}
    return {"cases": cases}


BUILDERS = {{double}: double_fixture, {classifier}: classifier_fixture}
''')
BENCH = '''"""The toy assignment's bench: double(x) against torch.mul, outputs checked equal, then timed."""
import torch

from tools.bench.goals import Goal
from tools.bench.timing import compare_speed, output_difference

SETTINGS = {"full": dict(size=4096, rounds=15), "quick": dict(size=64, rounds=3)}


class Apply(torch.nn.Module):
    """A function as a module (output_difference differentiates modules)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def double_section(ref, settings, device):
    x = torch.randn(settings["size"], device=device)  # (N,)
    ours, native = Apply(ref["double"]), Apply(lambda x: torch.mul(x, 2))
    check = output_difference(ours, native, x)
    speed = compare_speed(lambda: ours(x), lambda: native(x), device, settings["rounds"])
    return dict(**check, **speed)


def goals(report, settings):
    row = report["double"]
    return [Goal("double", "double vs torch.mul", f"ratio {row['ratio']:.2f}", "allclose", row["match"])]


SECTIONS = {"double": double_section}
'''
SOFTMAX = ("it returns probabilities (a softmax of the logits): return self.linear(x) itself; the loss applies the "
           "softmax.")
MISTAKES = filled(f'''"""Known mistakes of the toy assignment."""
from course.mutant import Mutant

MUTANTS = (
    Mutant({{double}}, "tripled", (("torch.mul(x, 2)", "torch.mul(x, 3)"),), "you return 3x: the factor is 2."),
    Mutant({{classifier}}, "softmax", (("return self.linear(x)", "return torch.softmax(self.linear(x), dim=-1)"),),
           "{SOFTMAX}"),
)
''')
SLICE_TEST = filled('''"""Both ways: the reference passes, known mistakes are named, bad training fails."""
import re

import pytest
import torch
import torch.nn.functional as F

import checkers.toy as checkers
from checkers import CheckFailure
from course.reference import load_reference, reference_source
from course.registry import assignment
from course.toy.mistakes import MUTANTS

SOURCE = reference_source(assignment("toy"))
REFERENCE = load_reference(SOURCE)
DEFINED = {{double}: (checkers.check_task_{double}, "double"),
           {classifier}: (checkers.check_task_{classifier}, "LinearClassifier")}


def trained(namespace, steps):
    """The notebook's training: LinearClassifier of namespace, seed 0, full-batch SGD for `steps` steps."""
    torch.manual_seed(0)
    x, labels = checkers.blobs(256, seed=1)
    model = namespace["LinearClassifier"](checkers.INPUT_DIM, checkers.NUM_CLASSES)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(steps):
        optimizer.zero_grad()
        F.cross_entropy(model(x), labels).backward()
        optimizer.step()
    return model


@pytest.mark.parametrize("task", DEFINED)
def test_the_reference_passes(task):
    check, name = DEFINED[task]
    check(REFERENCE[name])


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_a_known_mistake_is_named(mutant):
    check, name = DEFINED[mutant.task]
    with pytest.raises(CheckFailure, match=f"Task {mutant.task}: .*" + re.escape(mutant.diagnosis.split(":")[0])):
        check(load_reference(mutant.apply(SOURCE))[name])


def test_a_trained_reference_passes():
    checkers.check_task_{trained}(trained(REFERENCE, 100))


def test_an_untrained_model_fails_with_its_accuracy():
    with pytest.raises(CheckFailure, match="Task {trained}: the classifier is right on .* of 500 fresh points"):
        checkers.check_task_{trained}(trained(REFERENCE, 0))


def test_a_trained_model_of_a_wrong_class_fails_naming_the_class_task():
    wrong = load_reference(next(m for m in MUTANTS if m.name == "softmax").apply(SOURCE))
    with pytest.raises(CheckFailure, match="Task {trained}: the model's class does not pass check_task_{classifier}"):
        checkers.check_task_{trained}(trained(wrong, 100))
''')
CASES = filled('''"""The toy's grading cases: the visible checks' own, hidden ones of other shapes, the trained one."""
import torch

from checkers._core import load_fixture
from grading.cases.parts import assemble, called, module, random_weights, randn, recipe

from .trained_model import SLOTS, evaluation_data, trained_accuracy, trained_case, trained_config

__all__ = ["build_cases", "evaluation_data", "trained_accuracy", "trained_config"]


def double_cases():
    return [recipe({double}, "check: random", True, call=called(load_fixture("checkers.toy", {double})["random"]["x"]))]


def classifier_cases():
    return [recipe({classifier}, f"check: {name}", True, call=called(case["x"]),
                   build=module("LinearClassifier", SLOTS, case["weights"], **case["config"]))
            for name, case in load_fixture("checkers.toy", {classifier})["cases"].items()]


VISIBLE = {{double}: double_cases, {classifier}: classifier_cases}


def hidden_cases(task, reference):
    """Other shapes than the visible check's: for the classifier 6 features, 5 classes, with gradients."""
    generator = torch.Generator().manual_seed(5)
    if task == {double}:
        return [recipe(task, f"hidden: shape {shape}", False, call=called(torch.randn(shape, generator=generator)))
                for shape in ((7,), (2, 3, 5))]
    sizes = dict(input_dim=6, num_classes=5)
    weights = random_weights(reference["LinearClassifier"], "LinearClassifier", SLOTS, generator, **sizes)
    return [recipe(task, "hidden: 6 features, 5 classes, a batch of sequences", False, grad=True,
                   build=module("LinearClassifier", SLOTS, weights, **sizes), call=called(randn(generator, 4, 2, 6)))]


def build_cases(reference, assignment):
    return assemble(assignment, reference, VISIBLE, hidden_cases, trained_case)
''')
CASES_TRAINED = '''"""The toy's trained task: what the probe records (the weights by role), how the grader rebuilds
the reference LinearClassifier from them, and the data it judges it on (drawn here, never sent to a probe)."""
import torch

from checkers._core import Task
from course_lib.toy import INPUT_DIM, NUM_CLASSES, TARGET_ACCURACY, blobs
from grading.cases.parts import recipe
from grading.judge.trained_models import InvalidModel, check_record, shape
from grading.recipes import snapshot

SLOTS = "checkers.toy._weights:linear_slots"
DATA_SEED, SIZE = 271828, 1000  # neither the notebook's seed (1) nor the visible check's (31337)


def evaluation_data(spec):
    x, labels = blobs(SIZE, seed=DATA_SEED)
    return {"x": x, "labels": labels}


def trained_case(task):
    """The weights and settings of the trained model; no stack of blocks to record settings of."""
    spec = {"assignment": "toy", "class_name": "LinearClassifier", "slots": SLOTS, "stacks": {},
            "target": TARGET_ACCURACY}
    return recipe(task, f"hidden: accuracy on {SIZE} fresh points", False, trained=spec)


def trained_config(weights, settings, spec):
    """The reference constructor's keywords, from the shape of `linear.weight`; raises InvalidModel."""
    check_record(weights, settings)
    num_classes, input_dim = shape(weights, "linear.weight")
    if (input_dim, num_classes) != (INPUT_DIM, NUM_CLASSES):
        raise InvalidModel(f"the classifier maps {input_dim} features to {num_classes} classes, the data has "
                           f"{INPUT_DIM} and {NUM_CLASSES}")
    return dict(input_dim=input_dim, num_classes=num_classes)


def trained_accuracy(task, model, data, reference=None):
    """Accuracy of the loaded reference classifier on the grader's points."""
    with torch.no_grad():
        logits = Task(task).call("model(x)", model.eval(), data["x"])
    return (snapshot(logits).argmax(-1) == data["labels"]).float().mean().item()
'''


# The first code cell of every notebook: Colab installs the course package from course.toml's student repository
INSTALL = ('# Colab starts without the course files: install the course package (checkers and course_lib) there.\n'
           f'import sys\n\nCOURSE_REPO = "{student_repo()}"\n'
           'if "google.colab" in sys.modules:\n    %pip install --quiet "git+{COURSE_REPO}"')


def toy_notebook():
    """The toy reference notebook: set-up, then each task's text, answer cell and locked check cell."""
    grader = dict(schema_version=3, task=False)
    answer = lambda task: new_code_cell(ANSWERS[task], metadata={"nbgrader": dict(
        grader, grade=False, grade_id=answer_id(task), locked=False, solution=True)})
    check = lambda task, source: new_code_cell(source, metadata={"nbgrader": dict(
        grader, grade=True, grade_id=f"check_task_{task}", locked=True, points=TASKS[task][1], solution=False)})
    cells = [new_markdown_cell("# Toy\n\nThree tasks, to show that an assignment is a plug-in."),
             new_code_cell(INSTALL),
             new_code_cell(filled("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
                                  "from checkers.toy import (INPUT_DIM, NUM_CLASSES, blobs, check_task_{double}, "
                                  "check_task_{classifier},\n                        check_task_{trained})")),
             new_markdown_cell(f"## {DOUBLE}. Double\n\n- return `2 * x`"), answer(DOUBLE),
             check(DOUBLE, f"check_task_{DOUBLE}(double)"), new_code_cell("double(torch.arange(3.0))"),
             new_markdown_cell(f"## {CLASSIFIER}. A linear classifier\n\n`LinearClassifier(input_dim, num_classes)`: "
                               "one `nn.Linear` named `linear`; `forward(x)` returns its logits."),
             answer(CLASSIFIER), check(CLASSIFIER, f"check_task_{CLASSIFIER}(LinearClassifier)"),
             new_markdown_cell(f"## {TRAINED}. Train it\n\nTrain `model` on `train_x`, `train_y` to 90% accuracy."),
             new_code_cell("torch.manual_seed(0)\ntrain_x, train_y = blobs(256, seed=1)  # (256, INPUT_DIM), (256,)\n"
                           "model = LinearClassifier(INPUT_DIM, NUM_CLASSES)"),
             answer(TRAINED), check(TRAINED, f"check_task_{TRAINED}(model)")]
    notebook = new_notebook(cells=cells)
    notebook.metadata.update(accelerator="GPU", kernelspec={"display_name": "Python 3", "language": "python",
                                                            "name": "python3"})
    return nbformat.writes(notebook)


def slice_files():
    """{path relative to the checkout: text} of the toy's slice."""
    checkers, course = f"checkers/{NAME}", f"course/{NAME}"
    return {f"solutions/{NAME}/{NAME}.ipynb": toy_notebook(), f"{checkers}/__init__.py": CHECKS,
            f"course_lib/{NAME}.py": DATA, f"{checkers}/_weights.py": WEIGHTS,
            f"{checkers}/classifier.py": CLASSIFIER_CHECK, f"{checkers}/trained.py": TRAINED_CHECK,
            f"{course}/__init__.py": "", f"{course}/fixtures.py": FIXTURES, f"{course}/mistakes.py": MISTAKES,
            f"{course}/cases/__init__.py": CASES, f"{course}/cases/trained_model.py": CASES_TRAINED,
            f"{course}/tests/__init__.py": "", f"{course}/tests/test_{NAME}.py": SLICE_TEST,
            f"{course}/bench.py": BENCH,
            # the given cell of its student notebook that uses no student code (tests/test_student_dist.py)
            f"{course}/tests/student_notebook.py": 'GIVEN_CELLS = ("import torch",)\n'}


def registry_entry():
    """The toy's entry of course.toml (the trained task needs the classifier's task: its model is of that class)."""
    tasks = "\n".join(
        f'{task} = {{ points = {points}, check = "checkers.{NAME}:check_task_{task}", trains = {str(trains).lower()}'
        + (f", needs = [{CLASSIFIER}]" if trains else "") + " }" for task, (_, points, trains) in TASKS.items())
    return (f'\n[[assignments]]\nname = "{NAME}"\ntitle = "A throwaway assignment: a function, a module class and a '
            f'trained model"\n\n[assignments.tasks]\n{tasks}\n')
