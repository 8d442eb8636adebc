"""Following a growing file by byte offset: each read returns the complete lines appended since
the last one. Used for `RUN/events.jsonl` (`events.EventReader`) and the trainers' logs
(`logs.LogTail`)."""

from __future__ import annotations

import os
from pathlib import Path


class Tail:
    """The complete new lines of a file that others append to.

    A last line without its newline (a writer mid-write, or killed mid-write) is held back until
    it is complete. A missing file reads as empty until it appears.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._read = 0  # bytes of the file read so far, the held-back line included
        self._partial = b""

    @property
    def bytes_read(self) -> int:
        """How far into the file reading has got (bytes), the held-back torn line included."""
        return self._read

    def seek(self, offset: int) -> None:
        """Go on reading from byte `offset`: the end of lines already read another way."""
        self._read, self._partial = offset, b""

    def read_lines(self, max_bytes: int) -> list[bytes]:
        """Read at most `max_bytes` more; return the lines it completes, without their
        newlines (possibly none, while one long line is still being read)."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._read)
                chunk = handle.read(max_bytes)
        except FileNotFoundError:
            return []
        if not chunk:
            return []
        self._read += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        return lines
