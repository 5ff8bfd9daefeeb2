"""A single-node Slurm for the tests, from Debian's packages (slurmctld, slurmd, munge, slurm-client).

start(folder) writes a slurm.conf of its own under folder (free ports, its own state and spool), starts munged if no
munge daemon answers, then slurmctld and slurmd as root, and waits until the node is idle; stop() ends them. Clients
find the cluster through the SLURM_CONF of env().
"""
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "scancel")


def missing():
    """Why this machine cannot run the test cluster ('' if it can)."""
    if os.geteuid() != 0:
        return "needs root, to start slurmctld and slurmd"
    absent = [name for name in DAEMONS if not shutil.which(name) and not Path(f"/usr/sbin/{name}").is_file()]
    return f"needs Slurm's Debian packages (missing {', '.join(absent)}: apt-get install slurmctld slurmd munge " \
           "slurm-client; .ci/run installs them)" if absent else ""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def memory_mib():
    """What the node offers jobs: 90% of this machine's memory, at most 16,000 MiB (slurmd drains a node that
    has less than its configured RealMemory)."""
    total_kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:"))
    return min(16000, int(total_kib / 1024 * 0.9))


def config(folder, cpus):
    """slurm.conf for one node of this machine, everything under folder."""
    host = socket.gethostname().split(".")[0]
    for name in ("state", "spool"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    lines = [f"ClusterName=course{os.getpid()}", f"SlurmctldHost={host}", "SlurmUser=root", "SlurmdUser=root",
             f"StateSaveLocation={folder}/state", f"SlurmdSpoolDir={folder}/spool",
             f"SlurmctldPidFile={folder}/slurmctld.pid", f"SlurmdPidFile={folder}/slurmd.pid",
             f"SlurmctldLogFile={folder}/slurmctld.log", f"SlurmdLogFile={folder}/slurmd.log",
             f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}", "ProctrackType=proctrack/linuxproc",
             "TaskPlugin=task/none", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory",
             f"NodeName={host} CPUs={cpus} RealMemory={memory_mib()} State=UNKNOWN",
             f"PartitionName=course Nodes={host} Default=YES MaxTime=INFINITE State=UP", "AuthType=auth/munge",
             "MpiDefault=none", "ReturnToService=2", "JobAcctGatherType=jobacct_gather/none",
             "AccountingStorageType=accounting_storage/none", "SchedulerParameters=sched_interval=1"]
    (folder / "slurm.conf").write_text("\n".join(lines) + "\n")
    return folder / "slurm.conf"


def env(folder):
    return dict(os.environ, SLURM_CONF=str(folder / "slurm.conf"))


MUNGE_PID = Path("/run/munge/munged.pid")


def start_munge(folder):
    """munged, unless one answers already; folder/munged.started says this test started it (stop() ends it)."""
    if subprocess.run("munge -n | unmunge", shell=True, capture_output=True).returncode == 0:
        return
    MUNGE_PID.parent.mkdir(parents=True, exist_ok=True)
    shutil.chown(MUNGE_PID.parent, "munge", "munge")
    subprocess.run(["su", "-s", "/bin/sh", "munge", "-c", "/usr/sbin/munged"], check=True)
    (folder / "munged.started").touch()


def start(folder, cpus=2, timeout=60):
    """Start the cluster; returns its environment for clients."""
    start_munge(folder)
    conf = config(folder, cpus)
    for daemon in ("slurmctld", "slurmd"):
        subprocess.run([f"/usr/sbin/{daemon}", "-f", str(conf)], check=True, env=env(folder))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env=env(folder))
        if state.stdout.strip() == "idle":
            return env(folder)
        time.sleep(0.5)
    raise RuntimeError(f"the test cluster did not come up: {(folder / 'slurmctld.log').read_text()[-2000:]}")


def stop(folder):
    """Cancel every job and end both daemons, and munged if start() started it."""
    subprocess.run(["scancel", "--full", "-u", "root"], capture_output=True, env=env(folder))
    started_munge = MUNGE_PID if (folder / "munged.started").is_file() else None
    for pid_file in (folder / "slurmd.pid", folder / "slurmctld.pid", started_munge):
        if pid_file is not None and pid_file.is_file():
            try:
                os.kill(int(pid_file.read_text()), 15)
            except (ProcessLookupError, ValueError):
                pass


def wait_for(env, jobs, timeout):
    """Wait until none of jobs (ids) is in the queue."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        queued = subprocess.run(["squeue", "-h", "-j", ",".join(jobs)], capture_output=True, text=True, env=env)
        if not queued.stdout.strip():
            return
        time.sleep(0.5)
    raise TimeoutError(f"jobs {jobs} still queued after {timeout} s")


def running(env, task, timeout):
    """Wait until array task '<job>_<index>' runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = subprocess.run(["squeue", "-h", "-j", task, "-o", "%T"], capture_output=True, text=True, env=env)
        if state.stdout.strip() == "RUNNING":
            return
        time.sleep(0.2)
    raise TimeoutError(f"{task} did not start within {timeout} s")
