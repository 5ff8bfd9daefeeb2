"""Stage 3, the sandbox run: a submission's program -> what the probe recorded of the student's objects (ProbeRun).

Entry points: `choose_sandbox` and `prepare_runtime` (once per grading run), `lease_slots` (one uid per job at
once), then `run_submission` for each submission. The probe (grading/probe/, copied with grading/recipes.py into
the read-only runtime folder, runtime.py) runs the program as an unprivileged user in bubblewrap (sandbox.py,
cgroups.py), on a clock of the CPU time it used (cpuclock.py), watched by a supervisor that survives hangs and
crashes (supervise.py). Nothing here scores: the records go to grading.judge.
"""
from .runtime import prepare_runtime
from .sandbox import SandboxUnavailable, lease_slots
from .sandbox import choose as choose_sandbox
from .supervise import Job, run_probe

__all__ = ["SandboxUnavailable", "choose_sandbox", "lease_slots", "prepare_runtime", "run_submission"]


def run_submission(program, runtime, scratch, box, slot, max_idle):
    """The probe's run (a ProbeRun) of a submission's program.

    Args:
        program: the cells to run (grading.match); runtime: the folder prepare_runtime filled.
        scratch: the submission's own scratch folder (emptied and removed by the supervisor).
        box: the sandbox chosen for this run (choose_sandbox); slot: a leased uid slot (lease_slots).
        max_idle: wall-clock seconds the notebook may spend without using the CPU (course.toml's idle_seconds).
    """
    return run_probe(Job(program, scratch, runtime, box, slot, max_idle=max_idle))
