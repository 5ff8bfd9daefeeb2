"""The gpt assignment's registry entry (course.toml) agrees with what its own parts say."""
import pytest
from course.registry import assignment

pytestmark = pytest.mark.fast


def test_every_trained_task_needs_the_task_of_its_model_s_class():
    """A trained task's points need the definition task whose class its model is (its check runs that check)."""
    assert assignment("gpt").needs == {7: (5,)}
