"""Retention of a trainer's newest checkpoints, cheap enough to run after every save.

`checkpoints.keep_newest` reads and checks every checkpoint's metadata: ~1.4 ms of the writer
thread's CPU per save (benchmarks/trainer_timed.py), a third of what the bookkeeping of a
background save costs. A trainer knows what it wrote, so after one such full pass `Retention`
only lists the folder (names, sizes and modification times, one `os.scandir`) and compares the
listing with the files of the checkpoints it kept plus the one just written. When they are
equal, no file has been touched since the full pass judged it, which could only reach the same
verdict, and the oldest are deleted from memory's list. Anything else in the folder - a file
rewritten (even at the same size), resized or removed, a damage marker, a leftover, a
checkpoint this process did not keep, one newer than the save - sends it back to the full pass.
"""

from __future__ import annotations

import os
from pathlib import Path

from ftgui.core.checkpoints import listing as checkpoints
from ftgui.core.checkpoints.listing import CheckpointInfo
from ftgui.core.checkpoints.state_file import STATE_FILE  # rewritten after every save


class Retention:
    """Keeps the `keep` newest valid checkpoints of `directory` (a run's `checkpoints/`), as
    `checkpoints.keep_newest` does, for one process that writes them one after another."""

    def __init__(self, directory: Path, keep: int):
        self.directory, self.keep = directory, keep
        self._kept: list[CheckpointInfo] | None = None  # None: the next save does a full pass
        # kept step -> its file names -> (bytes, modification time in ns), as last listed
        self._files: dict[int, dict[str, tuple[int, int]]] = {}

    def after_save(self, step: int, files: dict[str, int], time: float) -> list[CheckpointInfo]:
        """Apply retention after checkpoint `step` was written and made valid; `files`: every
        file of it (TensorFlow files and metadata, name -> bytes); `time`: its metadata's time
        (Unix seconds). Deletes the checkpoints beyond the `keep` newest (all of their files)
        and returns the kept valid ones, oldest first, like `checkpoints.keep_newest`."""
        listing = self._listing()
        expected = {name: seen for kept in self._files.values() for name, seen in kept.items()}
        others = {name: seen for name, seen in listing.items() if name not in files}
        written = all(listing.get(name, (None,))[0] == size for name, size in files.items())
        if self._kept is None or self.keep <= 0 or not written or others != expected:
            return self._full_pass(step)
        new = CheckpointInfo(step=step, prefix=self.directory / f"{checkpoints.PREFIX}-{step}",
                             valid=True, time=time,
                             size=sum(files.values()) - _meta_bytes(step, files))
        kept = [*self._kept, new]
        self._files[step] = {name: listing[name] for name in files}
        for old in kept[:-self.keep]:
            for name in self._files.pop(old.step):
                (self.directory / name).unlink(missing_ok=True)
        self._kept = kept[-self.keep:]
        return list(self._kept)

    def _full_pass(self, step: int) -> list[CheckpointInfo]:
        kept = checkpoints.keep_newest(self.directory, self.keep, step)
        listing = self._listing()
        steps = {info.step for info in kept}
        self._files = {s: {} for s in steps}
        for name, seen in listing.items():
            owner = checkpoints.file_step(name)
            if owner in steps:
                self._files[owner][name] = seen
        self._kept = kept
        return kept

    def _listing(self) -> dict[str, tuple[int, int]]:
        """Every entry of the folder but the state file: name -> (bytes, modification time in
        ns); a folder's bytes are -1."""
        found = {}
        with os.scandir(self.directory) as entries:
            for entry in entries:
                if entry.name != STATE_FILE:
                    st = entry.stat(follow_symlinks=False)
                    size = st.st_size if entry.is_file(follow_symlinks=False) else -1
                    found[entry.name] = (size, st.st_mtime_ns)
        return found


def _meta_bytes(step: int, files: dict[str, int]) -> int:
    return files.get(checkpoints.meta_path(Path(f"{checkpoints.PREFIX}-{step}")).name, 0)
