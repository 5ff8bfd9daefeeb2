"""A few lines of Python run in the grading sandbox over an assignment's runtime, as an unprivileged probe would run
them: for tests of what a notebook can read there (course/<name>/tests/test_sandbox_scored_data.py).

Needs root and bubblewrap (`needs_bwrap` skips otherwise; .ci/run installs bubblewrap when it runs as root).
"""
import os
import subprocess
import sys

import pytest

from grading.cases import stand_ins
from grading.sandbox import sandbox
from grading.sandbox.runtime import prepare_runtime

BWRAP = sandbox.bwrap_version()
needs_bwrap = pytest.mark.skipif(
    BWRAP is None, reason="the sandbox is not testable here: needs root and bubblewrap (`apt-get install bubblewrap`; "
                          ".ci/run installs it when it runs as root)")
BIGGEST = 64 << 20  # files larger than this are not searched (torch's and LLVM's shared libraries)
# Every regular file of the given folders, read whole, that holds one of the needles or has one of the digests
SEARCH = '''import hashlib, os, sys
needles = [bytes.fromhex(needle) for needle in sys.argv[1].split(",") if needle]
digests, found, searched = set(sys.argv[2].split(",")), [], 0
for top in sys.argv[4:]:
    for folder, _, names in os.walk(top):
        for name in names:
            path = os.path.join(folder, name)
            try:
                if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > int(sys.argv[3]):
                    continue
                with open(path, "rb") as file:
                    data = file.read()
            except OSError:
                continue
            searched += 1
            if hashlib.md5(data).hexdigest() in digests or any(needle in data for needle in needles):
                found.append(path)
print(searched)
print("\\n".join(found))
'''


def sandboxed_runtime(name, folder):
    """A runtime for the assignment called name with its stand-ins (no cases), in folder."""
    hidden = stand_ins(name, folder / "stand-ins")
    return prepare_runtime(folder / "runtime", {}, [], hidden)


def run_sandboxed(runtime, scratch, argv, timeout=600):
    """argv (after the interpreter) run by the probe's Python in the sandbox over runtime, as a leased slot's uid,
    with the runtime on sys.path (cwd: the scratch's work folder); the CompletedProcess, text."""
    (slot,), locks = sandbox.lease_slots(1)
    try:
        for folder in ("input", "work"):
            (scratch / folder).mkdir(parents=True, exist_ok=True)
        os.chown(scratch / "work", sandbox.FIRST_UID + slot, sandbox.FIRST_UID + slot)
        arguments, setpriv = sandbox.bwrap_arguments(scratch, runtime)
        drop = [setpriv, f"--reuid={sandbox.FIRST_UID + slot}", f"--regid={sandbox.FIRST_UID + slot}",
                "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        environment = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(sandbox.INSIDE / "runtime"), "HOME": "/tmp",
                       "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}
        return subprocess.run([*arguments, "--", *drop, sys.executable, *argv], capture_output=True, text=True,
                              timeout=timeout, env=environment)
    finally:
        for lock in locks:
            lock.close()


def files_holding(runtime, scratch, needles, digests):
    """(how many files were searched, the paths inside the sandbox of those holding a needle (bytes) or with an MD5
    among digests): every file under the Python installation, the system libraries and the runtime."""
    folders = sandbox.python_folders() + sandbox.system_folders() + [str(sandbox.INSIDE / "runtime")]
    done = run_sandboxed(runtime, scratch, ["-c", SEARCH, ",".join(needle.hex() for needle in needles),
                                            ",".join(digests), str(BIGGEST), *folders])
    assert done.returncode == 0, done.stderr[-3000:]
    searched, *found = done.stdout.strip().splitlines()
    return int(searched), [path for path in found if path]
