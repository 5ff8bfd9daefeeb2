"""How a probe is started: in a bubblewrap sandbox as an unprivileged user, or (only when asked) unisolated.

"bwrap" (the default; needs root and bubblewrap, Debian package `bubblewrap`): an empty root in
which only the Python installation, the probe's runtime and the submission's scratch folder are
mounted (read-only but for the scratch); a minimal /dev, a /proc of its own PID namespace, small
private /tmp and /run; no network, IPC or UTS of the host; a new session (no TIOCSTI into the
grader's terminal). The end of the sandbox's PID namespace kills every process in it, and it dies
with the grader (--die-with-parent). Inside, setpriv drops to the job slot's own uid with no groups,
no capabilities and no_new_privs. Outside, the scratch folder is a size-capped tmpfs, memory is
capped by a cgroup (else RLIMIT_AS), CPU time is counted by a cgroup (else from /proc, cpuclock.py),
and RLIMIT_CPU, NPROC, FSIZE, NOFILE and CORE are set.
"none" (only with --sandbox none): a plain child process; student code can read what this user can.
"""
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import cgroups, covers, cpuclock

FIRST_UID = 62000  # one uid per job slot, so no probe can touch another's files or processes
SLOTS = 1000  # uids FIRST_UID .. FIRST_UID + SLOTS - 1, shared by every grading run on this machine
LOCKS = Path("/run/lock/course-grading")  # one lock file per slot, whichever checkout or assignment grades
GIB = 1 << 30
INSIDE = Path("/sandbox")  # where the runtime and the scratch folder appear inside the sandbox
INSTALL = "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`) " \
          "and run `make grade` as root (or in a container started with CAP_SYS_ADMIN)"


class SandboxUnavailable(Exception):
    """The requested isolation cannot be had on this machine; the message says why and what to install."""


@dataclass
class Sandbox:
    """The isolation chosen for a grading run, and what it found on this machine."""

    mode: str  # "bwrap" or "none"
    memory: int = 4 * GIB  # bytes per probe
    scratch: int = GIB  # bytes of the scratch tmpfs
    cpu: int = 1500  # CPU seconds per probe process (the watchdog's wall clock normally ends it first)
    cgroup: tuple = (None, None)  # (version, folder) of this process's memory cgroup, when usable
    cpuacct: tuple = (None, None)  # (version, folder) of the cgroup under which a probe's CPU time is counted
    found: list = field(default_factory=list)  # what `make grade` prints about containment
    warning: str = ""

    def limits(self):
        """prlimit options for the probe (RLIMIT_AS only when no cgroup can cap memory).

        RLIMIT_AS counts address space, not memory: the probe maps about 0.7 GiB it never touches after
        importing torch, IPython and matplotlib, 0.9 GiB after training (measured, one thread), hence the
        cap plus 2 GiB. It holds per process, so a notebook that forks can use it once per process.
        """
        options = [f"--cpu={self.cpu}", "--nproc=512", f"--fsize={self.scratch}", "--nofile=1024", "--core=0"]
        return options + ([] if self.cgroup[0] else [f"--as={self.memory + 2 * GIB}"])


TRIALS = 3  # a busy machine can fail one trial (a mount short of memory): a run is refused only if all fail


