"""What one stage of the grader hands the next: the sandbox's ProbeRun (read by judge) and the names a stopped cell's
error takes, so judge reads the probe's records without importing the sandbox that made them."""
from dataclasses import dataclass, field

MAX_FILE = 256 << 20  # bytes of a file the probe writes that the sandbox stage reads (a task's records)
# The error a cell stopped by the sandbox shows, by why it was stopped (the sandbox's supervisor writes them)
STOPPED_ERRORS = {"timeout": "CellTimeoutError", "backstop": "CellTimeoutError", "idle": "CellTimeoutError",
                  "died": "KernelDied", "disk": "DiskFull", "memory": "OutOfMemory"}


@dataclass
class ProbeRun:
    """What came back from a submission's probe."""

    cells: dict = field(default_factory=dict)  # program index -> output (stdout, stderr, error, ...)
    records: dict = field(default_factory=dict)  # task -> [record per case]
    notes: list = field(default_factory=list)  # for the report
    limits: list = field(default_factory=list)  # every limit reached (supervise.limit_reached): cell, kind, cpu, wall
    seconds: float = 0.0
    endings: list = field(default_factory=list)  # how each attempt ended ("done": torn down at the "done" event)
    oversized: dict = field(default_factory=dict)  # task -> bytes of a task file beyond MAX_FILE, left unread


@dataclass
class SubmissionRecord:
    """One submission as it passes the stages, each filling its part; publish reads it whole."""

    submission: object  # collect's Submission
    cut: str = ""  # match: why the notebook was cut to the bounds of an honest one ('' when it was not)
    program: list = field(default_factory=list)  # match: the cells the probe runs ([ProgramCell])
    deviations: list = field(default_factory=list)  # match: how the notebook differs from the release
    run: ProbeRun = field(default_factory=ProbeRun)  # the sandbox: what the probe recorded
    result: object = None  # judge: the submission's Result (verdicts, notes for the instructor)
    error: str = ""  # why it could not be run and judged ('' when it was)
    caveats: list = field(default_factory=list)  # the feedback's notes on the grader's own run (its stand-ins),
    # the same for every submission: not in the report

    @property
    def student_notes(self):
        """What the student's feedback says about the run: the cut, the deviations, the probe's notes; or the error."""
        if self.error:
            return [self.error]
        return ([self.cut] if self.cut else []) + self.deviations + self.run.notes
