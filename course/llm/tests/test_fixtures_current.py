"""The committed llm fixtures are what `python -m course.llm.fixtures` builds from the notebook now. While llm is not
in course.toml, tests/test_packaging.py's staleness test does not see it; delete this file when llm is registered."""
import subprocess
import sys
from pathlib import Path

import torch

from same_values import differences

ROOT = Path(__file__).resolve().parents[3]


def test_fixtures_are_current(tmp_path):
    subprocess.run([sys.executable, "-m", "course.llm.fixtures", str(tmp_path)], cwd=ROOT, check=True,
                   capture_output=True)
    committed = sorted((ROOT / "checkers" / "llm" / "fixtures").glob("*.pt"))
    assert [path.name for path in committed] == sorted(path.name for path in tmp_path.glob("*.pt"))
    for path in committed:
        stale = differences(torch.load(path, weights_only=True), torch.load(tmp_path / path.name, weights_only=True))
        assert not stale, f"llm/{path.name} is stale: run `python -m course.llm.fixtures` and commit ({stale[:3]})"
