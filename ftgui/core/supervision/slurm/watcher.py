"""Watching a Slurm job: its state (with the pending reason), node list, restart count, exit,
and its steps (one per task, named after it), from `scontrol show job -o` and `squeue -s`;
when slurmctld has forgotten a finished job, from the job completion file
(`JobCompType=jobcomp/filetxt`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ftgui.core.supervision.slurm import commands
from ftgui.core.supervision.slurm.commands import SlurmError

# Job states in which the job still holds (or waits for) its allocation.
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
          "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD"}
_FIELD = re.compile(r"(\S+?)=(\S*)")


@dataclass(frozen=True)
class JobInfo:
    """One job as Slurm reports it: `job` id, `state` (PENDING, RUNNING, COMPLETED, FAILED,
    CANCELLED, …), `reason` (why it is pending or ended: `BeginTime`, `Resources`, `None`),
    `nodes` (its node list, '' while pending), `restarts` (requeues so far), `exit_code` and
    `exit_signal` (of the batch script: `ExitCode=42:0`), `held` (priority 0: `scontrol hold`)."""

    job: str
    state: str
    reason: str = ""
    nodes: str = ""
    restarts: int = 0
    exit_code: int = 0
    exit_signal: int = 0
    held: bool = False

    @property
    def active(self) -> bool:
        """True while the job runs or waits to run."""
        return self.state in ACTIVE

    def line(self) -> str:
        """How a person reads it: `job 17 PENDING (BeginTime)`, `job 17 RUNNING on localhost,
        restart 1`, `job 17 FAILED, exit 1`."""
        text = f"job {self.job} {self.state}"
        if self.state == "PENDING" and self.reason and self.reason != "None":
            text += f" ({self.reason})"
        elif self.nodes and self.nodes != "(null)" and self.active:
            text += f" on {self.nodes}"
        if self.restarts:
            text += f", restart {self.restarts}"
        if not self.active and (self.exit_code or self.exit_signal):
            text += (f", signal {self.exit_signal}" if self.exit_signal
                     else f", exit {self.exit_code}")
        return text


def parse_fields(line: str) -> dict[str, str]:
    """`Key=Value Key=Value …` (one `scontrol show -o` or jobcomp line) as a dict."""
    return dict(_FIELD.findall(line))


def parse_job(text: str) -> JobInfo | None:
    """The job of `scontrol show job -o JOB`'s output (or a jobcomp line), None without one."""
    fields = parse_fields(text.strip().splitlines()[0] if text.strip() else "")
    if "JobId" not in fields or "JobState" not in fields:
        return None
    code, _, sig = fields.get("ExitCode", "0:0").partition(":")
    return JobInfo(
        job=fields["JobId"], state=fields["JobState"], reason=fields.get("Reason", ""),
        nodes=fields.get("NodeList", ""), restarts=int(fields.get("Restarts", 0) or 0),
        exit_code=int(code or 0), exit_signal=int(sig or 0),
        held=fields.get("Priority") == "0")


def parse_steps(text: str) -> dict[str, str]:
    """Step name -> step id (`17.3`) from `squeue -h -s -o '%i|%j'` (the batch and extern
    steps left out; a name started twice keeps its newest step)."""
    steps = {}
    for line in text.splitlines():
        step, _, name = line.strip().partition("|")
        if step and name and not step.endswith((".batch", ".extern")):
            steps[name] = step
    return steps


def job_info(job: str) -> JobInfo | None:
    """The job now (`scontrol show job -o`), or from the job completion file once slurmctld
    has forgotten it; None when neither knows it. Raises `SlurmError` when Slurm cannot be
    asked."""
    try:
        info = parse_job(commands.run(["scontrol", "show", "job", "-o", job]))
    except SlurmError as exc:
        if "Invalid job id" not in str(exc):
            raise
        info = None
    return info or completed(job)


def completed(job: str) -> JobInfo | None:
    """The job's last end in the job completion file (`JobCompLoc` of `scontrol show
    config`), or None."""
    config = commands.run(["scontrol", "show", "config"])
    match = re.search(r"^JobCompLoc\s*=\s*(\S+)", config, re.MULTILINE)
    if not match:
        return None
    try:
        lines = Path(match.group(1)).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    ends = [parse_job(line) for line in lines if f"JobId={job} " in line]
    return ends[-1] if ends else None


def steps(job: str) -> dict[str, str]:
    """The job's running steps, name -> step id. Raises `SlurmError`."""
    return parse_steps(commands.run(["squeue", "-h", "-s", "-j", job, "-o", "%i|%j"],
                                    check=False))
