"""How a probe is started: inside Linux namespaces as an unprivileged user, or (degraded) as a plain process.

"namespace" (the default when running as root with util-linux `unshare`, as in CI and on the
course machines): a private mount, PID, network, IPC and UTS namespace; the course, the checkout,
/tmp, /root and /home are empty there; the probe runs as its own uid with no capabilities, no
network and resource limits (grading/jail.py). "none" (anywhere else): a plain child process in a
scratch folder with a scrubbed environment; student code can then read whatever this user can.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

JAIL = Path(__file__).with_name("jail.py")
FIRST_UID = 61000  # one uid per concurrent probe, so no probe can touch another's files or processes
LIMITS = {"NPROC": 512, "FSIZE": 1 << 30, "NOFILE": 1024, "CORE": 0}
UNSHARE = ["unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--net", "--ipc", "--uts"]


class SandboxUnavailable(Exception):
    """The requested isolation cannot be had on this machine; the message says why."""


def namespaces_work():
    """Whether `unshare` can create the namespaces the jail needs (root, util-linux, a kernel that allows it)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(UNSHARE + ["true"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def choose(requested="auto"):
    """(mode, message): the isolation to use; message is empty unless grading runs degraded."""
    if requested == "none":
        return "none", "off (--sandbox none): student code runs unisolated, as this user"
    if namespaces_work():
        return "namespace", ""
    why = "needs root and util-linux `unshare`" if os.geteuid() != 0 or not shutil.which("unshare") else \
        "`unshare` is not permitted here (a container without CAP_SYS_ADMIN?)"
    if requested == "namespace":
        raise SandboxUnavailable(f"no namespace sandbox: it {why}")
    return "none", (f"WARNING: no sandbox ({why}): student code runs as this user and can read what it can "
                    "read, the gradebook included; grade untrusted submissions as root on Linux, or in a container")


def hidden_folders(course_root):
    """What the probe must not see: the course, this checkout, temporary folders, home folders."""
    folders = {course_root, Path(__file__).resolve().parent.parent, Path(tempfile.gettempdir()), Path("/tmp"),
               Path("/var/tmp"), Path("/dev/shm"), Path("/root"), Path("/home")}
    return sorted({str(Path(folder).resolve()) for folder in folders})


def python_folders():
    """The Python installation the probe runs on: the virtual environment and the interpreter it is based on."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(os.path.realpath(sys.executable)).parent.parent)}
    return sorted({os.path.realpath(folder) for folder in folders})


def probe_environment(scratch, threads):
    """The probe's whole environment: nothing inherited from the instructor's shell."""
    home = str(scratch / "home")
    return {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": str(scratch / "tmp"), "LANG": "C.UTF-8",
            "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(scratch / "home" / "mpl"), "IPYTHONDIR": home + "/.ipython",
            "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "GRADING_THREADS": str(threads),
            "TQDM_DISABLE": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}


def command(mode, scratch, runtime, course_root, slot, threads):
    """(argv, env, cwd) that start the probe of one submission in its scratch folder.

    Args:
        mode: "namespace" or "none" (see choose).
        scratch: the submission's scratch folder (input/, out/, work/, home/, tmp/).
        runtime: the folder with probe.py, recipes.py, cases.pt, checkers/ and course_lib/.
        course_root: the course folder, hidden from the probe.
        slot: which concurrent probe this is (0 .. jobs-1), for its own uid.
        threads: torch threads for the probe.
    """
    probe = [sys.executable, "-I", str(runtime / "probe.py"), str(scratch)]
    env = probe_environment(scratch, threads)
    if mode == "none":
        return probe, env, str(scratch / "work")
    spec = {"hide": hidden_folders(course_root), "keep_ro": python_folders() + [str(runtime)],
            "keep_rw": [str(scratch)], "uid": FIRST_UID + slot, "cwd": str(scratch / "work"), "argv": probe,
            "env": env, "limits": LIMITS}
    return UNSHARE + ["--", os.path.realpath(sys.executable), "-I", str(JAIL), json.dumps(spec)], {}, "/"


def prepare_scratch(scratch, mode, slot, settings):
    """Fresh input/, out/, work/, home/, tmp/ folders; the writable ones owned by the probe's uid.

    Args:
        settings: a folder copied to home/mpl (matplotlib's font cache, built once per grading run).
    """
    if scratch.exists():
        shutil.rmtree(scratch)
    for name in ("input", "out", "work", "tmp"):
        (scratch / name).mkdir(parents=True)
    shutil.copytree(settings, scratch / "home" / "mpl")
    if mode == "namespace":
        uid = FIRST_UID + slot
        for folder, _, files in os.walk(scratch):
            if not folder.endswith("input") and folder != str(scratch):
                os.chown(folder, uid, uid)
                for name in files:
                    os.chown(os.path.join(folder, name), uid, uid)
        for name in ("out", "work", "home", "tmp"):
            os.chmod(scratch / name, 0o700)
        os.chmod(scratch, 0o755)
