"""The grader's CPU clock: the CPU time a probe's sandbox used, read from outside it, and the machine's load.

A cell's limit counts CPU seconds (times the threads the probe may use), so a submission graded on a busy
machine gets the same allowance as on an idle one. The count comes from the sandbox's own cgroup
(cgroups.Group.cpu_seconds: the kernel's sum over every process that ever ran in it) where one can be made,
else from /proc/<pid>/stat of the sandbox's processes (ProcessMeter); either way the supervisor reads it, never
the probe, which runs student code. A wall-clock backstop of BACKSTOP times the limit stops cells that sleep or
hang; one it stops while the machine was oversubscribed is run again alone (SOLO) before it can score 0.
"""
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass

# The wall-clock backstop, as a multiple of a cell's limit. An honest cell uses at most about a third of its
# limit in CPU time (the reference's training cells: 11-107 s of 300), so it meets a backstop at 3x its limit
# only when it gets less than a ninth of a core (about 9 CPU-bound processes per core); the case the grader must
# keep fair, JOBS=2 on 2 cores beside two CPU hogs (2 per core), leaves a cell using its whole limit half a core,
# within the backstop. A cell that sleeps or hangs costs 3x its limit, and one stopped under load is re-run alone.
BACKSTOP = 3.0
TICK = os.sysconf("SC_CLK_TCK")
MAX_THREADS_READ = 256  # threads whose run-queue waits are read per sample (an honest probe has a handful)


def cores():
    """The CPUs this process may run on (a container's cpuset, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:
        return os.cpu_count() or 1


def load_per_core():
    """The 1-minute load average divided by the cores: above 1, runnable processes wait for a CPU."""
    return os.getloadavg()[0] / cores()


WAITS = os.path.exists("/proc/self/schedstat")  # the kernel says how long each thread waited for a CPU


def oversubscribed(spent):
    """Whether a cell stopped by the backstop was starved by the machine's load rather than asleep or hung.

    Where the kernel reports run-queue waits (schedstat): its threads waited for a CPU longer than they ran, so
    they got under half the CPU they were ready to use; a cell that slept on a busy machine was not starved, and
    re-running it alone would only double what a hang costs. Elsewhere: the load average per core was above 1.
    """
    if WAITS:
        return spent["waited"] > max(spent["cpu"], 1.0)
    return spent["load"] > 1.0


@dataclass
class Stat:
    """What /proc/<pid>/stat says of one process (times in seconds)."""

    start: int
    ppid: int
    uid: int
    own: float  # utime + stime: every thread of the process, dead ones included
    children: float  # cutime + cstime: its children that it reaped (and theirs)


def read_stat(pid):
    """The Stat of pid, or None when it is gone."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
        uid = os.stat(f"/proc/{pid}").st_uid
    except (OSError, ValueError):
        return None
    times = [int(value) / TICK for value in fields[11:15]]
    return Stat(int(fields[19]), int(fields[1]), uid, times[0] + times[1], times[2] + times[3])


