"""Every named known mistake carries a diagnosis id: its sentence is a Diagnosis of its assignment's checkers, and
an assignment's slugs each name one sentence (cheap: nothing is planted)."""
import importlib

import pytest

from checkers._core import Diagnosis, catalogue, slug_of
from course.registry import assignments
from course.slices import slice_of

pytestmark = pytest.mark.fast

NAMES = [assignment.name for assignment in assignments()]


def _diagnoses(name):
    """(module name, constant name, Diagnosis) of the assignment's checker modules and the shared checkers/_*.py."""
    catalogue(f"checkers.{name}")  # imports every module of the package
    modules = [module for key, module in list(importlib.sys.modules.items())
               if key.startswith(f"checkers.{name}.") or (key.startswith("checkers._") and key.count(".") == 1)]
    return [(module.__name__, key, value) for module in modules for key, value in vars(module).items()
            if isinstance(value, Diagnosis)]


@pytest.mark.parametrize("name", NAMES)
def test_every_named_mistake_has_a_diagnosis_id(name):
    known = catalogue(f"checkers.{name}")
    missing = [mutant.name for mutant in slice_of(name).mistakes.MUTANTS
               if mutant.diagnosis and slug_of(mutant.diagnosis) is None
               and not any(str(mutant.diagnosis) in sentence for sentence in known.values())]
    assert not missing, missing


@pytest.mark.parametrize("name", NAMES)
def test_each_slug_names_one_sentence(name):
    sentences = {}
    for module, constant, diagnosis in _diagnoses(name):
        sentences.setdefault(diagnosis.slug, {}).setdefault(str(diagnosis), f"{module}.{constant}")
    shared = {slug: places for slug, places in sentences.items() if len(places) > 1}
    assert not shared, shared
