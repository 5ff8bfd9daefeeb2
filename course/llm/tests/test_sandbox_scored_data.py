"""Inside the grading sandbox the held-out help topics do not exist (issue 42): by the course's functions, by
pydoc_data, by the installed files' paths (source and compiled), or in any other file of the installation or the
runtime.

Run as the probe runs (bubblewrap, an unprivileged uid) over an llm runtime with its stand-ins; needs root and
bubblewrap.
"""
import hashlib
import json
import re
import sys
from pathlib import Path

import pydoc_data
import pytest

from course.llm.cases.scored_data import stand_in_topics
from course_lib.llm import help_topics, is_held_out, split_topics
from sandboxed import files_holding, needs_bwrap, run_sandboxed, sandboxed_runtime

pytestmark = [pytest.mark.full, needs_bwrap]

INSTALLED = Path(pydoc_data.__file__).parent
ROUTES = '''import json, os, pydoc_data.topics
from course_lib.llm import split_topics
folder = os.path.dirname(pydoc_data.topics.__file__)
print(json.dumps({"course_lib": split_topics()[1], "pydoc_data": pydoc_data.topics.topics,
                  "files": {name: open(os.path.join(folder, name), "rb").read().hex()
                            for name in ("topics.py",)}}))
'''


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    return sandboxed_runtime("llm", tmp_path_factory.mktemp("llm"))


def test_every_route_to_the_held_out_topics_finds_the_stand_ins(runtime, tmp_path):
    done = run_sandboxed(runtime, tmp_path, ["-c", ROUTES])
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    shown = stand_in_topics()["shown"]
    assert seen["course_lib"] == split_topics(shown)[1] and seen["pydoc_data"] == shown
    assert bytes.fromhex(seen["files"]["topics.py"]) != (INSTALLED / "topics.py").read_bytes()


def test_no_file_in_the_sandbox_holds_the_held_out_topics(runtime, tmp_path):
    """The longest run of every held-out topic that no training topic holds and a Python source writes as it is (no
    quote, no backslash), and the installed topics.py and its compiled copies, are nowhere."""
    training, needles = split_topics()[0], []
    for name, text in help_topics().items():
        runs = [run for line in text.splitlines() for run in re.split(r"['\"\\\\]", line)
                if len(run) >= 30 and run not in training]
        if is_held_out(name) and runs:
            needles.append(max(runs, key=len).encode())
    digests = [hashlib.md5(path.read_bytes()).hexdigest()
               for path in [INSTALLED / "topics.py", *(INSTALLED / "__pycache__").glob("topics.*.pyc")]]
    control = max((line for line in training.splitlines() if not set("'\"\\\\") & set(line)), key=len).encode()
    searched, found = files_holding(runtime, tmp_path, needles + [control], digests)
    assert searched > 10_000 and len(needles) >= 10 and len(digests) >= 2
    stand_ins = {str(folder / name) for folder in (INSTALLED, Path("/sandbox/runtime/covers/0/pydoc_data"))
                 for name in ("topics.py", f"__pycache__/topics.{sys.implementation.cache_tag}.pyc")}
    assert set(found) == stand_ins, found  # only the control, a training topic's line: in the stand-in and its pyc