def processes():
    """{pid: Stat} of every process on the machine."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := read_stat(int(entry))) is not None:
            found[int(entry)] = stat
    return found


def run_delay(tid):
    """Seconds the thread tid has waited in a run queue (/proc/<tid>/schedstat), or None."""
    try:
        return int(open(f"/proc/{tid}/schedstat").read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class Meter:
    """CPU seconds a sandbox used since the meter started, and seconds its threads waited for a CPU: both only grow."""

    def __init__(self):
        self.delays, self.waited = {}, 0.0

    def read(self):
        """(CPU seconds, seconds waiting in a run queue) since the meter started."""
        cpu = self.cpu()
        delays = {tid: delay for tid in self.threads()[:MAX_THREADS_READ] if (delay := run_delay(tid)) is not None}
        self.waited += sum(max(0.0, delay - self.delays.get(tid, 0.0)) for tid, delay in delays.items())
        self.delays = delays
        return cpu, self.waited


class GroupMeter(Meter):
    """The CPU time of a cgroup (cgroups.Group): exact, whatever its processes fork, kill or leave behind."""

    def __init__(self, group):
        super().__init__()
        self.group, self.offset = group, group.cpu_seconds() or 0.0

    def cpu(self):
        return max(0.0, (self.group.cpu_seconds() or 0.0) - self.offset)

    def threads(self):
        return self.group.threads()


class ProcessMeter(Meter):
    """The CPU time of a process tree and of a uid's processes, summed from /proc/<pid>/stat at each reading.

    The fallback where no cgroup can count it. A process that exits is counted in its parent's cutime and cstime
    once reaped (the sandbox's PID namespace reaps orphans in its own init, inside the tree); what a process
    already counted had handed to its parent is not counted twice. A process whose parent ignores SIGCHLD is
    reaped by nobody: its time after the last reading (0.2 s apart) is lost, which the wall-clock backstop bounds.
    """

    def __init__(self, root, uid=None):
        super().__init__()
        self.root, self.uid, self.seen, self.total = root, uid, {}, 0.0

    def members(self, everything):
        """{(pid, start): Stat} of the tree under root and of uid's processes."""
        children = {}
        for pid, stat in everything.items():
            children.setdefault(stat.ppid, []).append(pid)
        tree, stack = set(), [self.root] if self.root in everything else []
        while stack:
            pid = stack.pop()
            tree.add(pid)
            stack += [child for child in children.get(pid, []) if child not in tree]
        tree |= {pid for pid, stat in everything.items() if self.uid is not None and stat.uid == self.uid}
        return {(pid, everything[pid].start): everything[pid] for pid in tree}

    def cpu(self):
        now = self.members(processes())
        self.total += counted(self.seen, now)
        self.seen = now
        return self.total

    def threads(self):
        tids = []
        for pid, _ in self.seen:
            try:
                tids += [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
            except (OSError, ValueError):
                continue
        return tids


def counted(before, now):
    """CPU seconds used between two readings ({(pid, start): Stat}): new processes whole, known ones' growth.

    A process gone since `before` handed its time to the parent that reaped it; what was already counted of it
    (its last reading) is taken off the growth of the nearest ancestor still there.
    """
    pids = {key[0]: key for key in before}
    handed = {}
    for key, stat in before.items():
        if key in now:
            continue
        ancestor = stat.ppid
        while ancestor in pids and pids[ancestor] not in now:  # its parent went too: the grandparent reaped both
            ancestor = before[pids[ancestor]].ppid
        handed[ancestor] = handed.get(ancestor, 0.0) + stat.own + stat.children
    total = 0.0
    for key, stat in now.items():
        old = before.get(key)
        if old is None:
            total += stat.own + stat.children
        else:
            total += max(0.0, stat.own - old.own) + max(0.0, stat.children - old.children - handed.get(key[0], 0.0))
    return total


class Solo:
    """Probes of one grading run share the machine (shared); one re-run alone (alone) waits until no other probe
    runs, and no other starts until it ends."""

    def __init__(self):
        self.condition, self.running, self.alone_now, self.waiting = threading.Condition(), 0, False, 0

    @contextmanager
    def shared(self):
        with self.condition:
            self.condition.wait_for(lambda: not self.alone_now and not self.waiting)
            self.running += 1
        try:
            yield
        finally:
            with self.condition:
                self.running -= 1
                self.condition.notify_all()

    @contextmanager
    def alone(self):
        with self.condition:
            self.waiting += 1
            self.condition.wait_for(lambda: not self.alone_now and not self.running)
            self.waiting -= 1
            self.alone_now = True
        try:
            yield
        finally:
            with self.condition:
                self.alone_now = False
                self.condition.notify_all()


SOLO = Solo()  # one per grading process: grading/jobs.py runs its JOBS probes as threads of it
