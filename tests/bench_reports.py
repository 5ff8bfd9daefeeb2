"""A quick bench run for an assignment's own bench tests (course/<a>/tests/test_bench.py), and what every report
holds whatever the assignment."""
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_quick_bench(assignment, out):
    """Run an assignment's bench with --quick in a fresh process, as `make bench` would: (report, out, stdout)."""
    done = subprocess.run([sys.executable, "-m", "tools.bench", "--assignment", assignment, "--quick", "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads((out / "bench.json").read_text()), out, done.stdout


def numbers(tree):
    """Every int or float in a nested JSON structure (bools excluded)."""
    if isinstance(tree, dict):
        return [n for value in tree.values() for n in numbers(value)]
    if isinstance(tree, list):
        return [n for value in tree for n in numbers(value)]
    return [tree] if isinstance(tree, (int, float)) and not isinstance(tree, bool) else []


def assert_whole_report(name, quick_report, sections):
    """The quick report of assignment name has every section, finite numbers, its title once, existing plots and one
    PASS or MISS line per goal that has a verdict."""
    report, _, stdout = quick_report
    assert all(section in report for section in sections), sorted(report)
    assert report["meta"]["assignment"] == name and report["meta"]["quick"] is True
    assert report["meta"]["wall_seconds"] > 0
    assert stdout.count(f"Measured performance of {name}") == 1 and "QUICK smoke run" in stdout
    assert all(math.isfinite(n) for n in numbers(report))
    for path in report["meta"]["plots"]:
        assert Path(path).stat().st_size > 0
    assert stdout.count("| PASS") + stdout.count("| MISS") == sum(g["passed"] is not None for g in report["goals"])
