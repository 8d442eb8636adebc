"""One owner per run directory: the supervisor that runs it holds `RUN/.lock`.

An exclusive `flock` on `RUN/.lock`, with the owner's pid written in the file. The kernel drops
the lock when its holder ends, killed or not, so a lock never outlives its supervisor. Any
process can ask, without taking anything, whether someone else holds it (the Runs view asks
this of every run it lists, every second).

Why `fcntl.flock` and not the `filelock` library (tried: filelock 4.3.1, and 3.x's source):
- filelock has no "is it held by someone else" query: the only way to know is to acquire the
  lock oneself, exclusively, which needs write access, creates `.lock` in every run listed, and
  makes a supervisor starting at that moment fail as if the run were busy. Here a shared,
  read-only probe answers it.
- "in use by pid N": a native filelock knows no holder (its `pid` is that of its soft-lock
  fallback only). Writing our pid needs its `on_acquired` hook (3.30+); in 3.x before that, a
  failed acquire opens the file with `O_TRUNC` and erases the holder's pid.
- On a file system without `flock`, filelock 4 silently falls back to a marker-file lock,
  which a `flock` probe (or an older ftgui) would not see.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = ".lock"


class RunBusyError(RuntimeError):
    """Another live supervisor owns this run directory."""


class RunLock:
    """The lock of one run directory, as its supervisor holds it.

    `acquire()` takes it without waiting (creating `RUN/` if needed) or raises `RunBusyError`
    naming the holder's pid; `release()` gives it back; both may be called again harmlessly.
    """

    def __init__(self, run_dir: str | os.PathLike):
        self.run_dir = Path(run_dir)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock and write this process' pid into it; raises `RunBusyError`."""
        if self._fd is not None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise busy_error(self.run_dir) from None
        os.ftruncate(fd, 0)  # only once the lock is ours: the pid in the file is the holder's
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Give the lock back (closing the file drops the `flock`)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def is_busy_elsewhere(self) -> bool:
        """True when another holder (another object or process) has the lock."""
        return self._fd is None and is_busy(self.run_dir)


def is_busy(run_dir: str | os.PathLike) -> bool:
    """True when some process holds `RUN/.lock` (False when there is no lock file).

    A shared, non-blocking probe: it never creates or writes anything. A holder in this same
    process that is not a `RunLock` of this call counts as busy too.
    """
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def owner_pid(run_dir: str | os.PathLike) -> int | None:
    """The pid the lock's holder wrote into `RUN/.lock`, or None when unreadable."""
    try:
        text = (Path(run_dir) / LOCK_FILE).read_text(encoding="utf-8", errors="replace")
        text = text[:32].strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def busy_error(run_dir: Path) -> RunBusyError:
    """The error for a run directory locked by another supervisor (naming its pid)."""
    owner = owner_pid(run_dir)
    return RunBusyError(
        f"{run_dir} is in use by pid {owner or 'another process'}; open it to watch, or stop "
        "that run"
    )
