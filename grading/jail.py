"""Inside fresh namespaces, as root: hide the course, drop to an unprivileged user, run the probe.

Usage (by grading/sandbox.py): unshare --mount --pid --fork --mount-proc --net ... python -I jail.py SPEC

SPEC is JSON: {"hide": [dirs], "keep_ro": [dirs], "keep_rw": [dirs], "uid": int, "cwd": dir,
"argv": [...], "env": {...}, "limits": {"NPROC": n, ...}}. Every hidden directory becomes an empty
tmpfs in this mount namespace only (the course, the checkout, /tmp, /root, /home, ...); the kept
directories (the Python installation, the probe's runtime and its scratch folder) are bound back
into place, read-only except the scratch. Then privileges are dropped for good and the probe is
exec'd: it can read no reference, hidden test, gradebook or other submission.
"""
import ctypes
import json
import os
import resource
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
LIBC = ctypes.CDLL(None, use_errno=True)


def mount(source, target, fstype, flags, data=None):
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    if LIBC.mount(encode(source), encode(target), encode(fstype), flags, encode(data)) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"mount on {target}: {os.strerror(number)}")


def inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def hide(folders):
    """An empty tmpfs over each folder (nested ones are hidden with their parent)."""
    for folder in sorted(set(folders)):
        if os.path.isdir(folder) and not any(inside(folder, other) for other in folders if other != folder):
            mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=256m")


def bind_back(handles, read_only):
    """Bind each kept folder (opened before hiding) to its own path again."""
    for path, handle in handles.items():
        os.makedirs(path, exist_ok=True)
        mount(f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC)
        if path in read_only:
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(handle)


def drop_privileges(uid, limits):
    """Resource limits, then the probe's own uid and gid with no groups, capabilities or way back."""
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # all three ids non-zero: the kernel clears every capability
    if LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def main(spec):
    """Hide, bind back, drop privileges, exec the probe (see the module docstring for SPEC)."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below leaks back to the host's mounts
    kept = sorted(spec["keep_ro"] + spec["keep_rw"], key=len)  # parents before the folders inside them
    handles = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in kept
               if any(inside(path, folder) for folder in spec["hide"])}
    hide(spec["hide"])
    bind_back(handles, set(spec["keep_ro"]))
    drop_privileges(spec["uid"], spec["limits"])
    os.chdir(spec["cwd"])
    os.execve(spec["argv"][0], spec["argv"], spec["env"])


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