def bwrap_trial():
    """'' if bubblewrap made the sandbox's namespaces and mounts once, else what it said."""
    try:
        trial = subprocess.run(["bwrap", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc",
                                "--dev", "/dev", "--size", "1048576", "--perms", "1777", "--tmpfs", "/tmp",
                                "--die-with-parent", "--new-session", "true"], capture_output=True, text=True,
                               timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return str(error)
    return "" if trial.returncode == 0 else trial.stderr.strip()[:300] or f"exit status {trial.returncode}"


def bwrap_version():
    """bubblewrap's version if it runs here as this user with the namespaces the sandbox needs, else None."""
    if shutil.which("bwrap") is None or os.geteuid() != 0:
        return None
    for attempt in range(TRIALS):
        if not bwrap_trial():
            break
        if attempt + 1 < TRIALS:
            time.sleep(1.0 + attempt)
    else:
        return None
    try:
        version = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return version.strip() or "bubblewrap"


def choose(requested="auto", memory_gib=4.0, scratch_gib=1.0):
    """The Sandbox for this run; raises SandboxUnavailable when containment was asked for and cannot be had."""
    if requested == "none":
        warning = ("WARNING: --sandbox none: student code runs UNISOLATED, as this user, with no memory, disk or "
                   "process limits: it can read the gradebook, the reference solutions and everything this user "
                   "can, and leave processes behind. Use it only for notebooks you trust.")
        return Sandbox("none", found=["containment: none (--sandbox none)"], warning=warning)
    version = bwrap_version()
    if version is None:
        why = "bubblewrap (`bwrap`) is not installed" if shutil.which("bwrap") is None else \
            "grading is not running as root" if os.geteuid() != 0 else \
            f"bubblewrap cannot create namespaces here (a container without CAP_SYS_ADMIN?), or is older than " \
            f"0.8.0 (no --size); {TRIALS} trials failed, and one more said: {bwrap_trial() or 'nothing (it ran)'}"
        raise SandboxUnavailable(f"no sandbox: {why}. To grade untrusted notebooks, {INSTALL}. To grade without "
                                 "isolation anyway (trusted notebooks only), pass --sandbox none "
                                 "(make grade SANDBOX=none).")
    box = Sandbox("bwrap", memory=int(memory_gib * GIB), scratch=int(scratch_gib * GIB))
    box.cgroup = cgroups.own_group()
    cap, why = cgroups.try_cap(f"grading-check-{os.getpid()}", box.memory) if box.cgroup[0] else (None, "")
    if cap is None:
        box.cgroup = (None, None)
        why = why or "no memory cgroup controller is mounted for this process"
    else:
        cap.remove()
    box.cpuacct = cpu_accounting(box)
    box.found = [f"containment: {version} at {shutil.which('bwrap')}: own mount, PID, network, IPC and UTS "
                 "namespaces; an unprivileged uid per job",
                 f"memory: {memory_gib:g} GiB per submission, " + (
                     f"by a cgroup {box.cgroup[0]} memory group under {box.cgroup[1]}" if box.cgroup[0] else
                     f"by RLIMIT_AS only ({why}; mount the memory cgroup controller for an exact cap)"),
                 f"disk: {scratch_gib:g} GiB tmpfs scratch per submission, deleted once read; "
                 f"CPU: {box.cpu} s per process",
                 "time limits: CPU time, counted " + (
                     f"by a cgroup {box.cpuacct[0]} group under {box.cpuacct[1]}" if box.cpuacct[0] else
                     "from /proc/<pid>/stat of the sandbox's processes (no cpuacct cgroup to use)") +
                 f"; a wall-clock backstop at {cpuclock.BACKSTOP:g} times a cell's limit"]
    return box


def cpu_accounting(box):
    """(version, folder) under which a group counting a probe's CPU time can be made and joined, or (None, None).

    On cgroup v2 the memory cap's own group counts CPU time too (a process is in one v2 group only).
    """
    if box.cgroup[0] == "v2":
        return box.cgroup
    account, _ = cgroups.try_account(f"grading-check-cpu-{os.getpid()}")
    if account is None:
        return None, None
    try:
        joined = subprocess.run(["/bin/sh", "-c", 'echo $$ > "$0"', str(account.procs)], capture_output=True,
                                timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        joined = False
    counts = account.cpu_seconds() is not None
    account.remove()
    return (account.version, account.folder.parent) if joined and counts else (None, None)


def python_folders():
    """The Python installation the probe runs on: the virtual environment and the interpreter it is based on.

    A prefix of its own (a venv, pyenv, conda) is mounted whole; a system-wide one (/usr, /usr/local) only
    as its standard library and the interpreter, so nothing else installed there shows.
    """
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(os.path.realpath(sys.executable)).parent.parent)}
    kept = set()
    for folder in {os.path.realpath(folder) for folder in folders}:
        if folder in ("/", "/usr", "/usr/local"):
            paths = sysconfig.get_paths()
            kept |= {paths["stdlib"], paths["platstdlib"], os.path.realpath(sys.executable)}
        else:
            kept.add(folder)
    return sorted(os.path.realpath(folder) for folder in kept if os.path.exists(folder))


