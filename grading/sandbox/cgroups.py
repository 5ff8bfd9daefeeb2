"""A memory cap and a CPU count per probe: children of this process's own cgroups (v1 or v2).

Found from /proc/self/cgroup and /proc/self/mountinfo; used only when a child group can actually be
created (root, a writable hierarchy; for a v2 memory cap, the memory controller delegated to this group).
When the cap is reached the kernel's OOM killer ends a process of that group only; the group's
own counter says so afterwards, so the grader can name the cause instead of "the process died".
The CPU count is the kernel's own sum over every process that ever ran in the group (v1 cpuacct.usage,
v2 cpu.stat usage_usec): a process the student forks, kills or orphans is counted all the same.
"""
import os
import signal
import time
from pathlib import Path


def own_group(controller="memory"):
    """(version, folder of this process's cgroup for controller) or (None, None) when there is none to use.

    controller: "memory" (a v2 group must have it delegated) or "cpuacct" (a v2 group's cpu.stat counts
    CPU time whether or not the cpu controller is enabled).
    """
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None, None
    paths = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        paths["v2" if controllers == "" else ",".join(sorted(controllers.split(",")))] = path
    key = next((k for k in paths if k != "v2" and controller in k.split(",")), None)
    for mount in mounts:
        fields = mount.split()
        fstype, options = fields[fields.index("-") + 1], fields[-1].split(",")
        root, point = fields[3], fields[4]
        if fstype == "cgroup" and controller in options and key:
            return "v1", Path(point) / os.path.relpath(paths[key], root)
        if fstype == "cgroup2" and "v2" in paths and not key:
            folder = Path(point) / os.path.relpath(paths["v2"], root)
            if controller == "cpuacct":
                return "v2", folder
            try:  # v2 lets a group with processes of its own cap children only when memory was delegated to it
                if "memory" in (folder / "cgroup.subtree_control").read_text().split():
                    return "v2", folder
            except OSError:
                pass
    return None, None


class Group:
    """A child cgroup for one probe slot: create, let processes join, list them, read their CPU time, remove."""

    def __init__(self, version, folder):
        self.version, self.folder = version, folder
        folder.mkdir()

    @property
    def procs(self):
        """The file a process writes its pid to in order to join the group."""
        return self.folder / "cgroup.procs"

    def members(self):
        try:
            return [int(pid) for pid in self.procs.read_text().split()]
        except (OSError, ValueError):
            return []

    def threads(self):
        """Thread ids of the group's processes (for their run-queue waits)."""
        try:
            return [int(tid) for tid in (self.folder / ("tasks" if self.version == "v1" else "cgroup.threads"))
                    .read_text().split()]
        except (OSError, ValueError):
            return []

    def cpu_seconds(self):
        """CPU seconds the group's processes used, dead ones included (None when the group does not count them)."""
        try:
            if (self.folder / "cpuacct.usage").exists():
                return int((self.folder / "cpuacct.usage").read_text()) / 1e9
            for line in (self.folder / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            pass
        return None

    def remove(self):
        """Kill whatever is left in the group and remove it (a group with processes cannot be removed)."""
        kill_until_gone(self.members, rounds=50)
        try:
            self.folder.rmdir()
        except OSError:
            pass


class MemoryCap(Group):
    """A memory cgroup for one probe slot: a Group with a limit, whose OOM kills can be read."""

    def __init__(self, version, folder, limit):
        super().__init__(version, folder)
        self.limit = limit
        if version == "v1":
            (folder / "memory.limit_in_bytes").write_text(str(limit))
            if (folder / "memory.memsw.limit_in_bytes").exists():
                (folder / "memory.memsw.limit_in_bytes").write_text(str(limit))  # swap does not raise the cap
        else:
            (folder / "memory.max").write_text(str(limit))
            if (folder / "memory.swap.max").exists():
                (folder / "memory.swap.max").write_text("0")

    def oom_kills(self):
        """How many processes the kernel killed for reaching the cap so far."""
        name = "memory.oom_control" if self.version == "v1" else "memory.events"
        try:
            for line in (self.folder / name).read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
            return int((self.folder / "memory.failcnt").read_text()) if self.version == "v1" else 0
        except (OSError, ValueError):
            return 0


def try_cap(name, limit):
    """A MemoryCap named name under this process's memory cgroup, or (None, why not)."""
    return _try("memory", name, lambda version, folder: MemoryCap(version, folder, limit))


def try_account(name):
    """A Group named name under this process's cpuacct cgroup (v1) or its v2 group, to count CPU; or (None, why)."""
    return _try("cpuacct", name, Group)


def _try(controller, name, make):
    version, parent = own_group(controller)
    if version is None:
        return None, f"no {controller} cgroup controller is mounted for this process"
    try:
        folder = parent / name
        if folder.exists():
            _empty_and_remove(folder)
        return make(version, folder), ""
    except OSError as error:
        return None, f"cannot create a {controller} cgroup under {parent} ({error.strerror})"


def _empty_and_remove(folder):
    """A leftover group of an earlier run that crashed: kill its processes and remove it."""
    kill_pids(int(pid) for pid in (folder / "cgroup.procs").read_text().split())
    time.sleep(0.2)
    folder.rmdir()


def kill_until_gone(list_pids, rounds):
    """SIGKILL every pid list_pids() returns, again every 0.1 s (forks race the kill), until none or rounds pass."""
    for _ in range(rounds):
        pids = list_pids()
        if not pids:
            return
        kill_pids(pids)
        time.sleep(0.1)


def kill_pids(pids):
    """SIGKILL each pid; one that is already gone is no error."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
