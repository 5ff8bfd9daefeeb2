"""The two tiers partition the tests: every test `make test-all` collects carries exactly one tier marker (conftest.py's
TIERS), so `make test` (the fast tier) and the rest of `make test-all` lose none and share none."""
import json
import os
import re
import subprocess
import sys

import pytest

import conftest
import tier_listing
from course.registry import assignments
from course_paths import ROOT

pytestmark = pytest.mark.fast


def make_paths():
    """What `make test` and `make test-all` collect: tests/, course/ and every registered reference notebook."""
    return ["tests", "course", *(f"solutions/{a.name}/{a.name}.ipynb" for a in assignments())]


def misplaced(collected):
    """{node id: its tiers} for every test in no tier or in both."""
    return {node: tiers for node, tiers in collected.items() if len(tiers) != 1}


def collected_by_make(config):
    """{node id: tiers} of every test the Makefile's paths hold: this session's record when it collected them all (as
    `make test` and `make test-all` do), else a collection of its own in a subprocess (this file run alone)."""
    record = config.stash.get(conftest.COLLECTED, {})
    if covers(record, make_paths()):
        return record
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "tier_listing", "--collect-only", "-q", "--nbval-lax",
                          *make_paths()], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT / "tests")),
                         capture_output=True, text=True, timeout=600)
    line = next((line for line in run.stdout.splitlines() if line.startswith("TIERS ")), None)
    assert run.returncode == 0 and line, run.stdout[-2000:] + run.stderr[-2000:]
    return json.loads(line[len("TIERS "):])


def covers(record, paths):
    """Whether a session's record holds tests of every path the Makefile names."""
    return all(any(node == path or node.startswith(path.rstrip("/") + "/") or node.startswith(path + "::")
                   for node in record) for path in paths)


def test_every_test_is_in_exactly_one_tier(request):
    """None missing, none in both: what `make test` leaves out, `make test-all` runs, and nothing twice."""
    collected = collected_by_make(request.config)
    wrong = misplaced(collected)
    assert not wrong, f"{len(wrong)} tests in no tier or in both (mark each `fast` or `full`): " \
        f"{dict(list(wrong.items())[:20])}"
    tiers = {tier: sum(1 for found in collected.values() if found == [tier]) for tier in conftest.TIERS}
    print(f"\n{len(collected)} tests: {tiers}")
    assert all(tiers.values()), tiers


def test_the_listing_plugin_knows_the_tiers():
    assert tier_listing.TIERS == conftest.TIERS


def test_the_partition_check_finds_a_test_in_no_tier_and_one_in_both():
    assert misplaced({"a": ["fast"], "b": [], "c": ["fast", "full"], "d": ["full"]}) == {"b": [], "c": ["fast", "full"]}


def test_make_test_selects_the_fast_tier_and_make_test_all_every_test():
    """The Makefile's two targets: `-m fast` in the one, no selection in the other, over the same paths."""
    makefile = (ROOT / "Makefile").read_text()
    recipes = {target: re.search(rf"^{target}:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
               for target in ("test", "test-all")}
    pytest_lines = {target: re.findall(r"\$\(BIN\)/pytest [^\n]*", recipe) for target, recipe in recipes.items()}
    assert pytest_lines == {"test": ["$(BIN)/pytest -q -m fast $(TEST_PATHS)"],
                            "test-all": ["$(BIN)/pytest -q $(TEST_PATHS)"]}, pytest_lines
