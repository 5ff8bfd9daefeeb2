"""The transformer assignment's registry entry (course.toml) agrees with what its own parts say."""
import pytest
from course.registry import assignment

pytestmark = pytest.mark.fast


def test_every_trained_task_needs_the_task_of_its_model_s_class():
    """A trained task's points need the definition task whose class its model is (its check runs that check)."""
    assert assignment("transformer").needs == {6: (5,), 8: (7,)}


def test_training_tasks_are_the_ones_the_grader_judges_by_weights():
    """course/transformer/cases/trained_model.py judges a trained model for exactly the tasks that train."""
    from course.transformer.cases.trained_model import TRAINED

    assert set(TRAINED) == set(assignment("transformer").training_tasks)
