"""The checkpoint writer thread and its error (no TensorFlow here): one job at a time off the
step path, a failure re-raised on the training thread."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path


class CheckpointWriteError(RuntimeError):
    """A checkpoint could not be written; the message names it and the system's reason."""


def write_error(prefix: Path, exc: Exception) -> CheckpointWriteError:
    """A one-line error for a failed write of checkpoint `prefix`: TensorFlow's traced-write
    errors start with "Graph execution error:" and give the reason (e.g. `…_temp; Operation
    not permitted`) only in a later line, which is the one kept."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    reason = next((line for line in reversed(lines) if str(prefix.parent) in line),
                  lines[-1] if lines else type(exc).__name__)
    return CheckpointWriteError(f"checkpoint {prefix.name} was not written: {reason}")


class OneWriter:
    """Runs one job at a time on a worker thread (concurrent.futures, one worker).

    `submit` first waits for the job in flight; `wait` blocks until it is done and re-raises
    its exception in the caller's thread, so a failed save stops training instead of passing
    unnoticed.
    """

    def __init__(self, name: str = "checkpoint"):
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)
        self._future: concurrent.futures.Future | None = None

    def submit(self, job, *args) -> None:
        """Run `job(*args)` on the thread, after the job in flight (whose error it raises)."""
        self.wait()
        self._future = self._pool.submit(job, *args)

    def wait(self) -> None:
        """Block until the job in flight is done; re-raise its exception here."""
        future, self._future = self._future, None
        if future is not None:
            future.result()

    def check(self) -> None:
        """Re-raise the exception of a job that has already failed; never blocks (call it
        every step, so that a failed save stops training at once, not at the next save)."""
        if self._future is not None and self._future.done():
            self.wait()

    def close(self) -> None:
        """Wait for the job in flight (raising its error), then stop the thread."""
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=False)
