"""A run folder's identity while a run trains in it: the folder that was there at the start
(its device and inode), so that a folder removed (`rm -rf RUN`), moved away or replaced by
another one under a running trainer stops the run with one line, and nothing is written into
a folder re-created at the same path.

Paths alone cannot tell: after `rm -rf RUN`, a `mkdir(parents=True)` before a write, or
TensorFlow's own save, silently makes a new, empty `RUN` and the run goes on there.
"""

from __future__ import annotations

import os
from pathlib import Path


class RunFolderGone(OSError):
    """The run folder was removed, moved away or replaced since the run started; the message
    is one line naming the folder."""


def identity(path: str | os.PathLike) -> tuple[int, int]:
    """(device, inode) of the folder `path`. Raises FileNotFoundError (or another OSError)."""
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino


class RunFolder:
    """The run folder `run_dir` as it is now (it must exist). `check()` raises RunFolderGone
    once the folder at that path is no longer this one; one `stat` (microseconds)."""

    def __init__(self, run_dir: str | os.PathLike):
        self.path = Path(run_dir).absolute()
        self.identity = identity(self.path)

    def problem(self) -> str:
        """'' while the folder is the one the run started in, else the one-line reason."""
        try:
            now = identity(self.path)
        except FileNotFoundError:
            return (f"run folder {self.path} was removed or moved away while the run trained; "
                    "training stopped and nothing more is written there")
        except OSError as exc:
            return (f"run folder {self.path} cannot be read ({exc.strerror or exc}); "
                    "training stopped")
        if now != self.identity:
            return (f"run folder {self.path} was replaced by another folder while the run "
                    "trained; training stopped and nothing is written into the new one")
        return ""

    def check(self) -> None:
        """Raise RunFolderGone when `problem()` has one."""
        problem = self.problem()
        if problem:
            raise RunFolderGone(problem)


def check_writer(events) -> None:
    """Raise RunFolderGone when `events` (an `EventWriter`) guards a run folder that is gone:
    called before a checkpoint write, which (TensorFlow's save) would re-create the folder."""
    folder = getattr(events, "folder", None)
    if folder is not None:
        folder.check()
