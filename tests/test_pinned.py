"""Each assignment pins its constructors in checkers/<assignment>/_pinned.py: its checks build with its own pins, and a
caller that builds by class name alone (the grader) sees every assignment's, a class two assignments share pinned
alike."""
import pytest

import checkers._modules as modules
from checkers._core import check_function
from course.registry import assignments

pytestmark = pytest.mark.fast


def test_every_assignment_pins_its_classes_and_the_union_holds_them_all():
    own = {assignment.name: modules.pinned(f"checkers.{assignment.name}") for assignment in assignments()}
    assert all(own.values()), own
    merged = modules.pinned()
    assert set(merged) == {name for pins in own.values() for name in pins}
    assert all(merged[name] == signature for pins in own.values() for name, signature in pins.items())


def test_a_check_s_task_knows_its_assignment_s_package():
    def report(task):
        return task.package

    report.__module__ = "checkers.an_assignment.a_module"
    assert check_function(1)(report)() == "checkers.an_assignment"
    report.__module__ = "__main__"  # a check defined outside the package: every assignment's pins apply
    assert check_function(1)(report)() is None


def test_two_assignments_pinning_one_class_differently_are_refused(monkeypatch):
    pins = {"first": {"Layer": dict(embed_dim=modules.REQUIRED)}, "second": {"Layer": dict(dim=modules.REQUIRED)}}
    monkeypatch.setattr(modules, "_own_pinned", lambda package: pins.get(package.rpartition(".")[2], {}))
    monkeypatch.setattr(modules.pkgutil, "iter_modules",
                        lambda path: [type("Found", (), dict(name=name, ispkg=True)) for name in pins])
    modules.pinned.cache_clear()
    try:
        with pytest.raises(ValueError, match="Layer is pinned differently"):
            modules.pinned()
    finally:
        monkeypatch.undo()
        modules.pinned.cache_clear()
