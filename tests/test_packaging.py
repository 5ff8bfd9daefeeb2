"""Set-up files agree with each other: one repository URL, one pinned dependency list."""
import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pins(text):
    return sorted(re.findall(r"^\s*-?\s*([A-Za-z0-9_.\-]+==[^\s#]+)", text, flags=re.M))


def test_environment_yml_mirrors_requirements():
    requirements = pins((ROOT / "requirements.txt").read_text())
    assert "torch==2.13.0" in requirements
    assert pins((ROOT / "environment.yml").read_text()) == requirements


def test_package_keeps_a_loose_torch_range_for_colab():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_requirement = next(d for d in project["dependencies"] if d.startswith("torch"))
    assert "==" not in torch_requirement


def test_one_repository_url_everywhere():
    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    for notebook in ("solutions", "notebooks"):
        cells = json.loads((ROOT / notebook / "transformer" / "transformer.ipynb").read_text())["cells"]
        install = next("".join(c["source"]) for c in cells if "COURSE_REPO =" in "".join(c["source"]))
        assert f'COURSE_REPO = "{url}"' in install and "google.colab" in install
    readme = (ROOT / "README.md").read_text()
    slug = url.removeprefix("https://github.com/")
    assert f"colab.research.google.com/github/{slug}/blob/main/notebooks/transformer/transformer.ipynb" in readme


def test_fixtures_are_reproducible(tmp_path):
    import subprocess
    import sys
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_fixtures.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True)
    committed = sorted((ROOT / "checkers" / "fixtures").glob("*.pt"))
    assert committed and [p.name for p in committed] == sorted(p.name for p in tmp_path.glob("*.pt"))
    for path in committed:
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), f"{path.name} is stale: run `make fixtures`"


def test_readme_figures_render(tmp_path):
    import subprocess
    import sys
    subprocess.run([sys.executable, "-m", "tools.make_assets", "--out", str(tmp_path)], cwd=ROOT, check=True,
                   capture_output=True)
    for name in ("positional_encoding.png", "lr_schedule.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (ROOT / "assets" / name).exists(), "run `make assets` and commit assets/"
