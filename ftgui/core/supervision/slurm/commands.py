"""Running Slurm's client commands (sbatch, squeue, scontrol, scancel, sinfo) with one-line
errors. They read the cluster from `SLURM_CONF` (or Slurm's default file) like any client."""

from __future__ import annotations

import shutil
import subprocess

COMMAND_TIMEOUT_SECONDS = 30.0


class SlurmError(RuntimeError):
    """A Slurm command failed or is missing; the message is one line naming it."""


def run(argv: list[str], check: bool = True, timeout: float = COMMAND_TIMEOUT_SECONDS) -> str:
    """Run a Slurm client command and return its stdout. Raises `SlurmError` (one line:
    the command and Slurm's own message) when it is missing, times out, or (with `check`)
    exits non-zero."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, encoding="utf-8",
                              errors="replace", timeout=timeout)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]} is not on the PATH (install Slurm's client commands, "
                         "e.g. apt-get install slurm-client)") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(argv[:2])} did not answer in {timeout:.0f} s "
                         "(is slurmctld running?)") from None
    if check and done.returncode != 0:
        message = " ".join((done.stderr or done.stdout).split()) or f"exit {done.returncode}"
        raise SlurmError(f"{' '.join(argv[:2])}: {message}")
    return done.stdout


def have(program: str) -> bool:
    """Whether `program` is on the PATH."""
    return shutil.which(program) is not None