def system_folders():
    """The shared libraries the interpreter and torch load, and setpriv: the only system files mounted."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    folders = [f"/usr/lib/{multiarch}", f"/lib/{multiarch}", "/usr/lib64", "/lib64"]
    seen, kept = set(), []
    for folder in folders:
        real = os.path.realpath(folder)
        if multiarch and os.path.isdir(real) and real not in seen:
            seen.add(real)
            kept.append(real)
    return kept


def probe_environment(scratch, threads):
    """The probe's whole environment: nothing inherited from the instructor's shell."""
    home = str(scratch / "home")
    return {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": str(scratch / "tmp"), "LANG": "C.UTF-8",
            "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(scratch / "home" / "mpl"), "IPYTHONDIR": home + "/.ipython",
            "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "GRADING_THREADS": str(threads),
            "TQDM_DISABLE": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}


def ancestors(paths):
    """Every folder above the mount points, parents first, to be created world-readable in the empty root."""
    above = {str(parent) for path in paths for parent in Path(path).parents if str(parent) != "/"}
    return sorted(above - set(paths), key=lambda path: (path.count("/"), path))


def bwrap_arguments(scratch, runtime):
    """bwrap's options: the allow-list root, private /tmp and /run, the namespaces.

    Files of the installation that hold an assignment's scored data are covered by stand-ins (covers.py). The Python
    installation keeps its own paths (a virtual environment finds its base by them); the
    runtime and the scratch folder appear at INSIDE/runtime and INSIDE/scratch, so no course path shows.
    """
    setpriv = os.path.realpath(shutil.which("setpriv") or "/usr/bin/setpriv")
    read_only = system_folders() + python_folders() + [setpriv]
    links = [("usr/lib64", "/lib64"), ("usr/lib", "/lib"), ("usr/bin", "/bin")]
    argv = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--hostname", "sandbox", "--dev", "/dev", "--proc", "/proc",
            "--size", str(64 << 20), "--perms", "1777", "--tmpfs", "/tmp",
            "--size", str(16 << 20), "--perms", "0755", "--tmpfs", "/run"]
    for path in ancestors(read_only + [str(INSIDE / "scratch")]):
        if not any(path == link or path.startswith(link + "/") for _, link in links):
            argv += ["--perms", "0755", "--dir", path]
    for path in sorted(read_only, key=lambda p: p.count("/")):
        argv += ["--ro-bind", path, path]
    argv += covers.cover_arguments(runtime, read_only)  # over the installation: the scored data's stand-ins
    for target, link in links:
        if not any(path == link or path.startswith(link + "/") for path in read_only):
            argv += ["--symlink", target, link]
    return argv + ["--ro-bind", str(runtime), str(INSIDE / "runtime"), "--bind", str(scratch), str(INSIDE / "scratch"),
                   "--ro-bind", str(scratch / "input"), str(INSIDE / "scratch" / "input"),
                   "--chdir", str(INSIDE / "scratch" / "work")], setpriv


def command(box, scratch, runtime, slot, threads, cgroup_procs=()):
    """(argv, env, cwd) that start the probe of one submission in its scratch folder.

    Args:
        box: the Sandbox (see choose).
        scratch: the submission's scratch folder (input/, out/, work/, home/, tmp/).
        runtime: the folder with probe.py, recipes.py, cases.pt, checkers/ and course_lib/.
        slot: which concurrent probe this is (0 .. jobs-1), for its own uid.
        threads: torch threads for the probe.
        cgroup_procs: the cgroup.procs files of the memory and CPU groups, joined before anything else starts.
    """
    if box.mode == "none":
        probe = [sys.executable, "-I", str(runtime / "probe.py"), str(scratch)]
        return joining(cgroup_procs, probe), probe_environment(scratch, threads), str(scratch / "work")
    uid = FIRST_UID + slot
    argv, setpriv = bwrap_arguments(scratch, runtime)
    drop = [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]
    probe = [sys.executable, "-I", str(INSIDE / "runtime" / "probe.py"), str(INSIDE / "scratch")]
    argv = ["prlimit", *box.limits(), "--", *argv, "--", *drop, *probe]
    return joining(cgroup_procs, argv), probe_environment(INSIDE / "scratch", threads), str(scratch)


def joining(cgroup_procs, argv):
    """argv started by a shell that first joins each group: it becomes prlimit, which becomes bwrap, all inside."""
    if not cgroup_procs:
        return argv
    join = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", join, "join", *map(str, cgroup_procs), "--", *argv]


def is_mount(path):
    """Whether path is a mount point (read from /proc/self/mountinfo, which also sees tmpfs over tmpfs)."""
    target = os.path.realpath(path).replace(" ", "\\040")
    try:
        return any(line.split()[4] == target for line in Path("/proc/self/mountinfo").read_text().splitlines())
    except OSError:
        return False


def release_scratch(scratch):
    """Delete a scratch folder (unmounting its tmpfs first), whatever a probe left in it."""
    while is_mount(scratch):
        if subprocess.run(["umount", "-l", str(scratch)], capture_output=True).returncode != 0:
            break
    shutil.rmtree(scratch, ignore_errors=True)


def prepare_scratch(scratch, box, slot, settings):
    """Fresh input/, out/, work/, home/, tmp/ folders on a size-capped tmpfs; the writable ones the probe's uid's.

    Args:
        settings: a folder copied to home/mpl (matplotlib's font cache, built once per grading run).
    """
    release_scratch(scratch)
    scratch.mkdir(parents=True)
    if box.mode == "bwrap":
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={box.scratch},mode=0755,nosuid,nodev", "tmpfs",
                        str(scratch)], check=True, capture_output=True)
    (scratch / "input").mkdir()
    (scratch / "out").mkdir()
    give_to_probe(scratch / "out", box, slot)
    reset_scratch(scratch, box, slot, settings)


def reset_scratch(scratch, box, slot, settings):
    """Fresh work/, home/ and tmp/, and nothing in out/ but the probe's own files (also before a restart).

    What a stopped cell wrote (a disk filled to its cap, a FIFO, links) must not break the next attempt;
    the cells that run again write their files again.
    """
    for name in ("work", "home", "tmp"):
        shutil.rmtree(scratch / name, ignore_errors=True)
        if name == "home":
            shutil.copytree(settings, scratch / "home" / "mpl")
        else:
            (scratch / name).mkdir()
        give_to_probe(scratch / name, box, slot)
    for entry in os.scandir(scratch / "out"):
        own = re.fullmatch(r"(cell_\d+\.json|task_\d+\.pt)", entry.name)
        if not own or not entry.is_file(follow_symlinks=False):
            shutil.rmtree(entry.path) if entry.is_dir(follow_symlinks=False) else os.unlink(entry.path)


def give_to_probe(folder, box, slot):
    """Make a folder and everything in it the probe uid's own, private to it (bwrap mode)."""
    if box.mode != "bwrap":
        return
    uid = FIRST_UID + slot
    for path, _, files in os.walk(folder):
        os.chown(path, uid, uid)
        for name in files:
            os.chown(os.path.join(path, name), uid, uid, follow_symlinks=False)
    os.chmod(folder, 0o700)


def scratch_usage(scratch):
    """Bytes used on the scratch folder's own tmpfs (0 when it has none: --sandbox none)."""
    if not is_mount(scratch):
        return 0
    try:
        stats = os.statvfs(scratch)
    except OSError:
        return 0
    return (stats.f_blocks - stats.f_bfree) * stats.f_frsize


def processes_of(uid, alive_only=False):
    """Pids of every process whose real or effective uid is uid (alive_only: not already exiting or killed)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
                fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            info = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            exiting = fields[0] in "ZXx" or int(fields[6]) & 0x4 or \
                (int(info.get("ShdPnd", "0"), 16) | int(info.get("SigPnd", "0"), 16)) & (1 << (signal.SIGKILL - 1))
            if str(uid) in info.get("Uid", "").split()[:2] and not (alive_only and exiting):
                pids.append(int(entry))
    return pids


def sweep(uid, settle=5.0):
    """Kill every process of uid; return how many were alive and not on their way out after settle seconds.

    A PID namespace that just lost its init takes a moment to end (hundreds of processes on a loaded
    machine): those already exiting or with a SIGKILL pending are not counted as survivors.
    """
    if uid is None:
        return 0
    deadline = time.monotonic() + settle
    while processes_of(uid, alive_only=True) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = len(processes_of(uid, alive_only=True))
    cgroups.kill_until_gone(lambda: processes_of(uid), rounds=100)
    return survivors


def uid_of(box, slot):
    return FIRST_UID + slot if box.mode == "bwrap" else None


def lease_slots(count):
    """count job slots that no other grading run on this machine holds: ([slot], [lock file]).

    Each slot is an flock on its own file, held until the files close (at the latest when this process ends,
    even killed), so two `make grade` runs at once (two assignments, two checkouts) never give one sandbox uid
    to two probes, and neither sweeps the other's processes away. Slot s runs as uid FIRST_UID + s.
    """
    folder = LOCKS if os.access(LOCKS.parent, os.W_OK) else Path(tempfile.gettempdir()) / LOCKS.name
    folder.mkdir(parents=True, exist_ok=True)
    slots, files = [], []
    for slot in range(SLOTS):
        handle = open(folder / f"uid-{FIRST_UID + slot}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        slots.append(slot)
        files.append(handle)
        if len(slots) == count:
            return slots, files
    for handle in files:
        handle.close()
    raise SandboxUnavailable(f"all {SLOTS} sandbox uids from {FIRST_UID} are held by other grading runs")
