"""The transformer's hidden grading cases (course/transformer/cases/), scored in-process as the grader scores them.

The reference passes every task; every planted and every unnamed mistake scores 0 on its task; every valid variant
the checkers accept scores full marks; what a probe receives holds no expected values; and the trained task is
judged from the model's weights, not from its forward.
"""
import pytest

from course.registry import assignment
from course.transformer.mistakes import MUTANTS
from grading.judge.expected import reference_namespace
from grading.recipes import run
from in_process_grading import graded_cases_of, verdict_of
from .palindrome_models import mirror_logits
from . import valid_variants as alt
from .unnamed_mistakes import UNNAMED


TRANSFORMER = assignment("transformer")
DEFINITION_TASKS, POINTS = TRANSFORMER.definition_tasks, TRANSFORMER.points


@pytest.fixture(scope="module")
def graded_cases():
    """(cases, expected, names, points, reference) as the grader builds them."""
    return graded_cases_of(TRANSFORMER, reference_namespace(TRANSFORMER))


@pytest.mark.fast
@pytest.mark.parametrize("task", DEFINITION_TASKS)
def test_reference_passes_hidden_tests(task, graded_cases):
    verdict = verdict_of(task, graded_cases[4], graded_cases)
    assert verdict.score == POINTS[task], verdict.message
    assert sum(not case["visible"] for case in graded_cases[0][task]) >= 4  # hidden cases beyond the visible ones


# The full tier: the fast agreement matrix (tests/test_check_grade_agreement.py) asserts the same of each mistake
@pytest.mark.full
@pytest.mark.parametrize("planted", MUTANTS, ids=lambda m: f"task{m.task}-{m.name}")
def test_hidden_tests_reject_every_planted_mistake(planted, graded_cases, load_variant):
    verdict = verdict_of(planted.task, load_variant(planted.apply), graded_cases)
    assert verdict.score == 0 and verdict.message.startswith(f"Task {planted.task}")


def unnamed_mistakes():
    """The wrong implementations named nowhere in the catalogue (unnamed_mistakes.py), by task."""
    return [(task, objects) for task, objects, _ in UNNAMED]


@pytest.mark.fast
@pytest.mark.parametrize("task, objects", unnamed_mistakes(),
                         ids=lambda value: value[0].__name__ if isinstance(value, tuple) else None)
def test_hidden_tests_reject_every_unnamed_mistake(task, objects, graded_cases):
    verdict = verdict_of(task, dict(zip(graded_cases[2][task], objects)), graded_cases)
    assert verdict.score == 0 and verdict.message.startswith(f"Task {task}"), verdict.message


def alternatives():
    """The checkers' accepted alternative solutions (course/transformer/tests/valid_variants.py), by task."""
    return [(1, (f,)) for f in alt.ATTENTIONS] + [(2, (c,)) for c in alt.MULTIHEADS] + \
        [(3, (c,)) for c in alt.BLOCKS] + [(4, (c,)) for c in alt.POSITIONALS] + \
        [(5, (c,)) for c in alt.CLASSIFIERS] + [(7, classes) for classes in alt.LINFORMERS]


def variant_id(value):
    """'attention_einsum' for a tuple of student objects (their names, stable across runs), else the task number."""
    return "-".join(obj.__name__ for obj in value) if isinstance(value, tuple) else str(value)


@pytest.mark.fast
@pytest.mark.parametrize("task, objects", alternatives(), ids=variant_id)
def test_hidden_tests_accept_what_the_checkers_accept(task, objects, graded_cases):
    names = graded_cases[2][task]
    verdict = verdict_of(task, dict(zip(names, objects)), graded_cases)
    assert verdict.score == POINTS[task], verdict.message


@pytest.mark.fast
def test_recipes_hold_no_expected_values(graded_cases):
    """What a probe receives: inputs and weights only; the trained tasks' data and labels stay in the grader."""
    cases = graded_cases[0]
    text = repr(cases)
    assert "labels" not in text and "expected" not in text
    assert all("tokens" not in recipe["trained"] for task in (6, 8) for recipe in cases[task])


@pytest.mark.fast
def test_trained_task_is_judged_from_weights_not_from_forward(graded_cases):
    """A hand-written palindrome test put in place of the trained network's forward does not earn task 6."""
    from course_lib import transformer as defaults
    from grading.judge.trained_models import trained_problem
    cases, expected, _, _, reference = graded_cases
    base = reference["TransformerForSequenceClassification"]

    class Detector(base):
        def forward(self, x):
            return mirror_logits(x)

    model = Detector(**defaults.CLASSIFIER)
    record = run(cases[6][0], [model], {"TransformerForSequenceClassification": base})
    problem = trained_problem(6, record, expected[6][0], reference)[0]
    assert problem and "accuracy" in problem and "with your weights" in problem
